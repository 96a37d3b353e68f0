"""An idle LocalJobQueue costs nothing: its waits (a worker's, `wait_for_job`, an `events()`
subscriber, `job.wait()`) sleep until a commit, of this process or another, may have changed
what they wait for. Before the doorbell each wait's own check woke it again, and an idle worker
used three quarters of a core. (The figures, idle CPU and cross-process wake-up time, are
measured by `benches/idle_wake.py`; this is the regression test, with a wide margin.)"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from lanemq import Job, JobWorker, LocalJobQueue
from support import Spawn

IDLE_SECONDS = 2.0
# An idle process uses next to no CPU; the spinning waits used ~0.75 s of CPU per second.
MOST_CPU_WHILE_IDLE = 0.25 * IDLE_SECONDS

ADD_ONE = """
import asyncio, sys
from lanemq import LocalJobQueue

async def main() -> None:
    queue = LocalJobQueue(sys.argv[2], sys.argv[1])
    job = await queue.add("hello", {"from": "elsewhere"})
    print(job.id, flush=True)
    await queue.close()

asyncio.run(main())
"""


async def test_idle_waits_use_no_cpu_and_still_wake_for_a_job_of_another_process(
    tmp_path: Path, spawn: Spawn
) -> None:
    queue = LocalJobQueue("idle", tmp_path)
    unworked = LocalJobQueue("unworked", tmp_path)
    completed = asyncio.Event()

    async def hello(job: Job) -> str:
        return f"hello {job.data['from']}"

    async def follow() -> None:
        async for event in queue.events():
            if event.event == "completed":
                completed.set()
                return

    worker = JobWorker(queue, hello, concurrency=10)
    follower = asyncio.create_task(follow())
    waiting = asyncio.create_task(unworked.wait_for_job(timeout=60))
    async with worker:
        await asyncio.sleep(0.3)  # past start-up
        cpu = time.process_time()
        await asyncio.sleep(IDLE_SECONDS)
        used = time.process_time() - cpu
        assert used < MOST_CPU_WHILE_IDLE, f"idle waits used {used:.2f}s of CPU in {IDLE_SECONDS}s"

        # Each wait wakes for a job another process adds.
        child = await spawn(ADD_ONE, str(tmp_path), "idle")
        job_id = await child.line()
        assert job_id, child.stderr()
        job = await queue.get_job(job_id)
        assert job is not None
        assert await job.wait(timeout=10.0) == "hello elsewhere"
        await asyncio.wait_for(completed.wait(), 10.0)
        await asyncio.wait_for(follower, 10.0)
        assert not waiting.done()
        child = await spawn(ADD_ONE, str(tmp_path), "unworked")
        assert await child.line(), child.stderr()
        assert await asyncio.wait_for(waiting, 10.0) is True
    await queue.close()
    await unworked.close()
