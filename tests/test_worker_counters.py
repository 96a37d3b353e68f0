"""`JobWorker` counters: ``processed`` counts jobs completed, ``failed`` jobs failed for good
and ``attempts_failed`` every failed attempt (``failed`` used to count attempts)."""

from __future__ import annotations

import asyncio
import contextlib

from conformance.backends import queue_fixture
from lanemq import Backoff, Job, JobFailedError, JobQueue, JobWorker, UnrecoverableError

LIMIT = 10.0


queue = queue_fixture("memory", "local")


async def test_counters_count_jobs_and_attempts(queue: JobQueue) -> None:
    runs: dict[str, int] = {}

    async def work(job: Job) -> str:
        runs[job.data] = runs.get(job.data, 0) + 1
        if job.data == "flaky" and runs["flaky"] < 3:
            raise RuntimeError("not yet")
        if job.data == "broken":
            raise RuntimeError("always")
        if job.data == "hopeless":
            raise UnrecoverableError("never")
        return "ok"

    dead: list[str] = []
    failed_hook: list[str] = []
    worker = JobWorker(queue, {"work": work})
    worker.on("dead", lambda job, error: dead.append(job.data))
    worker.on("failed", lambda job, error: failed_hook.append(job.data))
    fast = Backoff.fixed(0.01)
    jobs = [
        await queue.add("work", "fine"),
        await queue.add("work", "flaky", attempts=3, backoff=fast),
        await queue.add("work", "broken", attempts=2, backoff=fast),
        await queue.add("work", "hopeless", attempts=5),
        await queue.add("nobody", "unknown name", attempts=5),
    ]
    async with worker:
        for job in jobs:
            with contextlib.suppress(JobFailedError):
                await asyncio.wait_for(job.wait(), LIMIT)

    states = [await queue.get_state(job.id) for job in jobs]
    assert states == ["completed", "completed", "failed", "failed", "failed"]
    assert worker.processed == 2  # fine, flaky
    assert worker.failed == 3  # broken, hopeless, unknown name: one each, however many tries
    assert worker.attempts_failed == 6  # flaky 2, broken 2, hopeless 1, unknown name 1
    assert len(failed_hook) == worker.attempts_failed
    assert sorted(dead) == ["broken", "hopeless", "unknown name"]
