"""Job schedulers: a job produced on an interval (here every 0.2 s, three times) and one on a
cron pattern in a time zone. Each occurrence is a normal job, delayed until its run time, with
the id repeat:<key>:<run time ms>; the next one is produced when a worker starts the pending
one. The same calls work on LocalJobQueue and RedisJobQueue.

    python examples/schedulers.py
"""

from __future__ import annotations

import asyncio
import itertools
from datetime import datetime, timezone

from lanemq import InMemoryJobQueue, Job, JobWorker


async def main() -> None:
    queue = InMemoryJobQueue("maintenance")
    runs: list[Job] = []
    three_done = asyncio.Event()

    async def heartbeat(job: Job) -> None:
        runs.append(job)
        print(f"ran {job.id} ({job.data['service']})")
        if len(runs) == 3:
            three_done.set()

    # Every 0.2 s, at most 3 times (the first at once); then the scheduler removes itself.
    first = await queue.upsert_scheduler(
        "heartbeat", every=0.2, limit=3, template=("heartbeat", {"service": "api"})
    )
    print("pending occurrence:", first.id, first.state)

    # 09:00 on weekdays, Berlin time; nothing runs it here, we only look at it.
    await queue.upsert_scheduler(
        "weekday-report", cron="0 9 * * 1-5", tz="Europe/Berlin", template=("report", {})
    )
    report = await queue.get_scheduler("weekday-report")
    assert report is not None
    next_run = datetime.fromtimestamp(report.next_run / 1000, timezone.utc)
    print(f"weekday-report: next run {next_run:%a %Y-%m-%d %H:%M} UTC (cron {report.cron})")

    async with JobWorker(queue, {"heartbeat": heartbeat}):
        await asyncio.wait_for(three_done.wait(), timeout=10)
    times = [int(job.id.rsplit(":", 1)[1]) for job in runs]  # the run time in each id
    print("seconds between run times:", [(b - a) / 1000 for a, b in itertools.pairwise(times)])
    print("heartbeat scheduler after its limit:", await queue.get_scheduler("heartbeat"))
    print("schedulers left:", [s.key for s in await queue.list_schedulers()])
    await queue.remove_scheduler("weekday-report")
    print("after remove_scheduler:", await queue.count_schedulers(), "schedulers")


if __name__ == "__main__":
    asyncio.run(main())
