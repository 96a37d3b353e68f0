"""Groups on Redis (JobQueue.add(..., group=...)): turns between groups inside one claim and
across claims, the ungrouped jobs as one group of their own, priority within a group, the
concurrency and rate limits per group, max_size refusing an add (and a whole add_bulk)
without writing anything, pause/resume, counts, list_groups paging, group_job_ids,
remove_group, and a grouped queue claiming with turns on Redis Cluster.

Every test uses its own key prefix on the session's redis-server (``redis_url``)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator

import pytest
from lanemq import Dedup, FlowJob, GroupMaxSizeExceededError, Job, JobWorker, RedisJobQueue
from redis_support import Resp, queue_key
from support import redis_prefix

WAIT = 10.0  # upper bound for anything awaited in a test; never reached when things work


@pytest.fixture
async def queue(redis_url: str) -> AsyncIterator[RedisJobQueue]:
    q = RedisJobQueue("groups", redis_url, prefix=redis_prefix())
    try:
        yield q
    finally:
        await q.obliterate(force=True)
        await q.close()


async def group_job_ids(queue: RedisJobQueue, group: str, *states: str) -> list[str]:
    """The binding's group_job_ids (JobQueue uses it for cancel_group; it has no wrapper)."""
    return list(await queue._core.group_job_ids(group, list(states)))


async def claim_names_at(queue: RedisJobQueue, max_jobs: int, now: int) -> list[str]:
    return [job.name for job in await queue.claim("w", max_jobs=max_jobs, now=now)]


async def claim_names(queue: RedisJobQueue, max_jobs: int) -> list[str]:
    return [job.name for job in await queue.claim("w", max_jobs=max_jobs)]


async def test_groups_take_turns_inside_one_claim(queue: RedisJobQueue) -> None:
    for name in ("a1", "a2", "a3"):
        await queue.add(name, group="A")
    await queue.add("b1", group="B")
    await queue.add("c1", group="C")
    jobs = await queue.claim("w", max_jobs=5)
    assert [job.name for job in jobs] == ["a1", "b1", "c1", "a2", "a3"]
    assert [job.group for job in jobs] == ["A", "B", "C", "A", "A"]


async def test_groups_take_turns_across_claims(queue: RedisJobQueue) -> None:
    for name in ("a1", "a2", "a3"):
        await queue.add(name, group="A")
    await queue.add("b1", group="B")
    await queue.add("c1", group="C")
    names = [name for _ in range(5) for name in await claim_names(queue, 1)]
    assert names == ["a1", "b1", "c1", "a2", "a3"]
    assert await queue.claim("w") == []


async def test_ungrouped_jobs_are_one_group_in_the_turns(queue: RedisJobQueue) -> None:
    await queue.add("a1", group="A")
    await queue.add("a2", group="A")
    await queue.add("u1")
    await queue.add("u2")
    await queue.add("b1", group="B")
    assert await claim_names(queue, 10) == ["a1", "u1", "b1", "a2", "u2"]


async def test_without_groups_the_claim_is_fifo_with_priorities(queue: RedisJobQueue) -> None:
    await queue.add("p2", priority=2)
    await queue.add("u1")
    await queue.add("u2")
    await queue.add("p1", priority=1)
    assert await claim_names(queue, 10) == ["u1", "u2", "p1", "p2"]


async def test_priority_acts_within_a_group_only(queue: RedisJobQueue) -> None:
    await queue.add("a-low", group="A", priority=5)
    await queue.add("a-high", group="A", priority=1)
    await queue.add("b-low", group="B", priority=9)
    await queue.add("a-none", group="A")
    assert await claim_names(queue, 10) == ["a-none", "b-low", "a-high", "a-low"]
    assert await queue.get_job_counts("waiting", "active") == {"waiting": 0, "active": 4}


async def test_grouped_waiting_jobs_are_counted_and_listed(queue: RedisJobQueue) -> None:
    await queue.add("u")
    await queue.add("a", group="A", priority=3)
    await queue.add("b", group="B")
    assert (await queue.get_job_counts("waiting"))["waiting"] == 3
    assert await queue.get_counts_per_priority(0, 3) == {0: 2, 3: 1}
    waiting = await queue.list_jobs("waiting")
    assert sorted(job.name for job in waiting) == ["a", "b", "u"]


