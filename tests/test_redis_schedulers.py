"""Job schedulers on Redis beyond the conformance suite (tests/conformance/test_schedulers.py):
several processes upserting one key at once, and cron schedules whose precomputed run times
(the record's ``upcoming`` list, see lua/README.md) run out while no worker claims, checked
step by step against InMemoryJobQueue.

Every test uses its own key prefix on the session's redis-server."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from lanemq import InMemoryJobQueue, JobQueue, RedisJobQueue
from support import EPOCH_MS as T
from support import WAIT_FOR_GO, Spawn, redis_prefix, start_together

HOUR = 3_600_000


async def _pending(queue: JobQueue, key: str) -> list[str]:
    jobs = await queue.list_jobs(["waiting", "delayed"])
    return sorted(job.id for job in jobs if job.scheduler_key == key)


UPSERTER = (
    WAIT_FOR_GO
    + """
from lanemq import RedisJobQueue

async def main() -> None:
    queue = RedisJobQueue("sched", sys.argv[1], prefix=sys.argv[2])
    me = int(sys.argv[3])
    await wait_for_go()
    for j in range(40):
        # Repeats (kept as they are) mixed with changes of interval and of template (replaced),
        # of cron too (the record's upcoming list is replaced with the rest).
        if (me + j) % 5 == 4:
            schedule = {"cron": "*/2 * * * * *"}
        else:
            schedule = {"every": 1.0 + (me + j) % 3}
        await queue.upsert_scheduler("shared", **schedule, template=("tick", {"p": me, "j": j % 4}))
        if j % 7 == me:
            await queue.claim(f"w{me}", lease=60.0, max_jobs=5)
    print("done", flush=True)
    await queue.close()

asyncio.run(main())
"""
)


async def test_concurrent_upserts_from_several_processes_leave_one_pending_occurrence(
    redis_url: str, tmp_path: Path, spawn: Spawn
) -> None:
    prefix = redis_prefix()
    queue = RedisJobQueue("sched", redis_url, prefix=prefix)
    try:
        arguments = [(redis_url, prefix, str(me)) for me in range(4)]
        children = await start_together(spawn, UPSERTER, arguments, tmp_path / "go")
        done = await asyncio.gather(*(child.line(timeout=60.0) for child in children))
        assert done == ["done"] * 4, [child.stderr() for child in children]
        for child in children:
            assert await child.wait() == 0, child.stderr()

        [only] = await _pending(queue, "shared")
        scheduler = await queue.get_scheduler("shared")
        assert scheduler is not None
        assert scheduler.job_id == only
        job = await queue.get_job(only)
        assert job is not None
        assert (job.name, job.data) == (scheduler.name, scheduler.data)
        # Each claim started the pending occurrence and produced exactly one next one; upserts
        # replaced occurrences without counting them twice.
        active = await queue.list_jobs("active")
        assert active, "the children's claims started no occurrence"
        assert all(a.scheduler_key == "shared" for a in active)
        assert scheduler.iteration_count == 1 + len(active)
        counts = await queue.get_job_counts()
        assert counts["waiting"] + counts["delayed"] == 1, counts
        assert counts["completed"] == counts["failed"] == 0, counts
        events = [e.event for e in await queue.read_events()]
        assert events.count("removed") > 0, "no upsert replaced an occurrence"
        # Every occurrence added was either replaced, claimed, or is the pending one.
        assert events.count("added") == events.count("removed") + len(active) + 1
    finally:
        await queue.obliterate(force=True)
        await queue.close()


async def _step(queues: dict[str, JobQueue], now: int) -> list[tuple[str, Any]]:
    """Claims everything due on each queue at ``now``; returns what each then shows."""
    seen = []
    for name, queue in queues.items():
        # Sorted: an occurrence produced by a repair is created after those the claim script
        # produced, so among equal run times and priorities its FIFO place may differ.
        claimed = sorted(j.id for j in await queue.claim("w", lease=HOUR, max_jobs=10, now=now))
        schedulers = [
            (s.key, s.iteration_count, s.next_run, s.job_id) for s in await queue.list_schedulers()
        ]
        pending = {key: await _pending(queue, key) for key, *_ in schedulers}
        seen.append((name, (claimed, schedulers, pending)))
    return seen


async def test_cron_schedules_whose_upcoming_run_times_run_out_are_repaired_not_lost(
    redis_url: str,
) -> None:
    # A record carries 64 run times: a per-second pattern covers about a minute, so a worker
    # that claims again an hour later finds none left. The claim marks the record stale and
    # the client produces the next occurrence at once: the schedule goes on exactly as on the
    # memory backend, never lost and never replayed.
    memory = InMemoryJobQueue("cron-gaps")
    redis = RedisJobQueue("cron-gaps", redis_url, prefix=redis_prefix())
    queues: dict[str, JobQueue] = {"memory": memory, "redis": redis}
    try:
        for queue in queues.values():
            await queue.upsert_scheduler("second", cron="* * * * * *", template=("s", None), now=T)
            await queue.upsert_scheduler(
                "five", cron="*/5 * * * * *", end=T + 2 * HOUR, template=("f", None), now=T
            )
            await queue.upsert_scheduler(
                "limited", cron="*/2 * * * * *", limit=70, template=("l", None), now=T
            )
            await queue.upsert_scheduler("every", every=1.5, template=("e", None), now=T)
        # Claims a second apart (the lists are topped up as they shorten), then gaps longer
        # than a list's span, then a claim after the end of "five".
        times = [T + 1000 * i for i in range(1, 90)]
        times += [T + HOUR + 500, T + HOUR + 1500, T + 2 * HOUR - 3000, T + 2 * HOUR + 10]
        times += [T + 3 * HOUR + 999 + 1000 * i for i in range(70)]
        for now in times:
            (_, on_memory), (_, on_redis) = await _step(queues, now)
            assert on_redis == on_memory, now
        # "five" ended at its end, "limited" after 70 runs; the others go on.
        assert [s.key for s in await redis.list_schedulers()] == ["second", "every"]
        assert await redis.count_schedulers() == 2
    finally:
        for queue in queues.values():
            await queue.obliterate(force=True)
            await queue.close()
