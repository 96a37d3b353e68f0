"""Reads of the queue as a whole that BullMQ users expect: job counts together, a page with its
total, the stats in one read, promoting delayed jobs (all, or only the due ones), and a dedup
key's time left."""

from __future__ import annotations

import math

import pytest
from lanemq import Backoff, ConfigError, Dedup, JobQueue, QueueStats
from lanemq.queue import STATES
from support import EPOCH_MS as T


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


# ----------------------------------------------------------------- get_stats


async def test_get_stats_of_a_fresh_queue(queue: JobQueue) -> None:
    stats = await queue.get_stats(now=T)
    assert stats == QueueStats(
        counts={state: 0 for state in STATES},
        paused=False,
        max_active=None,
        rate_limit=None,
        rate_limit_ttl=0.0,
    )


async def test_get_stats_reads_counts_and_settings_together(queue: JobQueue) -> None:
    await _add_in_states(queue)
    await queue.pause(now=T)
    await queue.set_max_active(4)
    await queue.set_rate_limit(2, 10.0)
    await queue.rate_limit(30, now=T)
    stats = await queue.get_stats(now=T + 10_000)
    assert stats.counts == {
        "waiting": 3,
        "delayed": 2,
        "active": 1,
        "waiting_children": 0,
        "completed": 1,
        "failed": 1,
    }
    assert list(stats.counts) == list(STATES)
    assert stats.paused is True
    assert stats.max_active == 4
    assert stats.rate_limit == (2, 10.0)
    assert stats.rate_limit_ttl == 20.0
    assert stats.rate_limit_ttl == await queue.get_rate_limit_ttl(now=T + 10_000)
    assert stats.counts == await queue.get_job_counts()


# -------------------------------------------------------------- promote_jobs


async def test_promote_jobs_promotes_every_delayed_job(queue: JobQueue) -> None:
    await _add_in_states(queue)
    after = (await queue.read_events())[-1].id
    assert await queue.promote_jobs(now=T) == 2
    counts = await queue.get_job_counts("waiting", "delayed")
    assert counts == {"waiting": 5, "delayed": 0}
    events = await queue.read_events(after + 1)
    assert [event.event for event in events] == ["waiting", "waiting"]
    # Promoted, they are claimed after the jobs that were waiting already.
    claimed = await queue.claim("w1", max_jobs=5, now=T)
    assert [job.name for job in claimed] == ["w", "w", "w", "d", "d"]
    assert await queue.promote_jobs(now=T) == 0


async def test_promote_jobs_takes_the_earliest_first(queue: JobQueue) -> None:
    late = await queue.add("late", None, delay=300, now=T)
    early = await queue.add("early", None, delay=10, now=T)
    middle = await queue.add("middle", None, delay=100, now=T)
    assert await queue.promote_jobs(2, now=T) == 2
    assert await queue.get_state(early.id) == "waiting"
    assert await queue.get_state(middle.id) == "waiting"
    assert await queue.get_state(late.id) == "delayed"


async def test_promote_jobs_refuses_a_count_below_one(queue: JobQueue) -> None:
    await queue.add("d", None, delay=60, now=T)
    with pytest.raises(ConfigError, match="invalid count: 0"):
        await queue.promote_jobs(0, now=T)
    assert await queue.get_job_counts("delayed") == {"delayed": 1}


# --------------------------------------------------------------- promote_due


async def test_promote_due_promotes_only_the_jobs_whose_time_came(queue: JobQueue) -> None:
    """Due: a delay over, a retry's backoff over; not due: a later delay. Nothing is claimed."""
    due = await queue.add("due", None, delay=10, now=T)
    later = await queue.add("later", None, delay=300, now=T)
    retried = await queue.add("retried", None, attempts=2, backoff=Backoff.fixed(5.0), now=T)
    claimed = await queue.claim("w1", now=T)
    assert [job.id for job in claimed] == [retried.id]
    token = claimed[0].lock_token
    assert token is not None
    assert await queue.fail(retried.id, token, "boom", now=T) is True
    assert await queue.get_state(retried.id) == "delayed"
    after = (await queue.read_events())[-1].id

    assert await queue.promote_due(now=T + 20_000) == 2
    assert await queue.get_state(due.id) == "waiting"
    assert await queue.get_state(retried.id) == "waiting"
    assert await queue.get_state(later.id) == "delayed"
    assert await queue.get_job_counts("waiting", "delayed", "active") == {
        "waiting": 2,
        "delayed": 1,
        "active": 0,
    }
    events = await queue.read_events(after + 1)
    assert sorted((event.event, event.job_id) for event in events) == sorted(
        [("waiting", due.id), ("waiting", retried.id)]
    )
    assert all(event.fields.get("prev") == "delayed" for event in events)
    # Earliest due first: the retry (due at T+5s) before the delayed add (T+10s).
    claimed = await queue.claim("w1", max_jobs=2, now=T + 20_000)
    assert [job.id for job in claimed] == [retried.id, due.id]
    assert await queue.promote_due(now=T + 20_000) == 0


async def test_promote_due_on_a_paused_queue_promotes_without_claiming(queue: JobQueue) -> None:
    job = await queue.add("due", None, delay=1, now=T)
    await queue.pause(now=T)
    assert await queue.promote_due(now=T + 500) == 0
    assert await queue.promote_due(now=T + 1_000) == 1
    assert await queue.get_state(job.id) == "waiting"
    assert await queue.claim("w1", now=T + 1_000) == []


# ----------------------------------------------------- get_deduplication_ttl


async def test_dedup_ttl_counts_down_and_ends_with_the_key(queue: JobQueue) -> None:
    assert await queue.get_deduplication_ttl("user:1", now=T) is None
    await queue.add("mail", None, dedup=Dedup("user:1", ttl=60), now=T)
    assert await queue.get_deduplication_ttl("user:1", now=T) == 60.0
    assert await queue.get_deduplication_ttl("user:1", now=T + 15_500) == 44.5
    # Expired: not held any more, as get_deduplication_job_id says.
    assert await queue.get_deduplication_ttl("user:1", now=T + 60_000) is None
    assert await queue.get_deduplication_job_id("user:1", now=T + 60_000) is None


async def test_dedup_ttl_follows_an_extension(queue: JobQueue) -> None:
    await queue.add("mail", None, dedup=Dedup("user:2", ttl=10, extend=True), now=T)
    await queue.add("mail", None, dedup=Dedup("user:2", ttl=10, extend=True), now=T + 4_000)
    assert await queue.get_deduplication_ttl("user:2", now=T + 5_000) == 9.0


async def test_dedup_key_without_ttl_is_held_until_its_job_finishes(queue: JobQueue) -> None:
    added = await queue.add("mail", None, dedup=Dedup("user:3"), now=T)
    assert await queue.get_deduplication_ttl("user:3", now=T) == math.inf
    claimed = await queue.claim("w1", now=T)
    assert [job.id for job in claimed] == [added.id]
    token = claimed[0].lock_token
    assert token is not None
    await queue.complete(added.id, token, None, now=T)
    assert await queue.get_deduplication_ttl("user:3", now=T) is None


async def test_dedup_ttl_of_a_removed_key(queue: JobQueue) -> None:
    await queue.add("mail", None, dedup=Dedup("user:4", ttl=60), now=T)
    assert await queue.remove_deduplication_key("user:4", now=T) is True
    assert await queue.get_deduplication_ttl("user:4", now=T) is None
