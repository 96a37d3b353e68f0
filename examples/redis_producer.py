"""A producer process on Redis: adds jobs, then waits for their results, which a worker in
another process, possibly on another host (redis_worker.py), produces. The server's URL comes
from LANEMQ_REDIS_URL (default redis://127.0.0.1:6379/0).

    LANEMQ_REDIS_URL=redis://127.0.0.1:6379/0 python examples/redis_producer.py
    LANEMQ_REDIS_URL=redis://127.0.0.1:6379/0 python examples/redis_worker.py --until-idle
"""

from __future__ import annotations

import asyncio
import os
import sys

from lanemq import Dedup, RedisJobQueue

URL = os.environ.get("LANEMQ_REDIS_URL", "redis://127.0.0.1:6379/0")


async def main() -> int:
    queue = RedisJobQueue("invoices", URL)  # every process that names "invoices" shares it
    jobs = [
        await queue.add("render", {"invoice": n}, attempts=3, job_id=f"invoice:{n}")
        for n in (101, 102, 103)
    ]
    # A custom id makes adding idempotent: the same id again returns the job already there.
    again = await queue.add("render", {"invoice": 101}, job_id="invoice:101")
    print(f"producer: added {', '.join(job.id for job in jobs)}; the same id again: {again.id}")
    # Deduplication: while job "invoice:104" holds the key, adds with the same key add nothing.
    first = await queue.add("render", {"invoice": 104}, dedup=Dedup("customer:7"))
    second = await queue.add("render", {"invoice": 105}, dedup=Dedup("customer:7"))
    print(f"producer: key customer:7 is held by job {first.id}; a duplicate got {second.id}")
    jobs.append(first)

    print("producer: waiting for a worker (python examples/redis_worker.py)", flush=True)
    try:
        for job in jobs:
            print(f"producer: {job.id} -> {await job.wait(timeout=60)}")
    except TimeoutError as error:
        print(f"producer: {error}: is a worker running?")
        return 1
    finally:
        await queue.close()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
