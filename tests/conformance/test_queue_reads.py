"""Reads of the queue as a whole that BullMQ users expect: job counts together, a page with its
total, the stats in one read, promoting delayed jobs, and a dedup key's time left."""

from __future__ import annotations

import pytest
from lanemq import ConfigError, JobQueue

T = 1_700_000_000_000


async def _add_in_states(queue: JobQueue) -> None:
    """One completed job, one failed, one active, then three waiting and two delayed."""
    for name in ("c", "f", "a"):
        await queue.add(name, None, now=T)
        claimed = await queue.claim("w1", now=T)
        assert [job.name for job in claimed] == [name]
        token = claimed[0].lock_token
        assert token is not None
        if name == "c":
            await queue.complete(claimed[0].id, token, None, now=T)
        elif name == "f":
            assert await queue.fail(claimed[0].id, token, "boom", retry=False, now=T) is False
    for i in range(3):
        await queue.add("w", {"i": i}, now=T)
    await queue.add("d", None, delay=60, now=T)
    await queue.add("d", None, delay=120, now=T)
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


# ----------------------------------------------------- list_jobs_with_total


async def test_list_jobs_with_total_gives_the_page_and_its_total(queue: JobQueue) -> None:
    await _add_in_states(queue)
    page, total = await queue.list_jobs_with_total("waiting", 0, 1)
    assert total == 3
    assert [job.name for job in page] == ["w", "w"]
    assert [job.data for job in page] == [{"i": 0}, {"i": 1}]
    assert [job.id for job in page] == [job.id for job in await queue.list_jobs("waiting", 0, 1)]


async def test_list_jobs_with_total_over_several_states(queue: JobQueue) -> None:
    await _add_in_states(queue)
    page, total = await queue.list_jobs_with_total(["waiting", "delayed"], 2, -1)
    assert total == 5
    assert [job.state for job in page] == ["waiting", "delayed", "delayed"]
    everything, all_total = await queue.list_jobs_with_total()
    assert all_total == 8
    assert len(everything) == 8


async def test_list_jobs_with_total_past_the_end(queue: JobQueue) -> None:
    await _add_in_states(queue)
    page, total = await queue.list_jobs_with_total("failed", 5, 10)
    assert (page, total) == ([], 1)
