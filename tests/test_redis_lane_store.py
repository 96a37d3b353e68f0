"""The shared lanes' store on Redis (`lanemq._core.RedisLaneStore`), what is Redis-specific:
a store, and `QueueManager`s sharing their lanes through it, on a real 3-master Redis Cluster
and behind Sentinel; the blocking `wait` on a connection of its own (the store's other calls
go on meanwhile; a cancelled one lets go of it); passwords kept out of errors and reprs;
refusals that change nothing; the dispatch over several processes, as the Lua script makes it
(priority and boost, owed commands, turns, rate tokens, the global cap's reservations,
recovery of an expired lease); and OS processes sharing one store. The contract every store
shares is tests/test_lane_store_contract.py's."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from lanemq import (
    BackendAuthenticationError,
    BackendConnectionError,
    ConfigError,
    LaneConfig,
    QueueManager,
)
from lanemq._core import RedisLaneStore
from lanemq.lanes._store import LaneSpec
from redis_sentinel_support import RedisSentinelSet
from redis_support import RedisServer, Resp, address, free_port
from support import WAIT, WAIT_FOR_GO, Spawn, eventually, start_together, wait_until

CONFIG = '{"lanes": "as the test wrote them"}'


def lane(
    lane_id: str,
    priority: int = 0,
    max_concurrency: int = 1,
    min_concurrency: int = 0,
    rate: tuple[int, int] | None = None,
    boost: tuple[int, list[tuple[float, int]]] | None = None,
) -> LaneSpec:
    permits, per_ms = rate if rate else (None, None)
    deadline, steps = boost if boost else (None, [])
    return (lane_id, priority, min_concurrency, max_concurrency, permits, per_ms, deadline, steps)


def store_name() -> str:
    """A store name of the test's own (the session's redis-server is shared)."""
    return f"lanes-{uuid.uuid4().hex[:8]}"


@contextlib.asynccontextmanager
async def opened(url: str, name: str | None = None) -> AsyncIterator[RedisLaneStore]:
    store = await RedisLaneStore.open(url, name or store_name())
    try:
        yield store
    finally:
        await store.clear_all()
        store.close()


@pytest.fixture
async def store(redis_url: str) -> AsyncIterator[RedisLaneStore]:
    async with opened(redis_url) as opened_store:
        yield opened_store


@pytest.fixture(scope="module")
def sentinel_set(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisSentinelSet]:
    found = RedisSentinelSet(tmp_path_factory.mktemp("lanes-sentinel"))
    found.start()
    try:
        yield found
    finally:
        found.stop()


async def round_trip(store: RedisLaneStore) -> None:
    """Setup, join, enqueue, claim, complete, the outcome and the wake it sent."""
    assert await store.setup(CONFIG, [lane("email")], None) == CONFIG
    await store.join("worker", ["send"], 60_000)
    await store.join("producer", [], 60_000)
    await store.wait("producer", 0)  # (no token yet: returns at its timeout, at once)
    command = await store.enqueue("producer", 0, "send", None, '{"to": "a@b"}')
    claimed, timed = await store.claim("worker", 4)
    assert claimed == [(command, 0, "send", '{"to": "a@b"}', 1, "producer")]
    assert timed is None
    assert await store.complete("worker", command, '"sent"')
    await asyncio.wait_for(store.wait("producer", 60_000), WAIT)
    assert await store.outcomes("producer") == [(command, True, '"sent"')]
    assert await store.stats() == [(0, 0, 0)]


async def test_a_store_on_a_three_master_cluster_works(redis_cluster3_url: str) -> None:
    async with opened(redis_cluster3_url) as store:
        await round_trip(store)


async def test_a_store_behind_sentinel_works(sentinel_set: RedisSentinelSet) -> None:
    async with opened(sentinel_set.url) as store:
        await round_trip(store)


async def managers_share_lanes(url: str) -> None:
    """Two `QueueManager`s on ``url`` sharing one global slot: one runs "double", the other
    submits it; a control command submitted behind work commands starts before them."""
    lanes = [LaneConfig("control", 0, 0, 1), LaneConfig("work", 5, 0, 1)]
    name = store_name()
    runner = QueueManager(lanes, max_concurrency=1, backend=url, name=name)
    submitter = QueueManager(lanes, max_concurrency=1, backend=url, name=name)
    started: list[int] = []
    gate = asyncio.Event()

    async def double(payload: int) -> int:
        started.append(payload)
        if payload == 0:
            await gate.wait()  # (holds the one slot while the others are submitted)
        return payload * 2

    async def all_submitted() -> bool:
        # (a manager enqueues what it was given in a task of its own)
        return await store.stats() == [(1, 0, 0), (2, 1, 0)]

    runner.register("double", double)
    async with opened(url, name) as store:  # (cleared once the managers closed)
        async with runner, submitter:
            handles = [await submitter.submit_named("work", "double", 0)]
            await wait_until(lambda: started == [0], "the first work command's start")
            handles += [await submitter.submit_named("work", "double", n) for n in (1, 2)]
            handles.append(await submitter.submit_named("control", "double", -1))
            await eventually(all_submitted, "the commands in the store")
            gate.set()
            assert await asyncio.wait_for(asyncio.gather(*handles), WAIT) == [0, 2, 4, -2]
            assert started == [0, -1, 1, 2]
            assert await store.stats() == [(0, 0, 0), (0, 0, 0)]


async def test_queue_managers_share_lanes_on_a_three_master_cluster(
    redis_cluster3_url: str,
) -> None:
    await managers_share_lanes(redis_cluster3_url)


async def test_queue_managers_share_lanes_behind_sentinel(sentinel_set: RedisSentinelSet) -> None:
    await managers_share_lanes(sentinel_set.url)


async def test_the_blocking_wait_does_not_hold_up_the_stores_other_calls(
    store: RedisLaneStore,
) -> None:
    await store.setup(CONFIG, [lane("email")], None)
    await store.join("sleeper", ["send"], 60_000)
    await store.join("busy", [], 60_000)
    await store.wait("sleeper", 0)  # (its token of the join, if any, taken)
    waiting = asyncio.ensure_future(store.wait("sleeper", 60_000))
    await asyncio.sleep(0)  # (the BLPOP is sent)
    for _ in range(20):
        assert await store.claim("busy", 1) == ([], None)
        assert await store.stats() == [(0, 0, 0)]
        assert await store.outcomes("busy") == []
    assert not waiting.done()
    await store.enqueue("busy", 0, "send", None, "{}")  # wakes every live process
    await asyncio.wait_for(waiting, WAIT)


async def test_a_cancelled_wait_lets_go_of_its_connection(
    store: RedisLaneStore, redis_url: str
) -> None:
    host, port = address(redis_url)

    async def blocked_clients_are(count: int) -> bool:
        with Resp(host, port) as raw:
            info = raw.command("INFO", "clients")
        assert isinstance(info, str)
        return int(info.split("blocked_clients:")[1].split()[0]) == count

    await store.setup(CONFIG, [lane("email")], None)
    await store.join("sleeper", ["send"], 60_000)
    await store.wait("sleeper", 0)  # (its token of the join, if any, taken)
    waiting = asyncio.ensure_future(store.wait("sleeper", 600_000))
    await eventually(lambda: blocked_clients_are(1), "the wait's BLPOP")
    waiting.cancel()
    # It stops at the end of its current BLPOP (a second at most), not after ten minutes.
    await eventually(lambda: blocked_clients_are(0), "the cancelled wait's end")


async def test_a_password_never_shows_in_errors_or_reprs(tmp_path: Path) -> None:
    server = RedisServer(tmp_path / "guarded")
    server.start()
    try:
        with Resp("127.0.0.1", server.port) as raw:
            raw.command("CONFIG", "SET", "requirepass", "s3cret-pw")
        good = f"redis://:s3cret-pw@127.0.0.1:{server.port}/0"
        store = await RedisLaneStore.open(good, "guarded")
        assert "s3cret-pw" not in repr(store) and "***" in repr(store)
        assert store.url == f"redis://:***@127.0.0.1:{server.port}/0"
        assert store.name == "guarded"
        store.close()
        with pytest.raises(BackendAuthenticationError) as refused:
            await RedisLaneStore.open(f"redis://:wr0ng-pw@127.0.0.1:{server.port}/0", "g")
        assert "wr0ng-pw" not in str(refused.value)
    finally:
        server.stop()
    with pytest.raises(BackendConnectionError) as unreachable:
        await RedisLaneStore.open(f"redis://:s3cret-pw@127.0.0.1:{free_port()}/0", "g")
    assert "s3cret-pw" not in str(unreachable.value)
    with pytest.raises(ConfigError) as unparsable:
        await RedisLaneStore.open("redis+cluster://:s3cret-pw@", "g")
    assert "s3cret-pw" not in str(unparsable.value)


async def test_bad_input_is_refused_naming_the_value_and_changes_nothing(
    store: RedisLaneStore, redis_url: str
) -> None:
    with pytest.raises(ConfigError, match=r"min_concurrency \(3\)"):
        await store.setup(CONFIG, [lane("email", min_concurrency=3)], None)
    with pytest.raises(ConfigError, match="rate"):
        await store.setup(CONFIG, [("email", 0, 0, 1, 5, None, None, [])], None)
    with pytest.raises(ConfigError, match="global_max: 0"):
        await store.setup(CONFIG, [lane("email")], 0)
    # Nothing was stored: the next setup's lanes are the store's.
    assert await store.setup("second", [lane("email")], None) == "second"
    assert await store.setup("third", [lane("other")], None) == "second"
    await store.join("p", ["send"], 60_000)
    with pytest.raises(ConfigError, match="lane: 7"):
        await store.enqueue("p", 7, "send", None, "{}")
    with pytest.raises(ConfigError, match="lease_ms: 0"):
        await store.join("p", ["send"], 0)
    with pytest.raises(ConfigError, match="command_id: -1"):
        await store.complete("p", -1, "null")
    with pytest.raises(ConfigError, match="exactly one"):
        await store.enqueue("p", 0, "send", "p", "{}")
    # A batch is checked whole before anything is sent: one bad entry refuses it.
    with pytest.raises(ConfigError, match="lane: -1"):
        await store.enqueue_many("p", [(0, "send", None, "{}"), (-1, "send", None, "{}")])
    with pytest.raises(ConfigError, match="command_id: 0"):
        await store.complete_many("p", [(1, "null"), (0, "null")])
    assert await store.stats() == [(0, 0, 0)]
    with pytest.raises(ConfigError, match="store name"):
        await RedisLaneStore.open(redis_url, "a{b}")


async def test_a_store_without_lanes_refuses_enqueue(store: RedisLaneStore) -> None:
    with pytest.raises(ConfigError, match="setup first"):
        await store.enqueue("p", 0, "send", None, "{}")


async def test_strict_priority_owes_a_slot_to_the_process_that_can_run_it(
    store: RedisLaneStore,
) -> None:
    # Lanes share a global cap of 1: "urgent" (priority 0) comes first even though only "b"
    # can run it, so "a" takes nothing rather than the lower lane's slot.
    await store.setup(CONFIG, [lane("urgent"), lane("bulk", priority=5)], 1)
    await store.join("a", ["report"], 60_000)
    await store.join("b", ["page"], 60_000)
    await store.enqueue("a", 1, "report", None, "{}")
    paged = await store.enqueue("a", 0, "page", None, "{}")
    assert await store.claim("a", 4) == ([], None)
    claimed, _ = await store.claim("b", 4)
    assert [c[0] for c in claimed] == [paged]


async def test_commands_nobody_live_can_run_block_nothing(store: RedisLaneStore) -> None:
    await store.setup(CONFIG, [lane("email", max_concurrency=1)], None)
    await store.join("a", ["send"], 60_000)
    await store.enqueue("a", 0, "orphan", None, "{}")
    sent = await store.enqueue("a", 0, "send", None, "{}")
    claimed, _ = await store.claim("a", 4)
    assert [c[0] for c in claimed] == [sent]
    assert await store.stats() == [(1, 1, 0)]


async def test_turns_spread_a_lane_over_idle_processes(store: RedisLaneStore) -> None:
    await store.setup(CONFIG, [lane("email", max_concurrency=2)], None)
    for pid in ("a", "b", "c"):
        await store.join(pid, ["send"], 60_000)
    for _ in range(4):
        await store.enqueue("a", 0, "send", None, "{}")
    first, _ = await store.claim("a", 4)
    second, _ = await store.claim("b", 4)
    third, _ = await store.claim("c", 4)
    assert (len(first), len(second), len(third)) == (1, 1, 0)


async def test_a_rate_limited_lane_bursts_to_its_permits_then_says_when(
    store: RedisLaneStore,
) -> None:
    await store.setup(CONFIG, [lane("api", max_concurrency=10, rate=(2, 600_000))], None)
    await store.join("a", ["call"], 60_000)
    for _ in range(3):
        await store.enqueue("a", 0, "call", None, "{}")
    claimed, timed = await store.claim("a", 10)
    assert len(claimed) == 2
    # The next token comes in about 300 s (less the milliseconds the calls took).
    assert timed is not None and 290_000 < timed <= 300_000


async def test_min_concurrency_reserves_global_slots(store: RedisLaneStore) -> None:
    lanes = [lane("bulk", max_concurrency=3), lane("vip", priority=5, min_concurrency=1)]
    await store.setup(CONFIG, lanes, 3)
    await store.join("a", ["work", "serve"], 60_000)
    for _ in range(3):
        await store.enqueue("a", 0, "work", None, "{}")
    served = await store.enqueue("a", 1, "serve", None, "{}")
    claimed, _ = await store.claim("a", 10)
    assert len(claimed) == 3 and served in [c[0] for c in claimed]


async def test_the_boost_lifts_a_lane_that_waited(store: RedisLaneStore) -> None:
    boosted = lane("slow", priority=3, boost=(1, [(0.5, 3)]))
    await store.setup(CONFIG, [lane("fast", priority=1), boosted], 1)
    await store.join("a", ["x"], 60_000)
    waited = await store.enqueue("a", 1, "x", None, "{}")
    await asyncio.sleep(0.01)  # (past the boost's 1 ms deadline: boosted to priority 0)
    await store.enqueue("a", 0, "x", None, "{}")
    claimed, _ = await store.claim("a", 1)
    assert [c[0] for c in claimed] == [waited]


async def test_an_expired_lease_is_recovered_once_then_fails_for_good(
    store: RedisLaneStore,
) -> None:
    await store.setup(CONFIG, [lane("email")], None)
    await store.join("submitter", [], 600_000)
    command = await store.enqueue("submitter", 0, "send", None, "{}")
    for attempt in (1, 2):
        await store.join("mortal", ["send"], 600_000)
        claimed, _ = await store.claim("mortal", 1)
        assert [(c[0], c[4]) for c in claimed] == [(command, attempt)]
        assert await store.renew("mortal", ["send"], 1) == []
        await asyncio.sleep(0.01)  # (its lease, now 1 ms, ends)
        await store.enqueue("submitter", 0, "other", None, "{}")  # recovers it
        assert await store.renew("mortal", ["send"], 600_000) == [command]
        await store.leave("mortal")
    error = "LeaseExpiredError: the process running it stopped renewing its lease"
    assert await store.outcomes("submitter") == [(command, False, error)]
    letters = await store.dead_letters()
    assert [(letter[0], letter[2], letter[3], letter[4]) for letter in letters] == [
        (command, "email", error, 2)
    ]


async def test_retries_cancel_and_callables(store: RedisLaneStore) -> None:
    await store.setup(CONFIG, [lane("email", max_concurrency=4)], None)
    await store.join("a", ["send"], 60_000)
    named = await store.enqueue("a", 0, "send", None, "{}")
    own = await store.enqueue("a", 0, None, "a", None)
    claimed, _ = await store.claim("a", 4)
    assert [(c[0], c[2], c[3]) for c in claimed] == [(named, "send", "{}"), (own, None, None)]
    assert await store.fail("a", named, "OSError: down", 600_000, "send", 10)
    assert not await store.fail("a", named, "OSError: down", 600_000, "send", 10)
    assert await store.complete("a", own, "null")
    assert await store.stats() == [(0, 0, 1)]
    assert await store.cancel(named)
    assert not await store.cancel(named)
    cancelled = await store.outcomes("a")
    assert [(o[0], o[1]) for o in cancelled] == [(named, False)]
    assert cancelled[0][2].startswith("CancelledError: ")
    assert await store.stats() == [(0, 0, 0)]


#: A child process: joins the Redis store given (URL, name), then (once let go) claims and
#: completes up to two commands at a time, waiting on its wake list when it gets none, until
#: the lane is empty; prints each id it ran, then "done".
CLAIMER = (
    WAIT_FOR_GO
    + """
