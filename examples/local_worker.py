"""A worker process on the local backend: runs the jobs local_producer.py adds (see there).
Run it from the same directory as the producer:

    python examples/local_worker.py               # runs until Ctrl-C
    python examples/local_worker.py --until-idle  # runs what is there, then stops
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from lanemq import Job, JobQueue, JobWorker, LocalJobQueue


async def resize(job: Job) -> dict[str, Any]:
    await asyncio.sleep(0.05)  # stands in for the real work
    print(f"worker: resized {job.data['image']} to {job.data['width']}px", flush=True)
    return {"image": job.data["image"], "width": job.data["width"]}


async def wait_until_idle(queue: JobQueue) -> None:
    """Returns once no job is waiting, delayed or active."""
    # (a poll every 0.1 s: fine for a demo, and robust to jobs added by other processes)
    while any((await queue.get_job_counts("waiting", "delayed", "active")).values()):  # noqa: ASYNC110
        await asyncio.sleep(0.1)


async def main(until_idle: bool) -> None:
    queue = LocalJobQueue("thumbnails", "./lanemq-data")
    worker = JobWorker(queue, {"resize": resize}, concurrency=4)
    async with worker:  # claims and runs jobs in the background until closed
        if until_idle:
            await wait_until_idle(queue)
        else:
            await asyncio.Event().wait()  # until Ctrl-C
    # (leaving `async with` lets running jobs finish and reports them)
    print(f"worker: processed {worker.processed} jobs")
    await queue.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--until-idle", action="store_true", help="stop once nothing is left")
    asyncio.run(main(parser.parse_args().until_idle))
