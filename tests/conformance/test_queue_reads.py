"""Reads of the queue as a whole that BullMQ users expect: job counts together, a page with its
total, the stats in one read, promoting delayed jobs, and a dedup key's time left."""

from __future__ import annotations

import pytest
from lanemq import ConfigError, JobQueue

T = 1_700_000_000_000


async def _add_in_states(queue: JobQueue) -> None:
    """Three waiting jobs, two delayed, one active, one completed, one failed."""
    for i in range(3):
        await queue.add("w", {"i": i}, now=T)
    await queue.add("d", None, delay=60, now=T)
    await queue.add("d", None, delay=120, now=T)
    await queue.add("a", None, now=T)
    await queue.add("c", None, now=T)
    await queue.add("f", None, now=T)
    for name_state in ("complete", "fail", "hold"):
        claimed = await queue.claim("w1", now=T)
        assert len(claimed) == 1
        job = claimed[0]
        token = job.lock_token
        assert token is not None
        if name_state == "complete":
            await queue.complete(job.id, token, None, now=T)
        elif name_state == "fail":
            assert await queue.fail(job.id, token, "boom", retry=False, now=T) is False
    counts = await queue.get_job_counts("waiting", "delayed", "active", "completed", "failed")
    assert counts == {"waiting": 3, "delayed": 2, "active": 1, "completed": 1, "failed": 1}


# ------------------------------------------------------------ get_job_count


async def test_get_job_count_sums_the_states_asked(queue: JobQueue) -> None:
    await _add_in_states(queue)
    assert await queue.get_job_count("waiting") == 3
    assert await queue.get_job_count("waiting", "delayed") == 5
    assert await queue.get_job_count("completed", "failed", "active") == 3
    # A state named twice counts once, as in BullMQ.
    assert await queue.get_job_count("waiting", "waiting") == 3


async def test_get_job_count_of_no_state_is_every_job(queue: JobQueue) -> None:
    assert await queue.get_job_count() == 0
    await _add_in_states(queue)
    assert await queue.get_job_count() == 8


async def test_get_job_count_refuses_an_unknown_state(queue: JobQueue) -> None:
    with pytest.raises(ConfigError, match="paused"):
        await queue.get_job_count("paused")