async def test_concurrency_limit_holds_a_group_across_two_workers(
    queue: RedisJobQueue,
) -> None:
    await queue.set_group_limits("A", concurrency=1)
    for i in range(3):
        await queue.add(f"a{i}", group="A")
    await queue.add("b0", group="B")
    await queue.add("b1", group="B")
    first = await queue.claim("w1", max_jobs=5)
    assert [job.name for job in first] == ["a0", "b0", "b1"]
    # The other worker gets nothing of A while a0 runs.
    assert await queue.claim("w2", max_jobs=5) == []
    a0 = first[0]
    assert a0.lock_token is not None
    await queue.complete(a0.id, a0.lock_token, None)
    second = await queue.claim("w2", max_jobs=5)
    assert [job.name for job in second] == ["a1"]


async def test_concurrency_limit_with_real_workers(queue: RedisJobQueue) -> None:
    await queue.set_group_defaults(concurrency=2)
    running: dict[str, int] = {"A": 0, "B": 0}
    peak: dict[str, int] = {"A": 0, "B": 0}
    done = asyncio.Event()
    finished = 0

    async def process(job: Job) -> None:
        nonlocal finished
        group = job.group
        assert group is not None
        running[group] += 1
        peak[group] = max(peak[group], running[group])
        await asyncio.sleep(0.02)
        running[group] -= 1
        finished += 1
        if finished == 20:
            done.set()

    for i in range(10):
        await queue.add(f"a{i}", group="A")
        await queue.add(f"b{i}", group="B")
    workers = [JobWorker(queue, process, concurrency=5) for _ in range(2)]
    tasks = [asyncio.create_task(w.run()) for w in workers]
    try:
        await asyncio.wait_for(done.wait(), WAIT)
    finally:
        for w in workers:
            await w.close()
        await asyncio.gather(*tasks, return_exceptions=True)
    assert peak == {"A": 2, "B": 2}
    assert (await queue.get_job_counts("completed"))["completed"] == 20


async def test_rate_limit_per_group(queue: RedisJobQueue) -> None:
    now = 1_000_000
    await queue.set_group_limits("A", rate=(2, 1.0))
    for i in range(4):
        await queue.add(f"a{i}", group="A", now=now)
    await queue.add("b0", group="B", now=now)
    jobs = await queue.claim("w", max_jobs=10, now=now)
    assert [job.name for job in jobs] == ["a0", "b0", "a1"]
    assert await queue.claim("w", max_jobs=10, now=now + 500) == []
    # The window is over: A joins the turns again.
    jobs = await queue.claim("w", max_jobs=10, now=now + 1000)
    assert [job.name for job in jobs] == ["a2", "a3"]


async def test_max_size_refuses_an_add_writing_nothing(queue: RedisJobQueue) -> None:
    await queue.set_group_limits("A", max_size=2)
    await queue.add("a0", group="A")
    await queue.add("a1", group="A", delay=60)
    before = await queue.get_job_counts()
    with pytest.raises(GroupMaxSizeExceededError, match="A"):
        await queue.add("a2", group="A")
    assert await queue.get_job_counts() == before
    # Another group, and ungrouped jobs, are not refused.
    await queue.add("b0", group="B")
    await queue.add("u0")
    # An active job is not counted: after a claim, A has room again.
    [a0] = await queue.claim("w")
    assert a0.name == "a0"
    await queue.add("a2", group="A")


async def test_max_size_refuses_a_whole_bulk(queue: RedisJobQueue) -> None:
    await queue.set_group_defaults(max_size=2)
    before = await queue.get_job_counts()
    with pytest.raises(GroupMaxSizeExceededError):
        await queue.add_bulk(
            [
                ("u", None),
                ("b0", None, {"group": "B"}),
                ("a0", None, {"group": "A"}),
                ("a1", None, {"group": "A"}),
                ("a2", None, {"group": "A"}),
            ]
        )
    assert await queue.get_job_counts() == before
    assert await queue.list_groups() == []
    added = await queue.add_bulk([("a0", None, {"group": "A"}), ("a1", None, {"group": "A"})])
    assert [job.group for job in added] == ["A", "A"]


