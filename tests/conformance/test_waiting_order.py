"""Waiting jobs in claim order, whatever enters waiting how: priority 0 first (on Redis a list,
the other priorities a sorted set), each priority front (LIFO, released) then back (FIFO).
Listings, pages in both directions, counts, removals, drain and clean agree with the claims."""

from __future__ import annotations

from lanemq import JobQueue
from support import EPOCH_MS as T


async def _mixed(queue: JobQueue) -> list[str]:
    """Jobs of priorities 0 and 3, FIFO and LIFO, one released to the front; returns their ids
    in claim order."""
    fifo = [(await queue.add("f", {"i": i}, now=T)).id for i in range(3)]
    lifo = [(await queue.add("l", {"i": i}, lifo=True, now=T)).id for i in range(2)]
    low = [(await queue.add("p", {"i": i}, priority=3, now=T)).id for i in range(2)]
    low_lifo = (await queue.add("pl", None, priority=3, lifo=True, now=T)).id
    # The first claim takes the newest LIFO job; released, it goes back to the front.
    (claimed,) = await queue.claim("w", now=T)
    assert claimed.id == lifo[1]
    assert claimed.lock_token is not None
    await queue.release(claimed.id, claimed.lock_token, now=T)
    return [lifo[1], lifo[0], *fifo, low_lifo, *low]


async def test_listing_and_claims_follow_one_order(queue: JobQueue) -> None:
    order = await _mixed(queue)
    assert [job.id for job in await queue.list_jobs("waiting")] == order
    assert [job.id for job in await queue.list_jobs("waiting", ascending=False)] == order[::-1]
    assert await queue.get_job_counts("waiting") == {"waiting": len(order)}
    assert await queue.get_counts_per_priority(0, 3, 7) == {0: 5, 3: 3, 7: 0}
    claimed = []
    for _ in order:
        claimed += [job.id for job in await queue.claim("w", now=T)]
    assert claimed == order
    assert await queue.claim("w", now=T) == []


async def test_every_page_in_both_directions(queue: JobQueue) -> None:
    order = await _mixed(queue)
    n = len(order)
    for start in range(n + 1):
        for end in range(start, n + 2):
            up = await queue.list_jobs("waiting", start, end)
            down = await queue.list_jobs("waiting", start, end, ascending=False)
            assert [job.id for job in up] == order[start : end + 1], (start, end)
            assert [job.id for job in down] == order[::-1][start : end + 1], (start, end)
    page, total = await queue.list_jobs_with_total("waiting", 3, -1)
    assert total == n and [job.id for job in page] == order[3:]


async def test_a_batch_claim_spans_both_priorities(queue: JobQueue) -> None:
    order = await _mixed(queue)
    first = await queue.claim("w", max_jobs=6, now=T)
    assert [job.id for job in first] == order[:6]
    assert [job.priority for job in first] == [0, 0, 0, 0, 0, 3]
    assert [job.id for job in await queue.claim("w", max_jobs=6, now=T)] == order[6:]


async def test_removals_and_a_new_priority_keep_the_rest_in_order(queue: JobQueue) -> None:
    order = await _mixed(queue)
    await queue.remove(order[2])
    await queue.remove(order[6])
    # A new priority puts the job at the back of that priority.
    await queue.update_priority(order[0], 3)
    await queue.update_priority(order[5], 0)
    expected = [order[1], order[3], order[4], order[5], order[7], order[0]]
    assert [job.id for job in await queue.list_jobs("waiting")] == expected
    assert await queue.get_counts_per_priority(0, 3) == {0: 4, 3: 2}
    claimed = [job.id for job in await queue.claim("w", max_jobs=10, now=T)]
    assert claimed == expected


async def test_clean_takes_the_old_ones_and_keeps_the_order(queue: JobQueue) -> None:
    order = await _mixed(queue)
    newer = [(await queue.add("n", None, now=T + 10_000)).id for _ in range(2)]
    newer_low = (await queue.add("n", None, priority=3, now=T + 10_000)).id
    gone = await queue.clean(5, state="waiting", now=T + 10_000)
    assert sorted(gone) == sorted(order)
    assert [job.id for job in await queue.list_jobs("waiting")] == [*newer, newer_low]
    assert [job.id for job in await queue.claim("w", max_jobs=5, now=T + 10_000)] == [
        *newer,
        newer_low,
    ]


async def test_clean_with_a_limit_takes_the_first_in_claim_order(queue: JobQueue) -> None:
    order = await _mixed(queue)
    gone = await queue.clean(0, limit=2, state="waiting", now=T + 10_000)
    assert gone == order[:2]
    assert [job.id for job in await queue.list_jobs("waiting")] == order[2:]


async def test_drain_empties_both_and_new_jobs_still_order(queue: JobQueue) -> None:
    await _mixed(queue)
    assert await queue.drain(now=T) == 8
    assert await queue.list_jobs("waiting") == []
    assert await queue.get_job_counts("waiting") == {"waiting": 0}
    late = (await queue.add("x", None, priority=1, now=T)).id
    early = (await queue.add("y", None, now=T)).id
    assert [job.id for job in await queue.claim("w", max_jobs=3, now=T)] == [early, late]
