"""A worker process on the local backend: runs the jobs local_producer.py adds (see there).
Run it from the same directory as the producer:

    python examples/local_worker.py               # runs until Ctrl-C
    python examples/local_worker.py --until-idle  # runs what is there, then stops
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from lanemq import Job, JobWorker, LocalJobQueue


async def resize(job: Job) -> dict[str, Any]:
    await asyncio.sleep(0.05)  # stands in for the real work
    print(f"worker: resized {job.data['image']} to {job.data['width']}px", flush=True)
    return {"image": job.data["image"], "width": job.data["width"]}


async def main(until_idle: bool) -> None:
    queue = LocalJobQueue("thumbnails", "./lanemq-data")
    worker = JobWorker(queue, {"resize": resize}, concurrency=4)
    if until_idle:
        processed = await worker.run_until_idle()  # what is ready, then return
    else:
        await worker.run()  # until Ctrl-C
        processed = worker.processed  # (not reached: Ctrl-C ends it with KeyboardInterrupt)
    print(f"worker: processed {processed} jobs")
    await queue.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--until-idle", action="store_true", help="stop once nothing is left")
    try:
        asyncio.run(main(parser.parse_args().until_idle))
    except KeyboardInterrupt:  # (after run() let the running jobs finish)
        print("worker: stopped")
