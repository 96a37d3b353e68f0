"""Claim order (scenario 14): lower priority number first, priority 0 before any prioritised
job, FIFO within a priority, newest first for LIFO jobs, a released job at the front of its
priority; `get_counts_per_priority`, `list_jobs("waiting")` and `update_priority` agree."""

from __future__ import annotations

from typing import Any

from lanemq import Job, JobQueue
from support import EPOCH_MS as T

from .helpers import lock_token


async def _add(queue: JobQueue, name: str, at: int, **options: Any) -> Job:
    return await queue.add(name, {"n": name}, now=at, **options)


async def _claim_names(queue: JobQueue, count: int, now: int) -> list[str]:
    """Claims one job at a time, ``count`` times, and returns the names in claim order."""
    names: list[str] = []
    for _ in range(count):
        claimed = await queue.claim("w", lease=30.0, now=now)
        assert len(claimed) == 1, f"expected one job after {names}, got {claimed}"
        names.append(claimed[0].name)
    assert await queue.claim("w", lease=30.0, now=now) == []
    return names


async def test_lower_priority_number_claimed_first(queue: JobQueue) -> None:
    for i, priority in enumerate([3, 1, 2, 2**21 - 1, 1_000]):
        await _add(queue, f"p{priority}", T + i, priority=priority)
    assert await _claim_names(queue, 5, T + 10) == ["p1", "p2", "p3", "p1000", f"p{2**21 - 1}"]


async def test_priority_zero_runs_before_prioritised_jobs(queue: JobQueue) -> None:
    await _add(queue, "prio-1", T, priority=1)
    await _add(queue, "prio-5", T + 1, priority=5)
    await _add(queue, "none-a", T + 2)  # priority 0 = no priority
    await _add(queue, "none-b", T + 3, priority=0)
    assert await _claim_names(queue, 4, T + 10) == ["none-a", "none-b", "prio-1", "prio-5"]


async def test_fifo_within_a_priority(queue: JobQueue) -> None:
    # Interleave two priorities; each keeps its insertion order. Same `now` for all, so the
    # order cannot come from timestamps.
    for name, priority in [("a", 7), ("x", 0), ("b", 7), ("y", 0), ("c", 7), ("z", 0)]:
        await _add(queue, name, T, priority=priority)
    assert await _claim_names(queue, 6, T) == ["x", "y", "z", "a", "b", "c"]


async def test_fifo_holds_for_many_jobs_added_in_one_millisecond(queue: JobQueue) -> None:
    names = [f"j{i:03d}" for i in range(200)]
    await queue.add_bulk([(name, None, {"priority": 4}) for name in names], now=T)
    assert await _claim_names(queue, 200, T) == names


async def test_lifo_jobs_newest_first_ahead_of_fifo_ones(queue: JobQueue) -> None:
    await _add(queue, "fifo-1", T, priority=2)
    await _add(queue, "lifo-1", T + 1, priority=2, lifo=True)
    await _add(queue, "fifo-2", T + 2, priority=2)
    await _add(queue, "lifo-2", T + 3, priority=2, lifo=True)
    await _add(queue, "lifo-3", T + 4, priority=2, lifo=True)
    # LIFO does not jump priorities: a priority-1 FIFO job still goes first.
    await _add(queue, "urgent", T + 5, priority=1)
    assert await _claim_names(queue, 6, T + 10) == [
        "urgent",
        "lifo-3",
        "lifo-2",
        "lifo-1",
        "fifo-1",
        "fifo-2",
    ]


async def test_lifo_without_priority(queue: JobQueue) -> None:
    for i, name in enumerate(["a", "b", "c"]):
        await _add(queue, name, T + i, lifo=True)
    assert await _claim_names(queue, 3, T + 10) == ["c", "b", "a"]


