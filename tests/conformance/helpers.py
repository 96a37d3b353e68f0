"""Steps many conformance modules take, through the public API only."""

from __future__ import annotations

from lanemq import Job, JobQueue


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
