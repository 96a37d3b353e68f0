"""A worker process on Redis: runs the jobs redis_producer.py adds (see there). Start as many
as you like, on any host that reaches the server: each job runs once, in one of them.

    python examples/redis_worker.py               # runs until Ctrl-C
    python examples/redis_worker.py --until-idle  # runs what is there, then stops
"""

from __future__ import annotations

import argparse
import asyncio
import os
from typing import Any

from lanemq import Job, JobWorker, RedisJobQueue

URL = os.environ.get("LANEMQ_REDIS_URL", "redis://127.0.0.1:6379/0")


async def render(job: Job) -> dict[str, Any]:
    await job.update_progress(50)  # progress and logs are stored with the job
    await job.log(f"rendering invoice {job.data['invoice']}")
    await asyncio.sleep(0.05)  # stands in for the real work
    print(f"worker: rendered invoice {job.data['invoice']}", flush=True)
    return {"pdf": f"invoice-{job.data['invoice']}.pdf"}


async def main(until_idle: bool) -> None:
    queue = RedisJobQueue("invoices", URL)
    worker = JobWorker(queue, {"render": render}, concurrency=8)
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