async def test_pause_and_resume_a_group(queue: RedisJobQueue) -> None:
    await queue.pause_group("A")
    assert await queue.is_group_paused("A")
    await queue.add("a0", group="A")
    await queue.add("b0", group="B")
    await queue.add("u0")
    assert await claim_names(queue, 10) == ["b0", "u0"]
    assert await queue.claim("w") == []
    await queue.resume_group("A")
    assert not await queue.is_group_paused("A")
    assert await claim_names(queue, 10) == ["a0"]


async def test_resume_wakes_an_idle_worker(queue: RedisJobQueue) -> None:
    await queue.pause_group("A")
    await queue.add("a0", group="A")
    seen = asyncio.Event()

    async def process(job: Job) -> None:
        seen.set()

    worker = JobWorker(queue, process)
    task = asyncio.create_task(worker.run())
    try:
        await asyncio.sleep(0.3)
        assert not seen.is_set()
        await queue.resume_group("A")
        await asyncio.wait_for(seen.wait(), WAIT)
    finally:
        await worker.close()
        await asyncio.gather(task, return_exceptions=True)


async def test_group_counts_ids_and_list(queue: RedisJobQueue) -> None:
    await queue.add("a0", group="A", job_id="x2")
    await queue.add("a1", group="A", job_id="x1", delay=60)
    await queue.add("a2", group="A", job_id="x3")
    await queue.add("b0", group="B")
    [a0] = await queue.claim("w")
    assert a0.lock_token is not None
    await queue.complete(a0.id, a0.lock_token, 1)
    counts = await queue.get_group_counts("A", "completed", "waiting", "delayed", "waiting")
    assert counts == {"completed": 1, "waiting": 1, "delayed": 1}
    all_counts = await queue.get_group_counts("A")
    assert sum(all_counts.values()) == 3
    assert await group_job_ids(queue, "A") == ["x1", "x2", "x3"]
    assert await group_job_ids(queue, "A", "waiting", "delayed") == ["x1", "x3"]
    await queue.pause_group("P")
    await queue.set_group_limits("L", concurrency=3)
    assert await queue.count_groups() == 4
    page = await queue.list_groups(1, 2)
    assert [(g.name, g.paused) for g in page] == [("B", False), ("L", False)]
    first = (await queue.list_groups(0, 1))[0]
    assert first.name == "A"
    assert first.counts["completed"] == 1 and first.counts["delayed"] == 1
    assert [g.name for g in await queue.list_groups(3, 10)] == ["P"]
    # A group whose last job goes, with no pause and no overrides, is no longer listed.
    await queue.remove_group("B")
    assert [g.name for g in await queue.list_groups()] == ["A", "L", "P"]


async def test_remove_group_removes_waiting_and_delayed_only(queue: RedisJobQueue) -> None:
    await queue.set_group_limits("A", concurrency=5)
    await queue.add("a0", group="A")
    await queue.add("a1", group="A")
    await queue.add("a2", group="A", delay=60)
    await queue.add("b0", group="B")
    [active] = await queue.claim("w")
    assert active.name == "a0"
    assert await queue.remove_group("A") == 2
    assert await group_job_ids(queue, "A") == [active.id]
    assert await claim_names(queue, 10) == ["b0"]
    # Overrides stay.
    assert (await queue.get_group_limits("A")).concurrency == 5


async def test_added_event_carries_the_group(queue: RedisJobQueue, redis_url: str) -> None:
    start = await queue._core.last_event_id()
    await queue.add("a", group="A")
    await queue.add("u")
    added = [e for e in await queue.read_events(start + 1) if e.event == "added"]
    assert [e.job_id for e in added] == ["1", "2"]
    assert "A" in added[0].fields.values() and "A" not in added[1].fields.values()
    # As stored: the event's own fields `name` and `group` (lua/README.md, `events`).
    with Resp.of(redis_url) as redis:
        entries = redis.command("XRANGE", queue_key(queue, "events"), "-", "+")
    flat = [value for entry in entries for value in entry[1]]
    at = flat.index("added")
    assert flat[at : at + 6] == ["added", "1", "name", "a", "group", "A"]
    assert "group" not in flat[at + 6 :]


