"""A job the worker gives back that is no longer its own (stalled recovery took it, or it was
removed) is refused by the queue: the worker logs that and tells its ``error`` hooks once, and
goes on; it does not try the release again on every turn."""

from __future__ import annotations

import asyncio
import time

from lanemq import InMemoryJobQueue, Job, JobStateError, JobWorker, RateLimitError

LIMIT = 5.0


async def test_a_release_refused_because_recovery_took_the_job_is_not_retried() -> None:
    queue = InMemoryJobQueue("taken")
    runs: list[int] = []

    async def work(job: Job) -> str:
        runs.append(job.attempts_started)
        if len(runs) == 1:
            # As if this worker had stalled: recovery elsewhere takes the job back ...
            later = int(time.time() * 1000) + 60_000
            assert await queue.recover_stalled(now=later) == ([job.id], [])
            raise RateLimitError()  # ... and then the worker gives it back
        return "ran again"

    errors: list[BaseException] = []
    worker = JobWorker(queue, work)
    worker.on("error", errors.append)
    job = await queue.add("work", None)
    assert await asyncio.wait_for(worker.run_until_idle(), LIMIT) == 1
    assert await job.wait(timeout=LIMIT) == "ran again"
    assert runs == [1, 1]  # the recovered job ran once more, its attempt given back
    assert [type(e) for e in errors] == [JobStateError], errors
