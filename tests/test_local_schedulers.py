"""Job schedulers on a LocalJobQueue file shared by several processes: each upsert and each
claim decides inside one SQLite transaction from what is in the file, so processes racing on
one key never leave more (or less) than one pending occurrence. The single-process contract is
covered by the conformance suite (tests/conformance/test_schedulers.py)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from lanemq import LocalJobQueue
from support import WAIT_FOR_GO, Spawn, start_together

UPSERTER = (
    WAIT_FOR_GO
    + """
from lanemq import LocalJobQueue

async def main() -> None:
    queue = LocalJobQueue("sched", sys.argv[1])
    me = int(sys.argv[2])
    await wait_for_go()
    for j in range(40):
        # Repeats (kept as they are) mixed with changes of interval and of template (replaced).
        every, data = 1.0 + (me + j) % 3, {"p": me, "j": j % 4}
        await queue.upsert_scheduler("shared", every=every, template=("tick", data))
        if j % 7 == me:
            await queue.claim(f"w{me}", lease=60.0, max_jobs=5)
    print("done", flush=True)
    await queue.close()

asyncio.run(main())
"""
)


async def test_concurrent_upserts_from_several_processes_leave_one_pending_occurrence(
    tmp_path: Path, spawn: Spawn
) -> None:
    queue = LocalJobQueue("sched", tmp_path)

    async def pending() -> list[str]:
        jobs = await queue.list_jobs(["waiting", "delayed"])
        return [job.id for job in jobs if job.scheduler_key == "shared"]

    arguments = [(str(tmp_path), str(me)) for me in range(4)]
    children = await start_together(spawn, UPSERTER, arguments, tmp_path / "go")

    # While they race, every look at the file (one transaction) sees at most one pending
    # occurrence, and exactly one once the scheduler exists.
    done = asyncio.gather(*(child.line(timeout=30.0) for child in children))
    looks = 0
    while not done.done():
        seen = await pending()
        scheduler = await queue.get_scheduler("shared")
        assert len(seen) <= 1, seen
        looks += 1
        if scheduler is not None:
            assert len(await pending()) == 1
        await asyncio.sleep(0.01)
    assert await done == ["done"] * 4, [child.stderr() for child in children]
    for child in children:
        assert await child.wait() == 0, child.stderr()
    assert looks > 0

    [only] = await pending()
    scheduler = await queue.get_scheduler("shared")
    assert scheduler is not None
    assert scheduler.job_id == only
    job = await queue.get_job(only)
    assert job is not None
    assert (job.name, job.data) == (scheduler.name, scheduler.data)
    assert scheduler.every in (1.0, 2.0, 3.0)
    # Each claim started the pending occurrence and produced exactly one next one; upserts
    # replaced occurrences without counting them twice.
    active = await queue.list_jobs("active")
    assert active, "the children's claims started no occurrence"
    assert all(a.scheduler_key == "shared" for a in active)
    assert scheduler.iteration_count == 1 + len(active)
    events = [e.event for e in await queue.read_events()]
    assert events.count("removed") > 0, "no upsert replaced an occurrence"
    await queue.close()