async def test_retry_and_release_keep_the_group_state(queue: RedisJobQueue) -> None:
    await queue.set_group_limits("A", concurrency=1)
    await queue.add("a0", group="A", attempts=2)
    await queue.add("a1", group="A")
    [a0] = await queue.claim("w", max_jobs=5)
    assert a0.lock_token is not None
    assert await queue.fail(a0.id, a0.lock_token, "boom")
    # a0 is waiting again at the back of A; A's slot is free.
    [job] = await queue.claim("w", max_jobs=5)
    assert job.name == "a1"
    assert job.lock_token is not None
    await queue.release(job.id, job.lock_token)
    [again] = await queue.claim("w", max_jobs=5)
    assert again.name == "a1"


async def test_drain_and_obliterate_clear_the_waiting_state(queue: RedisJobQueue) -> None:
    await queue.set_group_limits("A", concurrency=1)
    await queue.add("a0", group="A")
    await queue.add("b0", group="B")
    assert await queue.drain() == 2
    assert await queue.claim("w") == []
    await queue.add("a1", group="A")
    assert await claim_names(queue, 5) == ["a1"]
    assert (await queue.get_group_limits("A")).concurrency == 1


async def test_promoted_delayed_jobs_join_their_group(queue: RedisJobQueue) -> None:
    now = 2_000_000
    await queue.add("a0", group="A", delay=1, now=now)
    await queue.add("b0", group="B", now=now)
    assert [job.name for job in await queue.claim("w", max_jobs=5, now=now)] == ["b0"]
    jobs = await queue.claim("w", max_jobs=5, now=now + 1000)
    assert [job.name for job in jobs] == ["a0"]


async def test_grouped_queue_on_a_cluster(redis_cluster_url: str) -> None:
    queue = RedisJobQueue("groups", redis_cluster_url, prefix=redis_prefix())
    try:
        for name in ("a1", "a2", "a3"):
            await queue.add(name, group="A")
        await queue.add("b1", group="B")
        await queue.add("u1")
        assert await claim_names(queue, 5) == ["a1", "b1", "u1", "a2", "a3"]
        assert await queue.count_groups() == 2
    finally:
        await queue.obliterate(force=True)
        await queue.close()


async def test_the_library_loads_with_the_groups(queue: RedisJobQueue, redis_url: str) -> None:
    # Lua allows a function 200 locals: a library past that is refused by the server, and
    # every script would run by EVALSHA instead (compose.rs nests the helpers).
    await queue.add("a", group="A")
    with Resp.of(redis_url) as redis:
        libraries = redis.command("FUNCTION", "LIST", "LIBRARYNAME", "lanemq_*")
    assert libraries, "the FUNCTION library was not loaded"


async def test_a_flow_past_max_size_is_refused_whole(queue: RedisJobQueue) -> None:
    await queue.set_group_limits("A", max_size=1)
    before = await queue.get_job_counts()
    flow = FlowJob(
        "parent",
        children=[
            FlowJob("c0", options={"group": "A"}),
            FlowJob("c1", options={"group": "A"}),
        ],
    )
    with pytest.raises(GroupMaxSizeExceededError):
        await queue.add_flow(flow)
    assert await queue.get_job_counts() == before
    # A parent waiting for its children is not counted: one grouped child fits.
    node = await queue.add_flow(
        FlowJob("parent", options={"group": "A"}, children=[FlowJob("c0", options={"group": "A"})])
    )
    assert node.job.group == "A"
    assert await claim_names(queue, 5) == ["c0"]


async def test_stall_recovery_and_move_to_delayed_free_the_concurrency(
    queue: RedisJobQueue,
) -> None:
    now = 3_000_000
    await queue.set_group_limits("A", concurrency=1)
    await queue.add("a0", group="A", now=now)
    await queue.add("a1", group="A", now=now)
    [a0] = await queue.claim("w", max_jobs=5, lease=1.0, now=now)
    assert a0.name == "a0"
    assert await queue.claim("w", max_jobs=5, now=now) == []
    # a0's lease runs out: it goes back to the front of A, and A's slot is free.
    recovered, failed = await queue.recover_stalled(now=now + 2000)
    assert (recovered, failed) == ([a0.id], [])
    [again] = await queue.claim("w", max_jobs=5, now=now + 2000)
    assert again.name == "a0"
    assert again.lock_token is not None
    await queue.move_to_delayed(again.id, again.lock_token, delay_until=now + 5000, now=now + 2000)
    [a1] = await queue.claim("w", max_jobs=5, now=now + 2000)
    assert a1.name == "a1"
    assert a1.lock_token is not None
    await queue.complete(a1.id, a1.lock_token, None, now=now + 2000)
    # The delayed a0 rejoins A when it is due.
    assert await queue.claim("w", max_jobs=5, now=now + 4000) == []
    assert await claim_names_at(queue, 5, now + 5000) == ["a0"]