from lanemq._core import RedisLaneStore

async def main() -> None:
    store = await RedisLaneStore.open(sys.argv[1], sys.argv[2])
    pid = sys.argv[3]
    await store.join(pid, ["n"], 60_000)
    await wait_for_go()
    while True:
        claimed, _ = await store.claim(pid, 2)
        for command in claimed:
            print(command[0], flush=True)
            assert await store.complete(pid, command[0], "null")
        if not claimed:
            if (await store.stats())[0][:2] == (0, 0):
                break
            await store.wait(pid, 50)
    await store.leave(pid)
    print("done", flush=True)

asyncio.run(main())
"""
)


async def test_three_os_processes_run_every_command_once(
    redis_url: str, tmp_path: Path, spawn: Spawn
) -> None:
    name = store_name()
    async with opened(redis_url, name) as store:
        await store.setup(CONFIG, [lane("bulk", max_concurrency=4)], None)
        await store.join("parent", [], 60_000)
        ids = [await store.enqueue("parent", 0, "n", None, "{}") for _ in range(60)]
        arguments = [(redis_url, name, f"child-{i}") for i in range(3)]
        children = await start_together(spawn, CLAIMER, arguments, tmp_path / "go")
        ran: list[int] = []
        for child in children:
            while (line := await child.line()) != "done":
                ran.append(int(line))
        assert sorted(ran) == ids
        outcomes = await store.outcomes("parent")
        assert sorted(outcome[0] for outcome in outcomes) == ids
        assert all(ok for _, ok, _ in outcomes)
