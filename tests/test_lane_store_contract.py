"""The shared lanes' store contract (python/lanemq/lanes/_store.py), rule by rule, driven
through the store class with several process ids, on every backend of lane_store_support."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest
from lane_store_support import (
    MakeStore,
    lane_store_factory,  # noqa: F401 (the `lane_store` fixture)
    spec,
)
from lanemq import ConfigError
from lanemq._core import LocalLaneStore
from lanemq.lanes._store import LaneSpec, LaneStore, NewCommand
from support import WAIT_FOR_GO, Spawn, start_together

WAIT = 5.0  # upper bound for anything awaited in a test; never reached when things work
LEASE = 60_000  # a lease no test outlives
SHORT_LEASE = 400  # a lease a recovery test lets expire (long enough for its steps before)
RETRY_MS = 500  # a retry's wait, long enough for the steps that must come before it
LEASE_EXPIRED = "LeaseExpiredError: the process running it stopped renewing its lease"


async def store_with(
    make: MakeStore,
    lanes: list[LaneSpec],
    global_max: int | None = None,
    pids: tuple[str, ...] = ("p1",),
    names: tuple[str, ...] = ("n",),
) -> LaneStore:
    """A store set up with ``lanes``, ``pids`` joined running ``names``."""
    store = await make("lanes")
    await store.setup("{}", lanes, global_max)
    for pid in pids:
        await store.join(pid, list(names), LEASE)
    return store


async def claim_ids(store: LaneStore, pid: str, max_n: int = 10) -> list[int]:
    claimed, _ = await store.claim(pid, max_n)
    return [command[0] for command in claimed]


async def named(store: LaneStore, lane: int, n: int, submitter: str = "p1") -> list[int]:
    """Enqueues ``n`` named commands ``n`` on lane ``lane``; returns their ids."""
    return [await store.enqueue(submitter, lane, "n", None, json.dumps(i)) for i in range(n)]


async def test_setup_keeps_the_first_config(lane_store: MakeStore) -> None:
    first = await lane_store("lanes")
    assert await first.setup('{"v": 1}', [spec("a", 0, 1)], None) == '{"v": 1}'
    second = await lane_store("lanes")
    assert await second.setup('{"v": 2}', [spec("b", 0, 5)], 3) == '{"v": 1}'
    # Dispatch uses the stored lanes: one lane of max 1.
    await second.join("p1", ["n"], LEASE)
    await named(second, 0, 2)
    assert len(await claim_ids(second, "p1")) == 1


async def test_claim_gives_fifo_within_a_lane_and_the_command_fields(
    lane_store: MakeStore,
) -> None:
    store = await store_with(lane_store, [spec("a", 0, 10)])
    ids = await named(store, 0, 3)
    claimed, wait = await store.claim("p1", 10)
    assert claimed == [(id_, 0, "n", json.dumps(i), 1, "p1") for i, id_ in enumerate(ids)]
    assert wait is None
    assert ids == sorted(ids) and ids[0] > 0


async def test_strict_priority_across_lanes(lane_store: MakeStore) -> None:
    store = await store_with(lane_store, [spec("low", 5, 10), spec("high", 1, 10)])
    low = await named(store, 0, 2)
    high = await named(store, 1, 2)
    assert await claim_ids(store, "p1") == high + low


async def test_lane_and_global_caps_count_every_process(lane_store: MakeStore) -> None:
    store = await store_with(
        lane_store, [spec("a", 0, 2), spec("b", 1, 10)], global_max=3, pids=("p1", "p2")
    )
    a = await named(store, 0, 3)
    b = await named(store, 1, 3)
    assert await claim_ids(store, "p1", 1) == a[:1]
    # p2 sees p1's command: one more of a (its max 2), then one of b (the global cap 3).
    assert await claim_ids(store, "p2") == [a[1], b[0]]
    assert await claim_ids(store, "p1") == []
    assert await store.stats() == [(1, 2, 0), (2, 1, 0)]


async def test_min_reservations_hold_global_slots(lane_store: MakeStore) -> None:
    lanes = [spec("hi", 0, 10), spec("lo", 1, 10, min_concurrency=1)]
    store = await store_with(lane_store, lanes, global_max=3)
    hi = await named(store, 0, 4)
    # lo's reservation holds one of the three slots even with lo empty.
    assert await claim_ids(store, "p1") == hi[:2]
    lo = await named(store, 1, 1)
    assert await claim_ids(store, "p1") == lo


async def test_owed_commands_block_lower_lanes_and_nobodys_do_not(
    lane_store: MakeStore,
) -> None:
    store = await lane_store("lanes")
    await store.setup("{}", [spec("hi", 0, 10), spec("lo", 1, 10)], 1)
    await store.join("p1", ["mine"], LEASE)
    await store.join("p2", ["theirs"], LEASE)
    nobodys = await store.enqueue("p1", 0, "unknown", None, "null")
    owed = await store.enqueue("p1", 0, "theirs", None, "null")
    mine = await store.enqueue("p1", 1, "mine", None, "null")
    # The one global slot goes to hi's command p2 can run: p1 takes nothing.
    assert await claim_ids(store, "p1") == []
    assert await claim_ids(store, "p2") == [owed]
    assert await store.complete("p2", owed, "null")
    # Nobody registered "unknown": it is passed over and blocks nothing.
    assert await claim_ids(store, "p1") == [mine]
    assert await store.stats() == [(1, 0, 0), (0, 1, 0)]
    assert await store.cancel(nobodys)


async def test_callables_run_only_in_their_owner(lane_store: MakeStore) -> None:
    store = await store_with(lane_store, [spec("a", 0, 10)], pids=("p1", "p2"))
    callable_id = await store.enqueue("p1", 0, None, "p1", None)
    assert await claim_ids(store, "p2") == []
    claimed, _ = await store.claim("p1", 10)
    assert claimed == [(callable_id, 0, None, None, 1, "p1")]


async def test_leave_drops_the_pending_callables(lane_store: MakeStore) -> None:
    store = await store_with(lane_store, [spec("a", 0, 10)], pids=("p1", "p2"))
    await store.enqueue("p2", 0, None, "p2", None)
    [id_] = await named(store, 0, 1)
    assert await store.stats() == [(2, 0, 0)]
    await store.leave("p2")
    assert await store.stats() == [(1, 0, 0)]
    assert await claim_ids(store, "p1") == [id_]


async def test_rate_tokens_limit_starts_and_claim_returns_the_wait(
    lane_store: MakeStore,
) -> None:
    store = await store_with(lane_store, [spec("a", 0, 10, rate=(2, 60_000))], pids=("p1", "p2"))
    ids = await named(store, 0, 4)
    assert await claim_ids(store, "p1", 1) == ids[:1]
    # The bucket is shared: p2 gets the second token only.
    claimed, wait = await store.claim("p2", 10)
    assert [command[0] for command in claimed] == ids[1:2]
    assert wait is not None and 0 < wait <= 30_000


async def test_boost_lifts_a_lane_whose_oldest_waited(lane_store: MakeStore) -> None:
    lanes = [spec("high", 1, 10), spec("low", 5, 10, boost=(1, [(0.5, 5)]))]
    store = await store_with(lane_store, lanes)
    low = await named(store, 1, 1)
    await asyncio.sleep(0.01)  # past low's 1 ms deadline: boosted by 5, ahead of high
    high = await named(store, 0, 1)
    assert await claim_ids(store, "p1", 1) == low
    assert await claim_ids(store, "p1", 1) == high


async def test_turns_spread_a_lane_over_idle_processes(lane_store: MakeStore) -> None:
    store = await store_with(lane_store, [spec("a", 0, 2)], pids=("p1", "p2", "p3"))
    ids = await named(store, 0, 3)
    assert await claim_ids(store, "p1") == ids[:1]
    assert await claim_ids(store, "p2") == ids[1:2]
    assert await claim_ids(store, "p3") == []
    assert await store.stats() == [(1, 2, 0)]
    # p3 is idle now; p1, ending its command, may not take two while p3 is idle.
    assert await store.complete("p1", ids[0], "null")
    assert await claim_ids(store, "p3") == ids[2:]


async def test_a_claim_of_nothing_is_not_idle(lane_store: MakeStore) -> None:
    store = await store_with(lane_store, [spec("a", 0, 2)], pids=("p1", "p2"))
    ids = await named(store, 0, 2)
    # p2 asks for no work (it is busy): the turns leave it nothing.
    assert await claim_ids(store, "p2", 0) == []
    assert await claim_ids(store, "p1") == ids


async def test_recovery_requeues_once_then_dead_letters(lane_store: MakeStore) -> None:
    store = await store_with(lane_store, [spec("a", 0, 10)], pids=())
    await store.join("submitter", [], LEASE)
    await store.join("p1", ["n"], SHORT_LEASE)
    first = await store.enqueue("submitter", 0, "n", None, '"x"')
    assert await claim_ids(store, "p1") == [first]
    held_callable = await store.enqueue("p1", 0, None, "p1", None)
    assert await claim_ids(store, "p1") == [held_callable]
    await store.enqueue("p1", 0, None, "p1", None)  # a pending callable of p1
    later = await store.enqueue("submitter", 0, "n", None, '"y"')
    await asyncio.sleep(SHORT_LEASE * 2 / 1000)
    # Recovered: back at the front of its lane, its second attempt; p1's callables dropped.
    await store.join("p2", ["n"], SHORT_LEASE)
    claimed, _ = await store.claim("p2", 1)
    assert claimed == [(first, 0, "n", '"x"', 2, "submitter")]
    assert await store.stats() == [(1, 1, 0)]
    # Fenced: p1 no longer holds it, and learns so when it renews.
    assert not await store.complete("p1", first, "null")
    assert await store.renew("p1", ["n"], LEASE) == sorted([first, held_callable])
    # Its pending callable went with it: p1 (joined again) gets the named command only.
    assert await claim_ids(store, "p1") == [later]
    assert await store.complete("p1", later, "null")
    await asyncio.sleep(SHORT_LEASE * 2 / 1000)
    # Recovered a second time: it fails for good.
    assert await claim_ids(store, "p1") == []
    assert await store.stats() == [(0, 0, 0)]
    outcomes = await store.outcomes("submitter")
    assert outcomes == [(later, True, "null"), (first, False, LEASE_EXPIRED)]
    [letter] = await store.dead_letters()
    assert letter[:5] == (first, "n", "a", LEASE_EXPIRED, 2)
    assert await store.outcomes("p1") == []


async def test_fencing_refuses_another_process_and_unknown_ids(lane_store: MakeStore) -> None:
    store = await store_with(lane_store, [spec("a", 0, 10)], pids=("p1", "p2"))
    [id_] = await named(store, 0, 1)
    assert await claim_ids(store, "p1") == [id_]
    assert not await store.complete("p2", id_, "null")
    assert not await store.fail("p2", id_, "E: x", None, "n", 10)
    assert not await store.release("p2", id_)
    assert not await store.complete("p1", id_ + 100, "null")
    assert await store.stats() == [(0, 1, 0)]


async def test_retry_waits_then_goes_to_the_back_of_its_lane(lane_store: MakeStore) -> None:
    store = await store_with(lane_store, [spec("a", 0, 10)])
    [first] = await named(store, 0, 1)
    assert await claim_ids(store, "p1") == [first]
    assert await store.fail("p1", first, "ValueError: again", RETRY_MS, "n", 10)
    assert await store.stats() == [(0, 0, 1)]
    claimed, wait = await store.claim("p1", 10)
    assert claimed == [] and wait is not None and 0 < wait <= RETRY_MS
    [second] = await named(store, 0, 1)
    assert await claim_ids(store, "p1") == [second]
    await asyncio.sleep(RETRY_MS * 1.2 / 1000)
    claimed, _ = await store.claim("p1", 10)
    assert [(command[0], command[4]) for command in claimed] == [(first, 2)]
    assert await store.outcomes("p1") == []


async def test_fail_for_good_gives_the_error_and_a_capped_dead_letter(
    lane_store: MakeStore,
) -> None:
    store = await store_with(lane_store, [spec("a", 0, 10)])
    await store.join("submitter", [], LEASE)  # runs nothing: no turns to leave it
    ids = await named(store, 0, 3, submitter="submitter")
    assert await claim_ids(store, "p1") == ids
    for id_ in ids:
        assert await store.fail("p1", id_, f"ValueError: {id_}", None, "n", 2)
    letters = await store.dead_letters()
    assert [letter[:5] for letter in letters] == [
        (id_, "n", "a", f"ValueError: {id_}", 1) for id_ in ids[1:]
    ]
    assert all(letter[5] > 1e12 for letter in letters)
    outcomes = await store.outcomes("submitter")
    assert outcomes == [(id_, False, f"ValueError: {id_}") for id_ in ids]
    assert await store.outcomes("submitter") == []


async def test_release_puts_it_back_in_front(lane_store: MakeStore) -> None:
    store = await store_with(lane_store, [spec("a", 0, 10)])
    ids = await named(store, 0, 2)
    assert await claim_ids(store, "p1", 1) == ids[:1]
    callable_id = await store.enqueue("p1", 0, None, "p1", None)
    assert await claim_ids(store, "p1", 1) == ids[1:]
    assert await claim_ids(store, "p1", 1) == [callable_id]
    assert await store.release("p1", ids[0])
    assert await store.release("p1", callable_id)
    claimed, _ = await store.claim("p1", 10)
    assert [(command[0], command[4]) for command in claimed] == [(ids[0], 1)]
    assert await store.stats() == [(0, 2, 0)]


async def test_cancel_withdraws_pending_and_retrying_only(lane_store: MakeStore) -> None:
    store = await store_with(lane_store, [spec("a", 0, 1)])
    running, pending, retrying = await named(store, 0, 3)
    assert await claim_ids(store, "p1") == [running]
    assert await store.cancel(pending)
    assert not await store.cancel(running)
    assert not await store.cancel(pending)
    assert await store.fail("p1", running, "E: x", 60_000, "n", 10)
    assert await claim_ids(store, "p1") == [retrying]
    assert await store.cancel(running)
    outcomes = await store.outcomes("p1")
    assert [(id_, ok) for id_, ok, _ in outcomes] == [(pending, False), (running, False)]
    assert all(text.startswith("CancelledError: ") for _, _, text in outcomes)
    assert await store.stats() == [(0, 1, 0)]


async def test_outcomes_go_to_the_submitter_only_and_none_for_callables(
    lane_store: MakeStore,
) -> None:
    store = await store_with(lane_store, [spec("a", 0, 10)], pids=("p1", "p2"))
    [id_] = await named(store, 0, 1, submitter="p1")
    assert await claim_ids(store, "p2") == [id_]
    assert await store.complete("p2", id_, '{"r": 1}')
    callable_id = await store.enqueue("p2", 0, None, "p2", None)
    assert await claim_ids(store, "p2") == [callable_id]
    assert await store.complete("p2", callable_id, "null")
    assert await store.outcomes("p2") == []
    assert await store.outcomes("p1") == [(id_, True, '{"r": 1}')]


async def test_wait_is_woken_by_enqueue_and_complete_and_returns_at_timeout(
    lane_store: MakeStore,
) -> None:
    lanes = [spec("a", 0, 10)]
    one = await store_with(lane_store, lanes, pids=("p1",))
    two = await lane_store("lanes")
    await two.join("p2", ["n"], LEASE)
    # Nothing woke p2 since it joined: its wait runs to its timeout.
    await asyncio.wait_for(two.wait("p2", 20), WAIT)
    waiting = asyncio.ensure_future(two.wait("p2", 60_000))
    await asyncio.sleep(0.05)
    assert not waiting.done()
    [id_] = await named(one, 0, 1)
    await asyncio.wait_for(waiting, WAIT)
    assert await claim_ids(two, "p2") == [id_]
    # p1 is woken by the outcome (and the command's end) while it waits.
    await asyncio.wait_for(one.wait("p1", 60_000), WAIT)  # the enqueue's wake, seen
    waiting = asyncio.ensure_future(one.wait("p1", 60_000))
    await asyncio.sleep(0.05)
    assert not waiting.done()
    assert await two.complete("p2", id_, "null")
    await asyncio.wait_for(waiting, WAIT)
    assert await one.outcomes("p1") == [(id_, True, "null")]


async def test_a_cancelled_wait_leaves_the_wake_to_the_next(lane_store: MakeStore) -> None:
    one = await store_with(lane_store, [spec("a", 0, 10)], pids=("p1",))
    two = await lane_store("lanes")
    await two.join("p2", ["n"], LEASE)
    cancelled = asyncio.ensure_future(two.wait("p2", 60_000))
    await asyncio.sleep(0.05)
    cancelled.cancel()
    await named(one, 0, 1)
    await asyncio.sleep(0.05)  # the cancelled wait's runtime task sees the wake meanwhile
    await asyncio.wait_for(two.wait("p2", 60_000), WAIT)


async def test_a_recovered_process_that_renews_is_woken_again(lane_store: MakeStore) -> None:
    one = await store_with(lane_store, [spec("a", 0, 10)], pids=("p1",))
    two = await lane_store("lanes")
    await two.join("p2", ["n"], SHORT_LEASE)
    await one.enqueue("p1", 0, "n", None, "null")
    await asyncio.wait_for(two.wait("p2", 60_000), WAIT)  # p2 saw its counter at 1
    await asyncio.sleep(SHORT_LEASE * 2 / 1000)
    await one.enqueue("p1", 0, "n", None, "null")  # recovers p2: forgotten
    assert await two.renew("p2", ["n"], LEASE) == []
    # Nothing woke it since it joined again; its new counter starts afresh, so its first
    # wake (1 again) is not taken for the one it saw before.
    waiting = asyncio.ensure_future(two.wait("p2", 60_000))
    await asyncio.sleep(0.05)
    assert not waiting.done()
    await one.enqueue("p1", 0, "n", None, "null")
    await asyncio.wait_for(waiting, WAIT)


async def test_stats_and_clear_all(lane_store: MakeStore) -> None:
    store = await store_with(lane_store, [spec("a", 0, 1), spec("b", 1, 5)])
    await named(store, 0, 2)
    await named(store, 1, 1)
    [a, b] = await claim_ids(store, "p1")
    assert await store.fail("p1", b, "E: x", 60_000, "n", 10)
    assert await store.stats() == [(1, 1, 0), (0, 0, 1)]
    await store.clear_all()
    assert await store.stats() == []
    assert await store.dead_letters() == []
    # Settings are gone too: the next setup stores its own.
    assert await store.setup('{"new": 1}', [spec("c", 0, 1)], None) == '{"new": 1}'
    assert await store.stats() == [(0, 0, 0)]
    assert not await store.complete("p1", a, "null")


async def test_enqueue_many_adds_in_order_and_returns_the_ids(lane_store: MakeStore) -> None:
    store = await store_with(lane_store, [spec("a", 0, 10), spec("b", 1, 10)])
    ids = await store.enqueue_many(
        "p1",
        [
            (1, "n", None, '"b0"'),
            (0, "n", None, '"a0"'),
            (0, None, "p1", None),
            (0, "n", None, '"a1"'),
        ],
    )
    assert len(ids) == 4 and ids == sorted(ids) and ids[0] > 0
    assert await store.stats() == [(3, 0, 0), (1, 0, 0)]
    [later] = await named(store, 0, 1)
    assert later > ids[-1]
    claimed, _ = await store.claim("p1", 10)
    assert claimed == [
        (ids[1], 0, "n", '"a0"', 1, "p1"),
        (ids[2], 0, None, None, 1, "p1"),
        (ids[3], 0, "n", '"a1"', 1, "p1"),
        (later, 0, "n", "0", 1, "p1"),
        (ids[0], 1, "n", '"b0"', 1, "p1"),
    ]


@pytest.mark.parametrize(
    "bad",
    [(3, "n", None, "null"), (0, "n", "p1", "null"), (0, None, None, None), (0, None, "p1", "{}")],
    ids=["bad-lane", "name-and-owner", "neither", "payload-on-a-callable"],
)
async def test_a_bad_command_refuses_the_whole_batch(
    lane_store: MakeStore, bad: NewCommand
) -> None:
    store = await store_with(lane_store, [spec("a", 0, 10)])
    with pytest.raises(ConfigError) as alone:
        await store.enqueue("p1", *bad)
    with pytest.raises(ConfigError) as batched:
        await store.enqueue_many("p1", [(0, "n", None, "1"), bad, (0, "n", None, "2")])
    # The batch's error is the one `enqueue` gives, and nothing of the batch was written.
    assert str(batched.value) == str(alone.value)
    assert await store.stats() == [(0, 0, 0)]
    assert await claim_ids(store, "p1") == []


async def test_empty_batches_write_nothing_and_wake_nobody(lane_store: MakeStore) -> None:
    store = await store_with(lane_store, [spec("a", 0, 10)])
    waiting = asyncio.ensure_future(store.wait("p1", 60_000))
    assert await store.enqueue_many("p1", []) == []
    assert await store.complete_many("p1", []) == []
    await asyncio.sleep(0.05)
    assert not waiting.done()
    waiting.cancel()
    assert await store.stats() == [(0, 0, 0)]


async def test_complete_many_ends_what_the_process_holds_and_refuses_the_rest(
    lane_store: MakeStore,
) -> None:
    # p2 alone runs "n"; p1 submits and runs nothing of it.
    store = await store_with(lane_store, [spec("a", 0, 10)], pids=("p2",))
    await store.join("p1", ["other"], LEASE)
    first, second = await store.enqueue_many("p1", [(0, "n", None, "0"), (0, "n", None, "1")])
    [own] = await store.enqueue_many("p2", [(0, None, "p2", None)])
    assert await claim_ids(store, "p2") == [first, second, own]
    [pending] = await named(store, 0, 1)
    # Held by p2, not p1: refused, nothing changed.
    assert await store.complete_many("p1", [(first, "null")]) == [False]
    assert await store.stats() == [(1, 3, 0)]
    done = await store.complete_many(
        "p2",
        [
            (first, '{"r": 0}'),
            (pending, "null"),
            (own, "null"),
            (999_999, "null"),
            (second, '{"r": 1}'),
            (first, "again"),
        ],
    )
    assert done == [True, False, True, False, True, False]
    assert await store.stats() == [(1, 0, 0)]
    # Each named command's outcome goes to its submitter; a callable's to nobody.
    assert await store.outcomes("p1") == [(first, True, '{"r": 0}'), (second, True, '{"r": 1}')]
    assert await store.outcomes("p2") == []


async def test_a_batch_wakes_each_process_once(lane_store: MakeStore) -> None:
    # p1 submits and runs nothing of it (so turns leave every command to p2).
    one = await store_with(lane_store, [spec("a", 0, 10)], pids=("p1",), names=("other",))
    two = await lane_store("lanes")
    await two.join("p2", ["n"], LEASE)
    ids = await one.enqueue_many("p1", [(0, "n", None, str(i)) for i in range(3)])
    await asyncio.wait_for(two.wait("p2", 60_000), WAIT)
    await asyncio.wait_for(one.wait("p1", 60_000), WAIT)
    # The three commands woke each process once: their next waits wait.
    second = asyncio.ensure_future(two.wait("p2", 60_000))
    first = asyncio.ensure_future(one.wait("p1", 60_000))
    await asyncio.sleep(0.05)
    assert not second.done() and not first.done()
    assert await claim_ids(two, "p2") == ids
    assert await two.complete_many("p2", [(id_, "null") for id_ in ids]) == [True] * 3
    await asyncio.wait_for(second, WAIT)
    await asyncio.wait_for(first, WAIT)
    # Three ends (and three outcomes for p1) were one wake each too.
    second = asyncio.ensure_future(two.wait("p2", 60_000))
    first = asyncio.ensure_future(one.wait("p1", 60_000))
    await asyncio.sleep(0.05)
    assert not second.done() and not first.done()
    second.cancel()
    first.cancel()
    assert await one.outcomes("p1") == [(id_, True, "null") for id_ in ids]


@pytest.mark.parametrize("name", ["", "a/b", ".", ".."])
async def test_bad_store_names_are_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(ConfigError, match="invalid lanes store name"):
        await LocalLaneStore.open(tmp_path, name)
    assert await asyncio.to_thread(os.listdir, tmp_path) == []


async def test_bad_input_names_the_value_and_changes_nothing(lane_store: MakeStore) -> None:
    # Each message names the field and its value (in each backend's words).
    store = await lane_store("lanes")
    with pytest.raises(ConfigError, match=r"max_concurrency\b.*\b0\b"):
        await store.setup("{}", [spec("a", 0, 0)], None)
    with pytest.raises(ConfigError, match="rate_per_ms"):
        await store.setup("{}", [("a", 0, 0, 1, 2, None, None, [])], None)
    with pytest.raises(ConfigError, match=r"global_max\b.*\b1\b"):
        await store.setup("{}", [spec("a", 0, 2, min_concurrency=2)], 1)
    with pytest.raises(ConfigError, match="setup"):
        await store.enqueue("p1", 0, "n", None, "null")
    await store.setup("{}", [spec("a", 0, 1)], None)
    with pytest.raises(ConfigError, match=r"lane\b.*\b3\b"):
        await store.enqueue("p1", 3, "n", None, "null")
    with pytest.raises(ConfigError, match="owner"):
        await store.enqueue("p1", 0, "n", "p1", "null")
    with pytest.raises(ConfigError, match=r"lease_ms\b.*\b0\b"):
        await store.join("p1", ["n"], 0)
    assert await store.stats() == [(0, 0, 0)]
    # Nothing was stored by the refused setups: the first good one's lanes hold.
    assert await store.setup('{"other": 1}', [spec("b", 0, 5)], None) == "{}"


#: A child process: joins store ``lanes`` of the directory given, then (once let go) claims
#: and completes one command at a time until the lanes are empty, printing each id it ran.
CLAIMER = (
    WAIT_FOR_GO
    + """
