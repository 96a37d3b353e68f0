"""A producer process of the fault tests: adds jobs to a local queue as fast as it can until
it is killed, and appends to a log (O_APPEND, one write(2) a line) ``added <id>`` each time
``add`` returned, or ``begin <batch>`` before and ``bulk <batch> <n>`` after each
``add_bulk`` of 50 jobs (their data name the trial and the batch). Prints ``ready`` first."""

from __future__ import annotations

import asyncio
import os
import sys

import lanemq

BULK = 50


async def main() -> None:
    url, name, log_path, mode, trial = sys.argv[1:6]
    queue = lanemq.from_url(url, name)
    log = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    await queue.get_job_counts("waiting")  # opened before the clock starts
    print("ready", flush=True)
    n = 0
    while True:
        if mode == "add":
            job = await queue.add("work", {"trial": trial, "n": n})
            os.write(log, f"added {job.id}\n".encode())
        else:
            os.write(log, f"begin {trial}:{n}\n".encode())
            jobs = [("work", {"batch": f"{trial}:{n}", "i": i}) for i in range(BULK)]
            added = await queue.add_bulk(jobs)
            os.write(log, f"bulk {trial}:{n} {len(added)}\n".encode())
        n += 1


asyncio.run(main())
