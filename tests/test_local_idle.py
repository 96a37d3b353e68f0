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
    queue = LocalJobQueue("idle", sys.argv[1])
    job = await queue.add("hello", {"from": "elsewhere"})
    print(job.id, flush=True)
    await queue.close()

asyncio.run(main())
"""


async def test_idle_waits_use_no_cpu_and_still_wake_for_a_job_of_another_process(
    tmp_path: Path, spawn: Spawn
) -> None:
    queue = LocalJobQueue("idle", tmp_path)
    seen: list[str] = []

    async def hello(job: Job) -> str:
        return f"hello {job.data['from']}"

    async def follow() -> None:
        async for event in queue.events():
            seen.append(event.event)

    worker = JobWorker(queue, hello, concurrency=10)
    waits = [asyncio.create_task(follow()), asyncio.create_task(queue.wait_for_job(timeout=60))]
    async with worker:
        await asyncio.sleep(0.3)  # past start-up
        cpu = time.process_time()
        await asyncio.sleep(IDLE_SECONDS)
        used = time.process_time() - cpu
        assert used < MOST_CPU_WHILE_IDLE, f"idle waits used {used:.2f}s of CPU in {IDLE_SECONDS}s"

        child = await spawn(ADD_ONE, str(tmp_path))
        job_id = await child.line()
        assert job_id, child.stderr()
        job = await queue.get_job(job_id)
        assert job is not None
        assert await job.wait(timeout=10.0) == "hello elsewhere"
        # The wait for a job returned when the other process's job arrived.
        assert await asyncio.wait_for(waits[1], 10.0) is True
    waits[0].cancel()
    assert "completed" in seen
    await queue.close()
