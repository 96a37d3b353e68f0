"""``JobWorker(..., unknown_name_retries=N, unknown_name_delay=s)``: a job whose name has no
processor is moved back to delayed at most N times in all (across workers), then failed;
each postponement goes to the ``error`` hook. Without the option it fails at once (the
conformance suite checks that default)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from conformance.backends import queue_fixture
from lanemq import (
    ConfigError,
    Job,
    JobFailedError,
    JobQueue,
    JobWorker,
    UnknownJobNameWarning,
    UnrecoverableError,
)

LIMIT = 10.0


queue = queue_fixture("memory", "local", "redis")


async def old_code(job: Job) -> str:
    return "old"


def old_worker(queue: JobQueue, errors: list[BaseException], **options: Any) -> JobWorker:
    worker = JobWorker(queue, {"old": old_code}, **options)
    worker.on("error", errors.append)
    return worker


async def test_postponed_at_most_n_times_then_failed(queue: JobQueue) -> None:
    errors: list[BaseException] = []
    dead: list[BaseException] = []
    worker = old_worker(queue, errors, unknown_name_retries=2, unknown_name_delay=0.05)
    worker.on("dead", lambda job, error: dead.append(error))
    job = await queue.add("new", {"k": 1}, attempts=1)
    async with worker:
        with pytest.raises(JobFailedError) as caught:
            await asyncio.wait_for(job.wait(), LIMIT)

    assert "no processor for job name 'new'" in caught.value.reason
    assert "postponed 2 times" in caught.value.reason
    assert [type(e) for e in errors] == [UnknownJobNameWarning, UnknownJobNameWarning]
    first, second = errors
    assert isinstance(first, UnknownJobNameWarning) and isinstance(second, UnknownJobNameWarning)
    assert (first.job_id, first.name, first.postponement, first.limit) == (job.id, "new", 1, 2)
    assert second.postponement == 2 and second.delay == 0.05
    assert "no processor for job name 'new'" in str(first)
    assert len(dead) == 1 and isinstance(dead[0], UnrecoverableError)
    stored = await queue.get_job(job.id)
    assert stored is not None
    # The postponements used no attempt: the final failure is the job's first and only one.
    assert (stored.state, stored.attempts_made, stored.data) == ("failed", 1, {"k": 1})
    lines, count = await queue.get_logs(job.id)
    assert count == 2
    assert all("no processor for job name 'new'" in line for line in lines)
    assert (worker.failed, worker.attempts_failed, worker.processed) == (1, 1, 0)


async def test_postponements_are_counted_across_workers(queue: JobQueue) -> None:
    errors_a: list[BaseException] = []
    errors_b: list[BaseException] = []
    options = {"unknown_name_retries": 3, "unknown_name_delay": 0.0}
    job = await queue.add("new", None)
    a = old_worker(queue, errors_a, **options)
    assert await asyncio.wait_for(a.run_once(), LIMIT) == 0  # postponed: nothing processed
    assert await queue.get_state(job.id) in ("delayed", "waiting")
    b = old_worker(queue, errors_b, **options)  # another worker, as in another process
    assert await asyncio.wait_for(b.run_until_idle(), LIMIT) == 1  # 2 more, then failed

    assert [e.postponement for e in errors_a if isinstance(e, UnknownJobNameWarning)] == [1]
    assert [e.postponement for e in errors_b if isinstance(e, UnknownJobNameWarning)] == [2, 3]
    stored = await queue.get_job(job.id)
    assert stored is not None
    assert stored.state == "failed"
    assert stored.failed_reason is not None and "postponed 3 times" in stored.failed_reason
    assert (await queue.get_logs(job.id))[1] == 3


async def test_a_newer_worker_picks_up_what_an_older_one_postponed(queue: JobQueue) -> None:
    errors: list[BaseException] = []
    job = await queue.add("new", 21, attempts=1)
    old = old_worker(queue, errors, unknown_name_retries=5, unknown_name_delay=0.0)
    assert await asyncio.wait_for(old.run_once(), LIMIT) == 0

    async def new_code(job: Job) -> int:
        return int(job.data) * 2

    new = JobWorker(queue, {"old": old_code, "new": new_code})
    assert await asyncio.wait_for(new.run_until_idle(), LIMIT) == 1
    assert (await queue.finished_result(job.id)).value == 42
    stored = await queue.get_job(job.id)
    assert stored is not None
    assert (stored.state, stored.attempts_made) == ("completed", 1)
    assert len(errors) == 1


async def test_jobs_with_a_processor_are_untouched(queue: JobQueue) -> None:
    errors: list[BaseException] = []
    worker = old_worker(queue, errors, unknown_name_retries=3)
    job = await queue.add("old", None)
    assert await asyncio.wait_for(worker.run_until_idle(), LIMIT) == 1
    assert (await queue.finished_result(job.id)).value == "old"
    assert errors == []
    assert await queue.get_logs(job.id) == ([], 0)


@pytest.mark.parametrize(
    "settings",
    [
        {"unknown_name_retries": -1},
        {"unknown_name_retries": 1.5},
        {"unknown_name_retries": True},
        {"unknown_name_delay": -1},
        {"unknown_name_delay": float("nan")},
        {"unknown_name_delay": "5"},
    ],
    ids=repr,
)
async def test_invalid_settings_are_refused(queue: JobQueue, settings: dict[str, Any]) -> None:
    with pytest.raises(ConfigError) as caught:
        JobWorker(queue, old_code, **settings)
    [name] = settings
    assert name in str(caught.value)
