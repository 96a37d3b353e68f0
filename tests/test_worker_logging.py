"""The worker logs under ``lanemq.worker`` (a child of ``lanemq``, which has a NullHandler):
job start and completion at DEBUG, failures at WARNING with the reason and whether the job
will retry, recovered stalls at WARNING, close and grace expiry at INFO / WARNING."""

from __future__ import annotations

import asyncio
import logging

import pytest
from conformance.backends import queue_fixture
from lanemq import Job, JobFailedError, JobQueue, JobWorker

LIMIT = 10.0


queue = queue_fixture("memory", "local")


def records(caplog: pytest.LogCaptureFixture, level: int) -> list[str]:
    return [
        r.getMessage() for r in caplog.records if r.name == "lanemq.worker" and r.levelno == level
    ]


def test_the_package_logger_has_a_null_handler() -> None:
    handlers = logging.getLogger("lanemq").handlers
    assert any(isinstance(h, logging.NullHandler) for h in handlers)
    assert logging.getLogger("lanemq.worker").parent is logging.getLogger("lanemq")


async def test_start_and_completion_at_debug_with_duration(
    queue: JobQueue, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="lanemq")

    async def work(job: Job) -> str:
        return "ok"

    worker = JobWorker(queue, work, name="w-log")
    job = await queue.add("send", None)
    assert await asyncio.wait_for(worker.run_until_idle(), LIMIT) == 1
    debug = records(caplog, logging.DEBUG)
    assert f"worker w-log: job {job.id} (send) started, attempt 1" in debug
    [done] = [m for m in debug if "completed" in m]
    assert done.startswith(f"worker w-log: job {job.id} (send) completed in ")
    assert done.endswith("s")
    assert records(caplog, logging.WARNING) == []


async def test_nothing_per_job_below_the_level(
    queue: JobQueue, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="lanemq")

    async def work(job: Job) -> str:
        return "ok"

    worker = JobWorker(queue, work)
    await queue.add_bulk([("j", i) for i in range(5)])
    assert await asyncio.wait_for(worker.run_until_idle(), LIMIT) == 5
    assert [r for r in caplog.records if r.name == "lanemq.worker"] == []


async def test_failures_at_warning_with_reason_and_retry(
    queue: JobQueue, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="lanemq")

    async def work(job: Job) -> None:
        raise ValueError(f"bad {job.data}")

    worker = JobWorker(queue, work, name="w-fail")
    job = await queue.add("parse", "x", attempts=2)
    assert await asyncio.wait_for(worker.run_until_idle(), LIMIT) == 2
    assert records(caplog, logging.WARNING) == [
        f"worker w-fail: job {job.id} (parse) failed, attempt 1: ValueError: bad x; will retry",
        f"worker w-fail: job {job.id} (parse) failed, attempt 2: ValueError: bad x; "
        "failed for good",
    ]


async def test_recovered_stalls_at_warning(
    queue: JobQueue, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="lanemq")

    async def work(job: Job) -> str:
        return "ok"

    job = await queue.add("s", None)
    await queue.claim("dead-worker", lease=0.05)  # never finished
    worker = JobWorker(queue, work, stalled_interval=0.05, name="w-stall")
    async with worker:
        assert await asyncio.wait_for(job.wait(), LIMIT) == "ok"
    assert f"worker w-stall: 1 stalled job(s) back to waiting (lease expired): {job.id}" in records(
        caplog, logging.WARNING
    )


async def test_close_and_grace_expiry(queue: JobQueue, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="lanemq")
    started = asyncio.Event()

    async def slow(job: Job) -> None:
        started.set()
        await asyncio.sleep(60)

    worker = JobWorker(queue, slow, name="w-close")
    await queue.add("slow", None)
    task = asyncio.get_running_loop().create_task(worker.run())
    await asyncio.wait_for(started.wait(), LIMIT)
    await asyncio.wait_for(worker.close(grace=0.05), LIMIT)
    await task
    info = records(caplog, logging.INFO)
    assert any(m.startswith("worker w-close: running on queue") for m in info), info
    assert "worker w-close: closing (grace 0.05s) with 1 job(s) running" in info
    assert any(m.startswith("worker w-close: stopped") for m in info), info
    warnings = records(caplog, logging.WARNING)
    assert any("stopping with 1 job(s) still running" in m for m in warnings), warnings
    assert not any("failed" in m for m in warnings)  # released, not failed


async def test_timeouts_are_logged_as_failures(
    queue: JobQueue, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="lanemq")

    async def slow(job: Job) -> None:
        await asyncio.sleep(60)

    worker = JobWorker(queue, slow, name="w-timeout")
    job = await queue.add("slow", None, timeout=0.05)
    async with worker:
        with pytest.raises(JobFailedError):
            await asyncio.wait_for(job.wait(), LIMIT)
    [message] = records(caplog, logging.WARNING)
    assert "TimeoutError: job" in message and "timed out after 0.05s" in message
    assert message.endswith("failed for good")