async def test_released_job_goes_to_front_of_its_priority(queue: JobQueue) -> None:
    for i, name in enumerate(["a", "b", "c", "d"]):
        await _add(queue, name, T + i, priority=3)
    first = (await queue.claim("w", now=T + 10))[0]
    second = (await queue.claim("w", now=T + 10))[0]
    assert (first.name, second.name) == ("a", "b")
    await queue.release(second.id, lock_token(second), now=T + 11)
    # A job of a better priority still runs first; the released job leads priority 3.
    await _add(queue, "urgent", T + 12, priority=1)
    await _add(queue, "e", T + 13, priority=3)
    assert await _claim_names(queue, 5, T + 20) == ["urgent", "b", "c", "d", "e"]
    assert await queue.get_state(first.id) == "active"


async def test_released_job_goes_before_lifo_jobs_of_its_priority(queue: JobQueue) -> None:
    job = await _add(queue, "held", T, priority=2)
    [claimed] = await queue.claim("w", now=T + 1)
    assert claimed.id == job.id
    await _add(queue, "lifo", T + 2, priority=2, lifo=True)
    await queue.release(claimed.id, lock_token(claimed), now=T + 3)
    assert await _claim_names(queue, 2, T + 4) == ["held", "lifo"]


async def test_counts_per_priority_count_waiting_jobs_only(queue: JobQueue) -> None:
    for i, priority in enumerate([0, 0, 1, 5, 5, 5]):
        await _add(queue, f"j{i}", T + i, priority=priority)
    await _add(queue, "later", T + 10, priority=5, delay=60.0)  # delayed: not waiting
    assert await queue.get_counts_per_priority(0, 1, 5, 7) == {0: 2, 1: 1, 5: 3, 7: 0}
    assert await queue.get_counts_per_priority(5) == {5: 3}

    [claimed] = await queue.claim("w", now=T + 20)  # takes a priority-0 job
    assert claimed.priority == 0
    assert await queue.get_counts_per_priority(0, 1, 5) == {0: 1, 1: 1, 5: 3}


async def test_list_waiting_shows_claim_order(queue: JobQueue) -> None:
    specs: list[tuple[str, dict[str, Any]]] = [
        ("p3-fifo", {"priority": 3}),
        ("p0-a", {}),
        ("p3-lifo", {"priority": 3, "lifo": True}),
        ("p1", {"priority": 1}),
        ("p0-b", {}),
        ("p0-lifo", {"lifo": True}),
    ]
    for i, (name, options) in enumerate(specs):
        await _add(queue, name, T + i, **options)
    expected = ["p0-lifo", "p0-a", "p0-b", "p1", "p3-lifo", "p3-fifo"]

    listed = await queue.list_jobs("waiting")
    assert [job.name for job in listed] == expected
    assert all(job.state == "waiting" for job in listed)
    assert [job.name for job in await queue.list_jobs(["waiting"], 1, 2)] == expected[1:3]
    assert [job.name for job in await queue.list_jobs("waiting", ascending=False)] == list(
        reversed(expected)
    )
    assert await _claim_names(queue, 6, T + 10) == expected


async def test_update_priority_moves_a_waiting_job(queue: JobQueue) -> None:
    a = await _add(queue, "a", T, priority=5)
    await _add(queue, "b", T + 1, priority=5)
    await _add(queue, "c", T + 2, priority=1)
    await _add(queue, "d", T + 3, priority=1)

    await queue.update_priority(a.id, 1)
    refreshed = await queue.get_job(a.id)
    assert refreshed is not None and refreshed.priority == 1
    assert await queue.get_counts_per_priority(1, 5) == {1: 3, 5: 1}
    assert [job.name for job in await queue.list_jobs("waiting")] == ["c", "d", "a", "b"]
    assert await _claim_names(queue, 4, T + 10) == ["c", "d", "a", "b"]


async def test_update_priority_to_zero_and_lifo(queue: JobQueue) -> None:
    await _add(queue, "a", T, priority=2)
    b = await _add(queue, "b", T + 1, priority=2)
    c = await _add(queue, "c", T + 2, priority=2)
    await _add(queue, "d", T + 3, priority=2)

    await queue.update_priority(c.id, 0)  # no priority: ahead of every prioritised job
    await queue.update_priority(b.id, 2, lifo=True)  # same priority, now at its front
    assert await _claim_names(queue, 4, T + 10) == ["c", "b", "a", "d"]
