"""Waiting without polling: ``job.wait()`` for a job's outcome and ``queue.wait_for_job()`` for
claimable work. These run on the wall clock, with short sleeps only."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from lanemq import Job, JobFailedError, JobNotFoundError, JobQueue

from .helpers import lock_token, waiting

#: Generous bound for "at once" (scheduling noise on two busy CI cores, not a real wait).
PROMPT = 0.25
#: Upper bound for anything awaited that should end at once (a failure, not a wait).
LIMIT = 5.0
#: Upper bound for "on time": well below the 1 s a wait blocks at most before it looks again,
#: so a missed wake-up still fails the test.
LATE = 0.9


async def _later(delay: float, action: Any) -> Any:
    await asyncio.sleep(delay)
    return await action()


async def _claim(queue: JobQueue) -> Job:
    [job] = await queue.claim("w1")
    return job


# ------------------------------------------------------------------ job.wait


async def test_wait_returns_the_result_when_another_task_completes(queue: JobQueue) -> None:
    job = await queue.add("w", {"n": 1})
    claimed = await _claim(queue)

    async def complete() -> None:
        await queue.complete(claimed.id, lock_token(claimed), {"sum": 7, "tags": ["a"]})

    finisher = asyncio.create_task(_later(0.05, complete))
    started = time.monotonic()
    assert await job.wait(timeout=1.0) == {"sum": 7, "tags": ["a"]}
    assert time.monotonic() - started < 0.5
    await finisher


async def test_wait_returns_none_result(queue: JobQueue) -> None:
    job = await queue.add("w")
    claimed = await _claim(queue)

    async def complete() -> None:
        await queue.complete(claimed.id, lock_token(claimed))

    finisher = asyncio.create_task(_later(0.02, complete))
    assert await job.wait(timeout=1.0) is None
    await finisher


async def test_wait_raises_job_failed_on_terminal_failure(queue: JobQueue) -> None:
    job = await queue.add("w")
    claimed = await _claim(queue)

    async def fail() -> None:
        await queue.fail(claimed.id, lock_token(claimed), "disk on fire", retry=False)

    finisher = asyncio.create_task(_later(0.05, fail))
    with pytest.raises(JobFailedError) as caught:
        await job.wait(timeout=1.0)
    assert caught.value.reason == "disk on fire"
    assert caught.value.job_id == job.id
    await finisher


async def test_wait_keeps_waiting_through_a_retried_failure(queue: JobQueue) -> None:
    job = await queue.add("w", attempts=2)
    waiter = asyncio.create_task(job.wait(timeout=1.0))
    await asyncio.sleep(0)

    first = await _claim(queue)
    assert await queue.fail(first.id, lock_token(first), "transient") is True
    await asyncio.sleep(0.05)
    assert not waiter.done(), "wait() ended on a failure that is retried"

    second = await _claim(queue)
    assert second.attempts_started == 2
    await queue.complete(second.id, lock_token(second), "finally")
    assert await asyncio.wait_for(waiter, 0.3) == "finally"


async def test_wait_raises_on_the_final_failure_after_retries(queue: JobQueue) -> None:
    job = await queue.add("w", attempts=2)
    waiter = asyncio.create_task(job.wait(timeout=1.0))
    await asyncio.sleep(0)

    first = await _claim(queue)
    assert await queue.fail(first.id, lock_token(first), "first reason") is True
    await asyncio.sleep(0.02)
    assert not waiter.done()

    second = await _claim(queue)
    assert await queue.fail(second.id, lock_token(second), "second reason") is False
    with pytest.raises(JobFailedError) as caught:
        await asyncio.wait_for(waiter, 0.3)
    assert caught.value.reason == "second reason"


async def test_wait_returns_at_once_for_a_finished_job(queue: JobQueue) -> None:
    done = await queue.add("w")
    claimed = await _claim(queue)
    await queue.complete(claimed.id, lock_token(claimed), [1, 2, 3])
    started = time.monotonic()
    assert await done.wait() == [1, 2, 3]
    assert await done.wait(timeout=0.01) == [1, 2, 3]
    assert time.monotonic() - started < PROMPT

    failed = await queue.add("w")
    claimed = await _claim(queue)
    await queue.fail(claimed.id, lock_token(claimed), "gone wrong", retry=False)
    with pytest.raises(JobFailedError) as caught:
        await asyncio.wait_for(failed.wait(), PROMPT)
    assert caught.value.reason == "gone wrong"


async def test_wait_raises_not_found_for_a_job_removed_while_waiting(queue: JobQueue) -> None:
    job = await queue.add("w")

    async def remove() -> None:
        await queue.remove(job.id)

    remover = asyncio.create_task(_later(0.05, remove))
    with pytest.raises(JobNotFoundError):
        await job.wait(timeout=1.0)
    await remover


async def test_wait_raises_not_found_for_a_job_drained_while_waiting(queue: JobQueue) -> None:
    job = await queue.add("w")

    async def drain() -> int:
        return await queue.drain()

    drainer = asyncio.create_task(_later(0.05, drain))
    with pytest.raises(JobNotFoundError):
        await job.wait(timeout=0.3)
    assert await drainer == 1


async def test_wait_raises_not_found_for_a_job_obliterated_while_waiting(
    queue: JobQueue,
) -> None:
    job = await queue.add("w")

    async def obliterate() -> None:
        await queue.obliterate(force=True)

    remover = asyncio.create_task(_later(0.05, obliterate))
    with pytest.raises(JobNotFoundError):
        await job.wait(timeout=0.3)
    await remover


async def _finish(queue: JobQueue, outcome: str) -> None:
    """Claims the queue's one job and completes it with ``{"answer": 42}``, or fails it for
    good with "broken"."""
    claimed = await _claim(queue)
    if outcome == "completed":
        await queue.complete(claimed.id, lock_token(claimed), {"answer": 42})
    else:
        await queue.fail(claimed.id, lock_token(claimed), "broken", retry=False)


@pytest.mark.parametrize("outcome", ["completed", "failed"])
async def test_wait_after_retention_removed_the_job_raises_not_found(
    queue: JobQueue, outcome: str
) -> None:
    # BullMQ rejects such a wait ("missing key"): the job was removed as its finish was
    # recorded, before the wait began, so there is no job to wait for.
    job = await queue.add("w", remove_on_complete=True, remove_on_fail=True)
    await _finish(queue, outcome)
    assert await queue.get_job(job.id) is None
    with pytest.raises(JobNotFoundError):
        await job.wait(timeout=LIMIT)


@pytest.mark.parametrize("outcome", ["completed", "failed"])
async def test_wait_begun_before_retention_removed_the_job_gets_its_outcome(
    queue: JobQueue, outcome: str
) -> None:
    job = await queue.add("w", remove_on_complete=True, remove_on_fail=True)
    waiter = await waiting(queue, job)
    await _finish(queue, outcome)
    assert await queue.get_job(job.id) is None
    if outcome == "completed":
        assert await asyncio.wait_for(waiter, LIMIT) == {"answer": 42}
    else:
        with pytest.raises(JobFailedError) as caught:
            await asyncio.wait_for(waiter, LIMIT)
        assert caught.value.reason == "broken"


async def test_wait_for_a_missing_job_raises_not_found(queue: JobQueue) -> None:
    job = await queue.add("w")
    await queue.remove(job.id)
    with pytest.raises(JobNotFoundError):
        await asyncio.wait_for(job.wait(), PROMPT)


async def test_wait_timeout_raises_timeout_error(queue: JobQueue) -> None:
    job = await queue.add("w")
    started = time.monotonic()
    with pytest.raises(TimeoutError):
        await job.wait(timeout=0.05)
    assert 0.04 <= time.monotonic() - started < LATE
    assert await queue.get_state(job.id) == "waiting"

    # A later wait still works after a timed-out one.
    claimed = await _claim(queue)

    async def complete() -> None:
        await queue.complete(claimed.id, lock_token(claimed), "late")

    finisher = asyncio.create_task(_later(0.02, complete))
    assert await job.wait(timeout=1.0) == "late"
    await finisher


async def test_several_waiters_all_get_the_result(queue: JobQueue) -> None:
    job = await queue.add("w")
    other = await queue.get_job(job.id)
    assert other is not None
    waiters = [asyncio.create_task(j.wait(timeout=1.0)) for j in (job, job, other)]
    await asyncio.sleep(0)
    claimed = await _claim(queue)
    await queue.complete(claimed.id, lock_token(claimed), "shared")
    assert await asyncio.wait_for(asyncio.gather(*waiters), 0.3) == ["shared"] * 3


# -------------------------------------------------------------- wait_for_job


async def test_wait_for_job_true_at_once_when_a_job_waits(queue: JobQueue) -> None:
    await queue.add("w")
    started = time.monotonic()
    assert await queue.wait_for_job(timeout=0.3) is True
    assert time.monotonic() - started < PROMPT
    assert await queue.wait_for_job() is True


async def test_wait_for_job_false_after_timeout_on_an_empty_queue(queue: JobQueue) -> None:
    started = time.monotonic()
    assert await queue.wait_for_job(timeout=0.05) is False
    elapsed = time.monotonic() - started
    assert 0.04 <= elapsed < LATE


async def test_wait_for_job_wakes_when_a_job_is_added(queue: JobQueue) -> None:
    async def add() -> Job:
        return await queue.add("w", "hello")

    adder = asyncio.create_task(_later(0.05, add))
    started = time.monotonic()
    assert await queue.wait_for_job(timeout=1.0) is True
    elapsed = time.monotonic() - started
    assert 0.04 <= elapsed < LATE
    added = await adder
    [claimed] = await queue.claim("w1")
    assert claimed.id == added.id


async def test_wait_for_job_wakes_for_a_delayed_job_when_due(queue: JobQueue) -> None:
    job = await queue.add("w", delay=0.1)
    assert await queue.claim("w1") == []
    started = time.monotonic()
    assert await queue.wait_for_job(timeout=5.0) is True
    elapsed = time.monotonic() - started
    # Woken for the job (due at 0.1 s), not by a wait that gave up and looked again (1 s).
    assert 0.05 <= elapsed < LATE, elapsed
    [claimed] = await queue.claim("w1")
    assert claimed.id == job.id


async def test_wait_for_job_does_not_wake_while_paused(queue: JobQueue) -> None:
    await queue.pause()
    await queue.add("w")
    assert await queue.wait_for_job(timeout=0.1) is False

    async def add_more() -> Job:
        return await queue.add("w")

    adder = asyncio.create_task(_later(0.02, add_more))
    assert await queue.wait_for_job(timeout=0.1) is False
    await adder

    async def resume() -> None:
        await queue.resume()

    resumer = asyncio.create_task(_later(0.05, resume))
    started = time.monotonic()
    assert await queue.wait_for_job(timeout=1.0) is True
    assert time.monotonic() - started < LATE
    await resumer
    assert len(await queue.claim("w1", max_jobs=5)) == 2


# ------------------------------------------------- wait and claim (idle workers)


async def test_wait_and_claim_claims_the_job_that_woke_it(queue: JobQueue) -> None:
    async def add() -> Job:
        return await queue.add("w", "hello")

    adder = asyncio.create_task(_later(0.05, add))
    claimed, _ = queue._wait_and_claim("w1", 30.0, 5, 1.0)
    started = time.monotonic()
    jobs = await claimed
    assert 0.04 <= time.monotonic() - started < LATE
    added = await adder
    assert [job.id for job in jobs] == [added.id]
    assert jobs[0].lock_token
    assert await queue.get_state(added.id) == "active"


async def test_wait_and_claim_gives_nothing_after_its_timeout(queue: JobQueue) -> None:
    claimed, _ = queue._wait_and_claim("w1", 30.0, 1, 0.05)
    started = time.monotonic()
    assert await claimed == []
    assert 0.04 <= time.monotonic() - started < LATE


async def test_interrupted_wait_and_claim_ends_at_once_and_takes_nothing(queue: JobQueue) -> None:
    claimed, interrupt = queue._wait_and_claim("w1", 30.0, 1, 5.0)
    pending = asyncio.ensure_future(claimed)
    await asyncio.sleep(0.05)
    assert not pending.done()
    started = time.monotonic()
    interrupt()
    assert await asyncio.wait_for(pending, PROMPT) == []
    assert time.monotonic() - started < PROMPT
    # A job added after the interrupt is still there for the next claim.
    job = await queue.add("w")
    assert await queue.get_state(job.id) == "waiting"
    [again] = await queue.claim("w2")
    assert again.id == job.id


async def test_wait_and_claim_interrupted_after_a_job_was_there_still_returns_it(
    queue: JobQueue,
) -> None:
    job = await queue.add("w")
    claimed, interrupt = queue._wait_and_claim("w1", 30.0, 1, 5.0)
    interrupt()  # before the call ran at all: it must not wait, and must not lose the job
    jobs = await asyncio.wait_for(claimed, PROMPT)
    if jobs:
        assert [j.id for j in jobs] == [job.id]
        assert await queue.get_state(job.id) == "active"
    else:
        assert await queue.get_state(job.id) == "waiting"