from lanemq._core import LocalLaneStore

async def main() -> None:
    store = await LocalLaneStore.open(sys.argv[1], "lanes")
    pid = sys.argv[2]
    await store.join(pid, ["n"], 60_000)
    await wait_for_go()
    while True:
        claimed, _ = await store.claim(pid, 1)
        for command in claimed:
            print(command[0], flush=True)
            assert await store.complete(pid, command[0], "null")
        if not claimed:
            if (await store.stats())[0][:2] == (0, 0):
                break
            await store.wait(pid, 50)
    print("done", flush=True)

asyncio.run(main())
"""
)


async def test_two_os_processes_share_one_file(tmp_path: Path, spawn: Spawn) -> None:
    directory = tmp_path / "lanes"
    store = await LocalLaneStore.open(directory, "lanes")
    await store.setup("{}", [spec("a", 0, 4)], None)
    await store.join("parent", [], LEASE)
    ids = await named(store, 0, 40, submitter="parent")
    arguments = [(str(directory), f"child-{i}") for i in range(2)]
    children = await start_together(spawn, CLAIMER, arguments, tmp_path / "go")
    ran: list[list[int]] = []
    for child in children:
        lines: list[int] = []
        while (line := await child.line()) != "done":
            lines.append(int(line))
        ran.append(lines)
    assert sorted(ran[0] + ran[1]) == ids
    outcomes = await store.outcomes("parent")
    assert sorted(id_ for id_, _, _ in outcomes) == ids
    store.close()