async def test_update_priority_and_clean_keep_the_group_state(queue: RedisJobQueue) -> None:
    first = await queue.add("a0", group="A")
    await queue.add("a1", group="A", priority=1)
    await queue.add("b0", group="B")
    await queue.update_priority(first.id, 2)
    assert await claim_names(queue, 1) == ["a1"]
    # B's job is cleaned: B has nothing to give, A goes on.
    assert await queue.clean(0, state="waiting", now=2**41) != []
    assert await queue.claim("w", max_jobs=5) == []
    assert await queue.get_job_counts("waiting") == {"waiting": 0}
    await queue.add("b1", group="B")
    assert await claim_names(queue, 5) == ["b1"]


async def test_idle_worker_is_not_woken_by_a_paused_group(queue: RedisJobQueue) -> None:
    await queue.pause_group("A")
    await queue.add("a0", group="A")
    assert not await queue.wait_for_job(timeout=0.2)
    await queue.add("u0")
    assert await queue.wait_for_job(timeout=WAIT)


async def test_scheduler_occurrences_and_dedup_keep_last_join_their_group(
    queue: RedisJobQueue,
) -> None:
    now = 4_000_000
    await queue.set_group_limits("S", concurrency=1)
    pending = await queue.upsert_scheduler(
        "every-second", every=1.0, template=("tick", None, {"group": "S"}), now=now
    )
    assert pending.group == "S"
    [tick] = await queue.claim("w", max_jobs=5, now=now)
    assert (tick.name, tick.group) == ("tick", "S")
    # The next occurrence is due, but S is at its concurrency while the first runs.
    assert await queue.claim("w", max_jobs=5, now=now + 1000) == []
    assert tick.lock_token is not None
    await queue.complete(tick.id, tick.lock_token, None, now=now + 1000)
    assert [job.group for job in await queue.claim("w", now=now + 1000)] == ["S"]
    # keep_last: the job kept while the owner runs is added, in its group, when it ends.
    owner = await queue.add("d0", group="D", dedup=Dedup("k", keep_last=True), now=now)
    [claimed] = await queue.claim("w", max_jobs=5, now=now)
    assert claimed.id == owner.id and claimed.lock_token is not None
    await queue.add("d1", group="D", dedup=Dedup("k", keep_last=True), now=now)
    await queue.complete(claimed.id, claimed.lock_token, None, now=now)
    [kept] = await queue.claim("w", max_jobs=5, now=now)
    assert (kept.name, kept.group) == ("d1", "D")


def _command_calls(raw: Resp, command: str) -> int:
    found = re.search(rf"cmdstat_{command}:calls=(\d+)", raw.command("INFO", "commandstats"))
    return int(found.group(1)) if found else 0


async def test_a_lone_group_is_claimed_and_completed_a_batch_at_a_time(
    queue: RedisJobQueue, redis_url: str
) -> None:
    # A group alone in the turns gives its jobs in one pop, and a batch's completions count
    # the group's active jobs down once (issue 32): not a pop and a count a job.
    await queue.set_group_limits("A", concurrency=5)
    await queue.add_bulk([(f"a{i}", None, {"group": "A"}) for i in range(8)])
    with Resp.of(redis_url) as raw:
        raw.command("CONFIG", "RESETSTAT")
        jobs = await queue.claim("w", max_jobs=10)
        assert [job.name for job in jobs] == ["a0", "a1", "a2", "a3", "a4"]
        assert _command_calls(raw, "zpopmin") == 1
        raw.command("CONFIG", "RESETSTAT")
        refused = await queue.complete_many([(job.id, job.lock_token or "", None) for job in jobs])
        assert refused == []
        # The group's count once (not once a job), the batch's event ids, its turn back.
        assert _command_calls(raw, "hincrby") == 3
    assert await queue.get_group_counts("A", "active", "completed", "waiting") == {
        "active": 0,
        "completed": 5,
        "waiting": 3,
    }
    assert [job.name for job in await queue.claim("w", max_jobs=10)] == ["a5", "a6", "a7"]
