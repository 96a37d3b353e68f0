"""The blocking API (lanemq.sync) for code without an event loop: Flask or Django views,
scripts, threads. It adds the same jobs as local_producer.py, from four threads at once, and
waits for the results that local_worker.py (another process) produces.

    python examples/sync_producer.py
    python examples/local_worker.py --until-idle
"""

from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor

from lanemq.sync import LocalJobQueue, SyncJob

# One SyncQueue per process, shared by every thread (as a Flask app would keep it): it runs
# the async queue on a private event loop in a background thread.
queue = LocalJobQueue("thumbnails", "./lanemq-data")


def request_thumbnail(image: str) -> SyncJob:  # what a view would do
    return queue.add("resize", {"image": image, "width": 128}, attempts=2)


def main() -> int:
    with queue, ThreadPoolExecutor(max_workers=4) as pool:
        jobs = list(pool.map(request_thumbnail, [f"upload-{n}.png" for n in range(1, 5)]))
        print("sync producer: added jobs", ", ".join(job.id for job in jobs), flush=True)
        print("sync producer: counts", queue.get_job_counts("waiting", "active"), flush=True)
        print("sync producer: waiting for a worker (python examples/local_worker.py)", flush=True)
        try:
            for job in jobs:
                print(f"sync producer: job {job.id} done: {job.wait(timeout=60)}")
        except TimeoutError as error:
            print(f"sync producer: {error}: is a worker running?")
            return 1
        print("sync producer: state of the first job now:", jobs[0].refresh().state)
    return 0


if __name__ == "__main__":
    sys.exit(main())
