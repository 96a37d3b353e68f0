"""Steps many conformance modules take, through the public API only."""

from __future__ import annotations

import asyncio
from typing import Any

from lanemq import Job, JobQueue
from support import EPOCH_MS


async def claim_one(queue: JobQueue, now: int, lease: float = 30.0, worker: str = "w") -> Job:
    """Claims exactly one job (the test's queue holds one claimable job)."""
    claimed = await queue.claim(worker, lease=lease, now=now)
    assert len(claimed) == 1, claimed
    return claimed[0]


async def stored_job(queue: JobQueue, job_id: str) -> Job:
    """The job as the queue holds it now; it must exist."""
    job = await queue.get_job(job_id)
    assert job is not None, f"job {job_id} is gone"
    return job


def lock_token(job: Job) -> str:
    """The token of the claim that returned ``job``; a claimed job must carry one."""
    token = job.lock_token
    assert token, f"job {job.id} carries no lock token"
    return token


async def waiting(queue: JobQueue, job: Job, timeout: float = 5.0) -> asyncio.Task[Any]:
    """``job.wait(timeout)`` in a task, once the wait has begun: it has taken its starting
    point, so a finish after this returns is one it reports. A few turns of the loop let the
    task send its first look; a read of the test's own goes the same way (on Redis, the
    ordinary connection; claims and finishes take the wire, which could overtake it) and is
    answered after it."""
    waiter = asyncio.create_task(job.wait(timeout))
    for _ in range(5):
        await asyncio.sleep(0)
    await queue.get_state(job.id)
    return waiter


async def claim_all(queue: JobQueue, now: int = EPOCH_MS) -> list[Job]:
    """Claims every job claimable at ``now`` (up to 100), with a minute's lease."""
    return await queue.claim("w", lease=60.0, max_jobs=100, now=now)


async def finish_named(
    queue: JobQueue, name: str, now: int = EPOCH_MS, *, fail: bool = False
) -> Job:
    """Claims every job claimable now, finishes the one called ``name`` (with its name as
    its value, or failed), releases the others."""
    jobs = await claim_all(queue, now)
    assert name in [j.name for j in jobs], [j.name for j in jobs]
    for job in jobs:
        assert job.lock_token is not None
        if job.name != name:
            await queue.release(job.id, job.lock_token, now=now)
        elif fail:
            await queue.fail(job.id, job.lock_token, "boom", retry=False, now=now)
        else:
            await queue.complete(job.id, job.lock_token, job.name, now=now)
    return next(j for j in jobs if j.name == name)


async def state(queue: JobQueue, job_id: str) -> str:
    """The state of ``job_id``."""
    return await queue.get_state(job_id)
