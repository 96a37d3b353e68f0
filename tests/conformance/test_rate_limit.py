"""The manual rate limit (BullMQ's ``queue.rateLimit``): `rate_limit` holds the whole queue
back, `get_rate_limit_ttl` tells for how long (the windowed limit's exhausted window too),
`remove_rate_limit_key` lets claims go on at once; idle waits wake when the wait ends; two
workers both wait after a processor set one and raised `RateLimitError`.

Claims and the TTL are driven with ``now=``; the waits run on the wall clock, with short
waits only."""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from lanemq import (
    ConfigError,
    InMemoryJobQueue,
    Job,
    JobQueue,
    JobWorker,
    LocalJobQueue,
    RateLimitError,
    RedisJobQueue,
)
from support import EPOCH_MS as T
from support import Spawn

#: Upper bound for "on time": well below the 1 s an idle wait blocks at most before it looks
#: again, so a wait that missed its wake-up still fails the test.
LATE = 0.9
LIMIT = 5.0  # upper bound for anything awaited; a healthy run needs a small fraction of it


def _wall_ms() -> float:
    """The wall clock in ms, the clock that the waits and claims without ``now`` use."""
    return time.time() * 1000


async def _add(queue: JobQueue, n: int, now: int = T) -> list[Job]:
    return [await queue.add("w", i, now=now) for i in range(n)]


# ------------------------------------------------------------------- rate_limit


async def test_rate_limit_holds_every_claim_back_until_it_ends(queue: JobQueue) -> None:
    added = await _add(queue, 3)
    await queue.rate_limit(0.5, now=T)

    assert await queue.claim("w1", max_jobs=5, now=T) == []
    assert await queue.claim("w2", max_jobs=5, now=T + 250) == []
    assert await queue.claim("w3", max_jobs=5, now=T + 499) == []
    assert await queue.get_rate_limit_ttl(now=T + 100) == pytest.approx(0.4)
    assert await queue.get_job_counts("waiting", "active") == {"waiting": 3, "active": 0}

    claimed = await queue.claim("w2", max_jobs=5, now=T + 500)
    assert [job.id for job in claimed] == [job.id for job in added]
    assert await queue.get_rate_limit_ttl(now=T + 500) == 0.0


async def test_rate_limit_later_call_replaces_the_wait(queue: JobQueue) -> None:
    await _add(queue, 1)
    await queue.rate_limit(10.0, now=T)
    await queue.rate_limit(0.2, now=T + 100)  # as BullMQ's: the latest wait is the one
    assert await queue.get_rate_limit_ttl(now=T + 100) == pytest.approx(0.2)
    assert await queue.claim("w1", now=T + 299) == []
    assert len(await queue.claim("w1", now=T + 300)) == 1


async def test_rate_limit_holds_back_claims_of_other_handles_and_processes(
    queue: JobQueue, backend: str, spawn: Spawn
) -> None:
    """The wait is the queue's, not the object's: another process (local, Redis) or another
    object of the same in-memory store sees it."""
    await _add(queue, 2)
    await queue.rate_limit(0.5, now=T)

    if backend == "memory":
        assert isinstance(queue, InMemoryJobQueue)
        other = InMemoryJobQueue(queue.name, group=queue.group)
        assert await other.claim("other", max_jobs=5, now=T + 100) == []
        assert await other.get_rate_limit_ttl(now=T + 100) == pytest.approx(0.4)
        assert len(await other.claim("other", max_jobs=5, now=T + 500)) == 2
        return

    assert await _claim_in_child(spawn, queue, T + 100) == (0, 0.4)
    assert await _claim_in_child(spawn, queue, T + 500) == (2, 0.0)
    assert await queue.get_job_counts("waiting", "active") == {"waiting": 0, "active": 2}


CHILD = """
import asyncio, sys
import lanemq

async def main() -> None:
    kind, name, where, prefix, now = sys.argv[1:6]
    if kind == "local":
        queue = lanemq.LocalJobQueue(name, where)
    else:
        queue = lanemq.RedisJobQueue(name, where, prefix=prefix)
    jobs = await queue.claim("other-process", max_jobs=5, now=int(now))
    ttl = await queue.get_rate_limit_ttl(now=int(now))
    print(len(jobs), ttl, flush=True)
    await queue.close()

asyncio.run(main())
"""


