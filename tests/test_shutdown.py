"""Processes that use a backend whose calls finish on the async runtime (the local queue) and
then exit at once must exit cleanly: no runtime thread may touch Python while the interpreter
shuts down (a crash seen in about 5 % of such exits before results went through the hub)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = """
import asyncio, sys
from lanemq import JobWorker, LocalJobQueue

async def work(job):
    return job.data

async def main() -> None:
    queue = LocalJobQueue("exit", sys.argv[1])
    for i in range(10):
        await queue.add("job", i)
    worker = JobWorker(queue, work, concurrency=4)
    async with worker:
        while (await queue.get_job_counts("completed"))["completed"] < 10:
            await asyncio.sleep(0.001)
    await queue.get_job_counts()  # the last call, right before the interpreter exits

asyncio.run(main())
"""


def test_exit_right_after_runtime_calls_is_clean(tmp_path: Path) -> None:
    for run in range(20):
        done = subprocess.run(
            [sys.executable, "-c", SCRIPT, str(tmp_path / f"run{run}")],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, f"run {run}: exit {done.returncode}: {done.stderr[-2000:]}"
