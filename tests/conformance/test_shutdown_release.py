"""A job a closing worker gives back (``close(grace=...)`` running out, SIGTERM's path) goes
back to waiting as if it had never started: no start time, no progress of the interrupted
run, no attempt used; a worker that takes it later starts it afresh."""

from __future__ import annotations

import asyncio
import contextlib

from lanemq import Job, JobQueue, JobWorker

LIMIT = 5.0  # upper bound for anything awaited; a healthy run needs a small fraction of it


async def test_a_job_released_at_shutdown_keeps_no_start_time_or_progress(
    queue: JobQueue,
) -> None:
    fresh = await queue.add("report", {"n": 1})
    halfway = asyncio.Event()

    async def interrupted(job: Job) -> None:
        await job.update_progress({"done": 50})
        halfway.set()
        await asyncio.Event().wait()  # until the close cancels it

    worker = JobWorker(queue, interrupted, concurrency=1)
    task = asyncio.get_running_loop().create_task(worker.run())
    try:
        await asyncio.wait_for(halfway.wait(), LIMIT)
        running = await queue.get_job(fresh.id)
        assert running is not None and running.processed_on is not None
        assert running.progress == {"done": 50}
        await asyncio.wait_for(worker.close(grace=0), LIMIT)
        task.result()
    finally:
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    released = await queue.get_job(fresh.id)
    assert released is not None and released.state == "waiting"
    assert released.processed_on is None
    assert released.progress == fresh.progress
    assert released.attempts_made == 0
    assert released.finished_on is None and released.failed_reason is None

    # The next run starts from nothing and gets a start time of its own.
    seen: list[object] = []

    async def rerun(job: Job) -> str:
        seen.append(job.progress)
        return "ok"

    second = JobWorker(queue, rerun, concurrency=1)
    assert await asyncio.wait_for(second.run_until_idle(), LIMIT) >= 1
    await second.close()
    done = await queue.get_job(fresh.id)
    assert done is not None and done.state == "completed"
    assert seen == [fresh.progress]
    assert done.processed_on is not None