async def _claim_in_child(spawn: Spawn, queue: JobQueue, now: int) -> tuple[int, float]:
    """What a claim at ``now`` in another process gets: how many jobs, and the TTL it sees."""
    if isinstance(queue, LocalJobQueue):
        args = ["local", queue.name, str(queue.path), "", str(now)]
    else:
        assert isinstance(queue, RedisJobQueue)
        args = ["redis", queue.name, queue.url, queue.prefix, str(now)]
    child = await spawn(CHILD, *args)
    claimed, ttl = (await child.line()).split()
    assert await child.wait() == 0, child.stderr()
    return int(claimed), float(ttl)


async def test_rate_limit_and_the_windowed_limit_the_later_end_wins(queue: JobQueue) -> None:
    await _add(queue, 4)
    await queue.set_rate_limit(1, 1.0)
    assert len(await queue.claim("w1", max_jobs=5, now=T)) == 1  # the window T..T+1000 is used

    # A wait that ends before the window does: the window still holds claims back.
    await queue.rate_limit(0.2, now=T + 10)
    assert await queue.get_rate_limit_ttl(now=T + 100) == pytest.approx(0.9)
    assert await queue.claim("w1", now=T + 300) == []
    assert len(await queue.claim("w1", max_jobs=5, now=T + 1_000)) == 1

    # A wait that ends after the next window would: nothing until the wait ends.
    await queue.rate_limit(2.0, now=T + 1_000)
    assert await queue.get_rate_limit_ttl(now=T + 1_100) == pytest.approx(1.9)
    assert await queue.claim("w1", max_jobs=5, now=T + 2_000) == []
    assert await queue.claim("w1", max_jobs=5, now=T + 2_999) == []
    # Then the windowed limit again: one per window.
    assert len(await queue.claim("w1", max_jobs=5, now=T + 3_000)) == 1
    assert await queue.claim("w1", max_jobs=5, now=T + 3_001) == []
    assert await queue.get_job_counts("waiting", "active") == {"waiting": 1, "active": 3}


async def test_rate_limit_ttl_reports_an_exhausted_window(queue: JobQueue) -> None:
    assert await queue.get_rate_limit_ttl(now=T) == 0.0
    await _add(queue, 3)
    await queue.set_rate_limit(2, 1.0)
    assert len(await queue.claim("w1", now=T)) == 1
    # One claim of two left in the window: claims may go on.
    assert await queue.get_rate_limit_ttl(now=T + 100) == 0.0
    assert len(await queue.claim("w1", now=T + 200)) == 1
    assert await queue.get_rate_limit_ttl(now=T + 250) == pytest.approx(0.75)
    assert await queue.get_rate_limit_ttl(now=T + 1_000) == 0.0
    assert len(await queue.claim("w1", now=T + 1_000)) == 1


async def test_remove_rate_limit_key_lets_claims_go_on_at_once(queue: JobQueue) -> None:
    await _add(queue, 4)
    await queue.set_rate_limit(1, 60.0)
    assert len(await queue.claim("w1", max_jobs=5, now=T)) == 1
    await queue.rate_limit(30.0, now=T + 1)
    assert await queue.get_rate_limit_ttl(now=T + 1) == pytest.approx(59.999)

    await queue.remove_rate_limit_key()
    assert await queue.get_rate_limit_ttl(now=T + 2) == 0.0
    # The window starts again at the next claim; the windowed limit itself stays.
    assert len(await queue.claim("w1", max_jobs=5, now=T + 2)) == 1
    assert await queue.claim("w1", max_jobs=5, now=T + 3) == []
    assert await queue.get_rate_limit() == (1, 60.0)
    assert await queue.get_rate_limit_ttl(now=T + 3) == pytest.approx(59.999)


async def test_remove_rate_limit_key_without_a_limit_changes_nothing(queue: JobQueue) -> None:
    await _add(queue, 2)
    await queue.remove_rate_limit_key()
    assert await queue.get_rate_limit() is None
    assert await queue.get_rate_limit_ttl(now=T) == 0.0
    assert len(await queue.claim("w1", max_jobs=5, now=T)) == 2


@pytest.mark.parametrize("bad", [0, 0.0, -1, -0.5, math.nan, math.inf, -math.inf, 1e300])
async def test_rate_limit_refuses_bad_waits_and_changes_nothing(
    queue: JobQueue, bad: float
) -> None:
    await _add(queue, 2)
    with pytest.raises(ConfigError, match="invalid rate limit wait"):
        await queue.rate_limit(bad, now=T)
    assert await queue.get_rate_limit_ttl(now=T) == 0.0
    assert len(await queue.claim("w1", now=T)) == 1

    # A wait in force stays as it was.
    await queue.rate_limit(1.0, now=T)
    with pytest.raises(ConfigError):
        await queue.rate_limit(bad, now=T + 1)
    assert await queue.get_rate_limit_ttl(now=T + 1) == pytest.approx(0.999)
    assert await queue.claim("w1", now=T + 999) == []


