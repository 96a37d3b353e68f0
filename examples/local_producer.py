"""A producer process on the local backend: adds jobs, then waits for their results, which a
worker in another process (local_worker.py) produces. Both open ./lanemq-data/thumbnails.sqlite3:
a durable SQLite file that the processes of one machine share; no server.

Run, in two terminals (from the same directory):

    python examples/local_producer.py
    python examples/local_worker.py --until-idle
"""

from __future__ import annotations

import asyncio
import sys

from lanemq import LocalJobQueue


async def main() -> int:
    queue = LocalJobQueue("thumbnails", "./lanemq-data")
    # One add per job (it returns once the job is in the file; retried up to 3 times) ...
    avatar = await queue.add("resize", {"image": "avatar.png", "width": 64}, attempts=3)
    # ... or several in one transaction (all or none).
    photos = await queue.add_bulk(
        [("resize", {"image": f"photo-{n}.jpg", "width": 640}) for n in range(1, 4)]
    )
    jobs = [avatar, *photos]
    for job in jobs:
        print(f"producer: added job {job.id}: resize {job.data['image']}", flush=True)

    print("producer: waiting for a worker (python examples/local_worker.py)", flush=True)
    try:
        for job in jobs:
            result = await job.wait(timeout=60)  # the worker's return value
            print(f"producer: job {job.id} done: {result}")
    except TimeoutError as error:
        print(f"producer: {error}: is a worker running?")
        return 1
    finally:
        await queue.close()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
