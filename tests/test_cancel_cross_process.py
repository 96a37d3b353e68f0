"""`JobQueue.cancel` reaches a worker in another process: the request is pushed there (the
cross-process wake-up on a local queue, the queue's stream on Redis), the worker cancels the
processor's task (its ``finally`` writes a marker file) and fails the job for good with the
reason, which `job.wait()` in this process raises as `JobCancelledError`, all within 2 s.

The Redis case needs the Redis backend's cancellation (another branch); it fails until then."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import lanemq
import pytest
from lanemq import JobCancelledError, JobQueue
from support import Spawn, redis_prefix, wait_until

CHILD = """
import asyncio, sys
from pathlib import Path
import lanemq

url, name, prefix, started, stopped = sys.argv[1:6]

async def main() -> None:
    options = {} if url.startswith("local:") else {"prefix": prefix}
    queue = lanemq.from_url(url, name, **options)

    async def long(job: lanemq.Job) -> None:
        Path(started).write_text(job.id)
        try:
            await asyncio.sleep(60)
        finally:
            Path(stopped).write_text(job.id)

    worker = lanemq.JobWorker(queue, {"long": long})
    if isinstance(queue, lanemq.RedisJobQueue):
        await queue.connect()
    running = asyncio.create_task(worker.run())
    await asyncio.sleep(0)
    print("ready", flush=True)
    await running

asyncio.run(main())
"""

BOUND = 2.0  # seconds from cancel() to the marker and the failure: generous (1 s is the aim)


@pytest.mark.parametrize("backend", ["local", "redis"])
async def test_cancel_stops_a_job_running_in_another_process(
    backend: str, tmp_path: Path, spawn: Spawn, request: pytest.FixtureRequest
) -> None:
    if backend == "local":
        url, prefix = f"local:{tmp_path / 'queues'}", "-"
        queue: JobQueue = lanemq.from_url(url, "far")
    else:
        url, prefix = str(request.getfixturevalue("redis_url")), redis_prefix()
        queue = lanemq.from_url(url, "far", prefix=prefix)
        assert isinstance(queue, lanemq.RedisJobQueue)
        await queue.connect()
    started, stopped = tmp_path / "started", tmp_path / "stopped"
    child = await spawn(CHILD, url, "far", prefix, str(started), str(stopped))
    assert await child.line() == "ready", child.stderr()
    try:
        job = await queue.add("long", None, attempts=3)
        await wait_until(started.exists, "the job to start in the child")

        asked = time.monotonic()
        assert await queue.cancel(job.id, reason="stopped from afar") == "requested"
        with pytest.raises(JobCancelledError, match="stopped from afar"):
            await asyncio.wait_for(job.wait(), BOUND)
        await wait_until(stopped.exists, "the processor's finally", timeout=BOUND)
        assert time.monotonic() - asked < BOUND
        assert stopped.read_text() == job.id

        stored = await queue.get_job(job.id)
        assert stored is not None and stored.state == "failed"
        assert stored.failed_reason == "stopped from afar"
        assert stored.attempts_made == 1  # not retried
    finally:
        child.kill()
        if isinstance(queue, lanemq.RedisJobQueue):
            await queue.obliterate(force=True)
            await queue.close()