async def test_rate_limit_refuses_what_is_not_a_number(queue: JobQueue) -> None:
    for bad in ("1", None, True):
        with pytest.raises(ConfigError, match="invalid rate limit wait"):
            await queue.rate_limit(bad, now=T)  # type: ignore[arg-type]
    assert await queue.get_rate_limit_ttl(now=T) == 0.0


async def test_obliterate_clears_the_rate_limit_wait(queue: JobQueue) -> None:
    await queue.rate_limit(60.0, now=T)
    await queue.obliterate(force=True, now=T + 1)
    assert await queue.get_rate_limit_ttl(now=T + 2) == 0.0
    job = await queue.add("w", now=T + 2)
    [claimed] = await queue.claim("w1", now=T + 3)
    assert claimed.id == job.id


# ------------------------------------------------------------------------ waits


async def test_wait_for_job_wakes_when_the_rate_limit_wait_ends(queue: JobQueue) -> None:
    job = await queue.add("w")
    limited_at = int(_wall_ms())
    await queue.rate_limit(0.3, now=limited_at)
    assert await queue.claim("w1") == []
    assert await queue.wait_for_job(timeout=LIMIT) is True
    woken_at = _wall_ms()
    # Not before the wait ends (a claim would find nothing), and then at once rather than at
    # the next look of a wait that gave up (1 s). (1 ms for the clock's rounding.)
    assert woken_at >= limited_at + 300 - 1, woken_at - limited_at
    assert woken_at - limited_at < LATE * 1000, woken_at - limited_at
    [claimed] = await queue.claim("w1")
    assert claimed.id == job.id


async def test_wait_for_job_wakes_when_the_rate_limit_key_is_removed(queue: JobQueue) -> None:
    job = await queue.add("w")
    await queue.rate_limit(30.0)
    assert await queue.wait_for_job(timeout=0.05) is False

    async def remove() -> None:
        await asyncio.sleep(0.05)
        await queue.remove_rate_limit_key()

    remover = asyncio.create_task(remove())
    started = time.monotonic()
    assert await queue.wait_for_job(timeout=LIMIT) is True
    assert time.monotonic() - started < LATE
    await remover
    [claimed] = await queue.claim("w1")
    assert claimed.id == job.id


# ---------------------------------------------------------------------- workers


@contextlib.asynccontextmanager
async def _running(*workers: JobWorker) -> AsyncIterator[None]:
    tasks = [asyncio.create_task(worker.run()) for worker in workers]
    try:
        yield
    finally:
        await asyncio.wait_for(asyncio.gather(*(w.close() for w in workers)), LIMIT)
        for task in tasks:
            await asyncio.wait_for(task, LIMIT)  # re-raises what run() raised


async def test_every_worker_waits_after_a_processor_sets_the_rate_limit(queue: JobQueue) -> None:
    wait = 0.5
    started: list[tuple[str, str, float]] = []  # (job id, worker id, wall clock ms)
    called_at: list[int] = []
    later: list[Job] = []

    def processor(worker_id: str) -> Callable[[Job], Awaitable[str]]:
        async def work(job: Job) -> str:
            started.append((job.id, worker_id, _wall_ms()))
            if not called_at:
                # An API said "too many requests": the whole queue waits, then this job runs
                # again.
                called_at.append(int(_wall_ms()))
                await job.queue.rate_limit(wait, now=called_at[0])
                # Work that arrives during the wait waits too, on either worker.
                later.extend([await queue.add("r", i) for i in range(4)])
                raise RateLimitError()
            return f"done:{job.id}"

        return work

    first = await queue.add("r", "first")
    workers = [JobWorker(queue, processor(f"w{n}"), concurrency=1) for n in (1, 2)]
    async with _running(*workers):
        assert await asyncio.wait_for(first.wait(), LIMIT) == f"done:{first.id}"
        for job in later:
            assert await asyncio.wait_for(job.wait(), LIMIT) == f"done:{job.id}"

    [limited_at] = called_at
    assert started[0][0] == first.id
    after = started[1:]
    assert sorted(job_id for job_id, _, _ in after) == sorted([first.id, *(j.id for j in later)])
    # No job started on either worker before the wait ended (1 ms for the clock's rounding).
    ends = limited_at + wait * 1000 - 1
    early = [(job_id, w, at - limited_at) for job_id, w, at in after if at < ends]
    assert early == [], early
    # The job given back used no attempt.
    stored = await queue.get_job(first.id)
    assert stored is not None
    assert stored.attempts_made == 1
    assert sum(worker.processed for worker in workers) == 5
