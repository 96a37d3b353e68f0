"""Retention of finished jobs (scenario 23): ``remove_on_complete`` / ``remove_on_fail`` as
True, an integer count or `KeepJobs`; the default keeps everything; and result waits on jobs
removed as they finish do not hang."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from lanemq import Job, JobFailedError, JobQueue, KeepJobs
from support import EPOCH_MS as T

from .helpers import lock_token, waiting


async def _run(queue: JobQueue, now: int, result: Any = None) -> Job:
    """Claims the next job at ``now`` and completes it at ``now``."""
    [job] = await queue.claim("w1", now=now)
    await queue.complete(job.id, lock_token(job), result, now=now)
    return job


async def _run_fail(queue: JobQueue, now: int, reason: str = "boom") -> Job:
    """Claims the next job at ``now`` and fails it for good at ``now``."""
    [job] = await queue.claim("w1", now=now)
    assert await queue.fail(job.id, lock_token(job), reason, retry=False, now=now) is False
    return job


async def _ids(queue: JobQueue, state: str) -> list[str]:
    return [job.id for job in await queue.list_jobs(state)]


# ------------------------------------------------------------------ complete


async def test_remove_on_complete_true_removes_the_job(queue: JobQueue) -> None:
    job = await queue.add("w", remove_on_complete=True, now=T)
    kept = await queue.add("w", now=T)
    await _run(queue, T + 1, {"v": 1})

    assert await queue.get_job(job.id) is None
    assert await queue.get_state(job.id) == "unknown"
    assert (await queue.finished_result(job.id)).status == "missing"
    assert await queue.get_job_counts("completed") == {"completed": 0}
    # The "completed" event is still emitted, with the value.
    assert any(e.event == "completed" and e.job_id == job.id for e in await queue.read_events())

    await _run(queue, T + 2)
    assert await _ids(queue, "completed") == [kept.id]


async def test_keep_jobs_count_keeps_only_the_newest(queue: JobQueue) -> None:
    jobs = [await queue.add("w", i, remove_on_complete=KeepJobs(count=1), now=T) for i in range(3)]
    await _run(queue, T + 1)
    assert await _ids(queue, "completed") == [jobs[0].id]
    await _run(queue, T + 2)
    assert await _ids(queue, "completed") == [jobs[1].id]
    await _run(queue, T + 3)
    assert await _ids(queue, "completed") == [jobs[2].id]
    assert await queue.get_job(jobs[0].id) is None
    assert await queue.get_job(jobs[1].id) is None
    assert (await queue.finished_result(jobs[2].id)).status == "completed"


async def test_integer_count_keeps_that_many(queue: JobQueue) -> None:
    jobs = [await queue.add("w", i, remove_on_complete=2, now=T) for i in range(4)]
    for i in range(4):
        await _run(queue, T + 1 + i, i)
    assert await _ids(queue, "completed") == [jobs[2].id, jobs[3].id]
    assert await queue.get_job(jobs[0].id) is None
    assert await queue.get_job(jobs[1].id) is None
    assert (await queue.finished_result(jobs[3].id)).value == 3


async def test_integer_zero_removes_at_once(queue: JobQueue) -> None:
    job = await queue.add("w", remove_on_complete=0, now=T)
    await _run(queue, T + 1)
    assert await queue.get_job(job.id) is None


async def test_keep_jobs_age_removes_older_completed_jobs(queue: JobQueue) -> None:
    policy = KeepJobs(age=10.0)
    a = await queue.add("w", "a", remove_on_complete=policy, now=T)
    b = await queue.add("w", "b", remove_on_complete=policy, now=T)
    c = await queue.add("w", "c", remove_on_complete=policy, now=T)

    await _run(queue, T)  # a
    await _run(queue, T + 5_000)  # b: a is 5 s old, kept
    assert await _ids(queue, "completed") == [a.id, b.id]

    await _run(queue, T + 12_000)  # c: a is 12 s old, removed; b is 7 s old, kept
    assert await _ids(queue, "completed") == [b.id, c.id]
    assert await queue.get_job(a.id) is None
    assert (await queue.finished_result(a.id)).status == "missing"


async def test_keep_jobs_count_and_age_together(queue: JobQueue) -> None:
    policy = KeepJobs(age=10.0, count=2)
    jobs = [await queue.add("w", i, remove_on_complete=policy, now=T) for i in range(4)]
    await _run(queue, T)
    await _run(queue, T + 1_000)
    await _run(queue, T + 2_000)  # count: the first goes
    assert await _ids(queue, "completed") == [jobs[1].id, jobs[2].id]
    # At T+12.5s: the count alone would drop jobs[1]; the age also drops jobs[2] (10.5 s old).
    await _run(queue, T + 12_500)
    assert await _ids(queue, "completed") == [jobs[3].id]


async def test_default_keeps_everything(queue: JobQueue) -> None:
    done = [await queue.add("c", i, now=T) for i in range(3)]
    for i in range(3):
        await _run(queue, T + i * 100_000, i)
    failed = [await queue.add("f", i, now=T) for i in range(2)]
    for i in range(2):
        await _run_fail(queue, T + 400_000 + i * 100_000, f"r{i}")

    assert await queue.get_job_counts("completed", "failed") == {"completed": 3, "failed": 2}
    for i, job in enumerate(done):
        assert (await queue.finished_result(job.id)).value == i
    for i, job in enumerate(failed):
        assert (await queue.finished_result(job.id)).reason == f"r{i}"


async def test_false_keeps_everything(queue: JobQueue) -> None:
    jobs = [
        await queue.add("w", i, remove_on_complete=False, remove_on_fail=False, now=T)
        for i in range(2)
    ]
    await _run(queue, T + 1)
    await _run_fail(queue, T + 2)
    assert await queue.get_state(jobs[0].id) == "completed"
    assert await queue.get_state(jobs[1].id) == "failed"


async def test_retention_of_completed_does_not_touch_failed(queue: JobQueue) -> None:
    bad = await queue.add("f", now=T)
    await _run_fail(queue, T)
    good = await queue.add("c", remove_on_complete=True, now=T)
    await _run(queue, T + 1)
    assert await queue.get_job(good.id) is None
    assert await queue.get_state(bad.id) == "failed"


# ---------------------------------------------------------------------- fail


async def test_remove_on_fail_true_removes_the_failed_job(queue: JobQueue) -> None:
    job = await queue.add("w", remove_on_fail=True, now=T)
    await _run_fail(queue, T + 1, "nope")
    assert await queue.get_job(job.id) is None
    assert (await queue.finished_result(job.id)).status == "missing"
    assert await queue.get_job_counts("failed") == {"failed": 0}


async def test_remove_on_fail_keeps_the_job_while_it_is_retried(queue: JobQueue) -> None:
    job = await queue.add("w", remove_on_fail=True, attempts=2, now=T)
    [claimed] = await queue.claim("w1", now=T)
    assert await queue.fail(job.id, lock_token(claimed), "first", now=T) is True
    assert await queue.get_state(job.id) == "waiting"
    await _run_fail(queue, T + 1, "second")
    assert await queue.get_job(job.id) is None


async def test_remove_on_fail_keep_jobs_count(queue: JobQueue) -> None:
    jobs = [await queue.add("w", i, remove_on_fail=KeepJobs(count=1), now=T) for i in range(3)]
    for i in range(3):
        await _run_fail(queue, T + 1 + i)
    assert await _ids(queue, "failed") == [jobs[2].id]


async def test_remove_on_fail_integer_count(queue: JobQueue) -> None:
    jobs = [await queue.add("w", i, remove_on_fail=2, now=T) for i in range(3)]
    for i in range(3):
        await _run_fail(queue, T + 1 + i)
    assert await _ids(queue, "failed") == [jobs[1].id, jobs[2].id]


async def test_remove_on_fail_keep_jobs_age(queue: JobQueue) -> None:
    policy = KeepJobs(age=10.0)
    a = await queue.add("w", remove_on_fail=policy, now=T)
    b = await queue.add("w", remove_on_fail=policy, now=T)
    c = await queue.add("w", remove_on_fail=policy, now=T)
    await _run_fail(queue, T)
    await _run_fail(queue, T + 5_000)
    assert await _ids(queue, "failed") == [a.id, b.id]
    await _run_fail(queue, T + 12_000)
    assert await _ids(queue, "failed") == [b.id, c.id]


# ------------------------------------------------------------------- waiting


# A wait begun before the job finished (`waiting`) gets its outcome though retention deletes
# the job at once; one begun after raises JobNotFoundError (test_wait.py).


async def test_wait_returns_the_result_of_a_job_removed_on_complete(queue: JobQueue) -> None:
    job = await queue.add("w", remove_on_complete=True)
    waiter = await waiting(queue, job)
    [claimed] = await queue.claim("w1")
    await queue.complete(claimed.id, lock_token(claimed), {"answer": 42})
    assert await asyncio.wait_for(waiter, 1.0) == {"answer": 42}
    assert await queue.get_job(job.id) is None


async def test_wait_raises_failed_for_a_job_removed_on_fail(queue: JobQueue) -> None:
    job = await queue.add("w", remove_on_fail=True)
    waiter = await waiting(queue, job)
    [claimed] = await queue.claim("w1")
    await queue.fail(claimed.id, lock_token(claimed), "broken", retry=False)
    with pytest.raises(JobFailedError) as caught:
        await asyncio.wait_for(waiter, 1.0)
    assert caught.value.reason == "broken"
    assert await queue.get_job(job.id) is None


async def test_wait_raises_failed_for_a_stalled_out_job_removed_on_fail(
    queue: JobQueue,
) -> None:
    job = await queue.add("w", remove_on_fail=True, max_stalled_count=0, now=T)
    waiter = await waiting(queue, job, timeout=1.0)
    await queue.claim("w1", lease=1.0, now=T)
    recovered, failed = await queue.recover_stalled(now=T + 2_000)
    assert (recovered, failed) == ([], [job.id])
    assert await queue.get_job(job.id) is None

    with pytest.raises(JobFailedError) as caught:
        await waiter
    assert caught.value.reason == "job stalled more than allowable limit"
