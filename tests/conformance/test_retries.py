"""Retries and delays: backoff (scenario 20), delayed jobs promoted by `claim` itself
(scenario 15), `promote`, `reschedule` and `retry_job`."""

from __future__ import annotations

import pytest
from lanemq import Backoff, JobQueue, JobStateError
from support import EPOCH_MS as T

from .helpers import claim_one, lock_token, stored_job


async def _events(queue: JobQueue, job_id: str) -> list[tuple[str, dict[str, str]]]:
    return [(ev.event, ev.fields) for ev in await queue.read_events() if ev.job_id == job_id]


async def test_scenario_20_fixed_backoff_then_terminal_failure(queue: JobQueue) -> None:
    job = await queue.add("mail", {"to": "ops"}, attempts=2, backoff=Backoff.fixed(2.0), now=T)
    first = await claim_one(queue, T)
    assert first.attempts_started == 1

    assert await queue.fail(job.id, lock_token(first), "smtp down", now=T) is True
    delayed = await stored_job(queue, job.id)
    assert delayed.state == "delayed"
    assert delayed.delay_until == T + 2000
    assert delayed.attempts_made == 1
    assert delayed.failed_reason == "smtp down"
    assert ("delayed", {"delay": str(T + 2000)}) in await _events(queue, job.id)
    assert (await queue.finished_result(job.id)).status == "pending"

    assert await queue.claim("w", now=T + 1999) == []
    assert await queue.get_state(job.id) == "delayed"
    second = await claim_one(queue, T + 2000)
    assert second.id == job.id
    assert second.attempts_started == 2

    assert await queue.fail(job.id, lock_token(second), "smtp still down", now=T + 2100) is False
    failed = await stored_job(queue, job.id)
    assert (failed.state, failed.failed_reason, failed.finished_on) == (
        "failed",
        "smtp still down",
        T + 2100,
    )
    result = await queue.finished_result(job.id)
    assert (result.status, result.reason) == ("failed", "smtp still down")
    events = await _events(queue, job.id)
    assert ("failed", {"failedReason": "smtp still down"}) in events
    assert ("retries-exhausted", {"attemptsMade": "2"}) in events
    assert [name for name, _ in events].count("failed") == 1  # only the terminal failure
    assert await queue.claim("w", now=T + 10_000) == []


async def test_exception_as_error_is_recorded_with_its_type(queue: JobQueue) -> None:
    job = await queue.add("x", None, now=T)
    claimed = await claim_one(queue, T)
    assert await queue.fail(job.id, lock_token(claimed), ValueError("bad input"), now=T) is False
    reason = (await queue.finished_result(job.id)).reason
    assert reason is not None and "ValueError" in reason and "bad input" in reason


async def test_exponential_backoff_doubles(queue: JobQueue) -> None:
    job = await queue.add("x", None, attempts=4, backoff=Backoff.exponential(1.0), now=T)
    now = T
    waits: list[int] = []
    for _ in range(3):
        claimed = await claim_one(queue, now)
        assert await queue.fail(job.id, lock_token(claimed), "again", now=now + 7) is True
        due = (await stored_job(queue, job.id)).delay_until
        waits.append(due - (now + 7))
        assert await queue.claim("w", now=due - 1) == []
        now = due
    assert waits == [1000, 2000, 4000]
    last = await claim_one(queue, now)
    assert last.attempts_started == 4
    assert await queue.fail(job.id, lock_token(last), "done", now=now) is False


async def test_jitter_keeps_delays_within_range(queue: JobQueue) -> None:
    jitter = 0.5
    base = 10_000
    jobs = [
        await queue.add(
            f"j{i}", None, attempts=2, backoff=Backoff.exponential(10.0, jitter=jitter), now=T
        )
        for i in range(30)
    ]
    waits: list[int] = []
    for job in jobs:
        claimed = await claim_one(queue, T)
        assert claimed.id == job.id
        assert await queue.fail(job.id, lock_token(claimed), "x", now=T + 1) is True
        waits.append((await stored_job(queue, job.id)).delay_until - (T + 1))
    assert all(base * (1 - jitter) <= wait <= base for wait in waits), waits
    # Jitter is applied, not ignored: the delays are not all the undisturbed base.
    assert len(set(waits)) > 1, waits


async def test_no_jitter_gives_exact_delays(queue: JobQueue) -> None:
    job = await queue.add("x", None, attempts=2, backoff=Backoff.exponential(3.0), now=T)
    claimed = await claim_one(queue, T)
    await queue.fail(job.id, lock_token(claimed), "x", now=T + 5)
    assert (await stored_job(queue, job.id)).delay_until == T + 5 + 3000


async def test_retry_false_fails_at_once(queue: JobQueue) -> None:
    job = await queue.add("x", None, attempts=3, backoff=Backoff.fixed(1.0), now=T)
    claimed = await claim_one(queue, T)
    assert await queue.fail(job.id, lock_token(claimed), "fatal", retry=False, now=T + 1) is False
    stored = await stored_job(queue, job.id)
    assert (stored.state, stored.attempts_made, stored.failed_reason) == ("failed", 1, "fatal")
    names = [name for name, _ in await _events(queue, job.id)]
    assert "failed" in names
    assert "retries-exhausted" not in names  # attempts remained; the failure was forced
    assert await queue.claim("w", now=T + 60_000) == []


async def test_explicit_delay_overrides_backoff(queue: JobQueue) -> None:
    job = await queue.add("x", None, attempts=3, backoff=Backoff.fixed(10.0), now=T)
    claimed = await claim_one(queue, T)
    assert await queue.fail(job.id, lock_token(claimed), "soon", delay=0.5, now=T + 1) is True
    assert (await stored_job(queue, job.id)).delay_until == T + 501
    assert await queue.claim("w", now=T + 500) == []
    assert (await claim_one(queue, T + 501)).attempts_started == 2


async def test_explicit_delay_without_backoff(queue: JobQueue) -> None:
    job = await queue.add("x", None, attempts=2, now=T)
    claimed = await claim_one(queue, T)
    assert await queue.fail(job.id, lock_token(claimed), "soon", delay=3.0, now=T) is True
    stored = await stored_job(queue, job.id)
    assert (stored.state, stored.delay_until) == ("delayed", T + 3000)


async def test_attempts_without_backoff_go_straight_back_to_waiting(queue: JobQueue) -> None:
    job = await queue.add("x", None, attempts=3, now=T)
    await queue.add("behind", None, now=T + 1)
    claimed = await claim_one(queue, T + 2)
    assert await queue.fail(job.id, lock_token(claimed), "oops", now=T + 3) is True
    stored = await stored_job(queue, job.id)
    assert (stored.state, stored.lock_token) == ("waiting", None)
    # From active straight to waiting, as BullMQ's retryJob says.
    assert ("waiting", {"prev": "active"}) in await _events(queue, job.id)
    # Claimable at once (same millisecond); it went to the back of its priority.
    names = [job.name for job in await queue.claim("w", max_jobs=2, now=T + 3)]
    assert names == ["behind", "x"]
    again = await stored_job(queue, job.id)
    assert again.attempts_started == 2


async def test_scenario_15_delayed_job_promoted_by_claim(queue: JobQueue) -> None:
    job = await queue.add("later", {"n": 1}, delay=5.0, now=T)
    assert job.state == "delayed"
    assert job.delay_until == T + 5000
    assert await queue.get_job_counts("waiting", "delayed") == {"waiting": 0, "delayed": 1}
    assert await queue.count_pending() == 1

    assert await queue.claim("w", now=T) == []
    assert await queue.claim("w", now=T + 4999) == []
    # No timer, no promote(): the claim itself moves the due job and hands it out.
    claimed = await claim_one(queue, T + 5000)
    assert claimed.id == job.id and claimed.data == {"n": 1}
    assert claimed.attempts_started == 1
    assert await queue.get_job_counts("delayed", "active") == {"delayed": 0, "active": 1}


async def test_promoted_jobs_keep_priority_order(queue: JobQueue) -> None:
    await queue.add("late-low", None, delay=1.0, priority=9, now=T)
    await queue.add("late-high", None, delay=2.0, priority=1, now=T)
    await queue.add("now-mid", None, priority=5, now=T)
    claimed = await queue.claim("w", max_jobs=3, now=T + 2000)
    assert [job.name for job in claimed] == ["late-high", "now-mid", "late-low"]


async def test_promote_makes_a_delayed_job_waiting(queue: JobQueue) -> None:
    job = await queue.add("later", None, delay=60.0, now=T)
    await queue.promote(job.id, now=T + 1)
    assert await queue.get_state(job.id) == "waiting"
    assert (await claim_one(queue, T + 1)).id == job.id
    # Only a delayed job can be promoted.
    with pytest.raises(JobStateError):
        await queue.promote(job.id, now=T + 2)


async def test_reschedule_takes_delayed_jobs_and_delay_job_waiting_ones(queue: JobQueue) -> None:
    waiting = await queue.add("a", None, now=T)
    delayed = await queue.add("b", None, delay=60.0, now=T)

    # reschedule is BullMQ's changeDelay: a job that is not delayed is refused, unchanged.
    with pytest.raises(JobStateError, match="delayed"):
        await queue.reschedule(waiting.id, 10.0, now=T + 100)
    assert (await stored_job(queue, waiting.id)).state == "waiting"
    await queue.delay_job(waiting.id, 10.0, now=T + 100)
    await queue.reschedule(delayed.id, 1.0, now=T + 100)  # earlier than before
    assert (await stored_job(queue, waiting.id)).delay_until == T + 10_100
    assert (await stored_job(queue, delayed.id)).delay_until == T + 1100
    assert await queue.get_job_counts("waiting", "delayed") == {"waiting": 0, "delayed": 2}

    assert await queue.claim("w", now=T + 1099) == []
    assert (await claim_one(queue, T + 1100)).id == delayed.id
    assert await queue.claim("w", now=T + 10_099) == []
    assert (await claim_one(queue, T + 10_100)).id == waiting.id
    # An active job cannot be rescheduled, nor delayed.
    with pytest.raises(JobStateError):
        await queue.reschedule(waiting.id, 1.0, now=T + 10_200)
    with pytest.raises(JobStateError):
        await queue.delay_job(waiting.id, 1.0, now=T + 10_200)


async def test_retry_job_with_reset_attempts_moves_failed_job_back_with_attempts_reset(
    queue: JobQueue,
) -> None:
    job = await queue.add("x", {"k": 1}, attempts=2, now=T)
    for i in range(2):
        claimed = await claim_one(queue, T + i)
        await queue.fail(job.id, lock_token(claimed), f"fail {i}", now=T + i)
    failed = await stored_job(queue, job.id)
    assert (failed.state, failed.attempts_made) == ("failed", 2)

    await queue.retry_job(job.id, reset_attempts=True, now=T + 10)
    stored = await stored_job(queue, job.id)
    assert (stored.state, stored.attempts_made, stored.failed_reason) == ("waiting", 0, None)
    assert stored.finished_on is None
    assert (await queue.finished_result(job.id)).status == "pending"

    # The full budget of attempts is back: the first failure after the retry is retried.
    claimed = await claim_one(queue, T + 11)
    assert claimed.attempts_started == 1
    assert await queue.fail(job.id, lock_token(claimed), "once more", now=T + 12) is True


async def test_retry_job_runs_a_completed_job_again(queue: JobQueue) -> None:
    job = await queue.add("x", None, now=T)
    claimed = await claim_one(queue, T)
    await queue.complete(job.id, lock_token(claimed), {"first": True}, now=T + 1)

    await queue.retry_job(job.id, now=T + 2)
    stored = await stored_job(queue, job.id)
    # The attempt it made stays counted (BullMQ's job.retry() without resetAttemptsMade).
    assert (stored.state, stored.attempts_made, stored.return_value) == ("waiting", 1, None)
    again = await claim_one(queue, T + 3)
    assert again.attempts_started == 2
    await queue.complete(job.id, lock_token(again), {"second": True}, now=T + 4)
    assert (await queue.finished_result(job.id)).value == {"second": True}


async def test_retry_job_refuses_unfinished_jobs(queue: JobQueue) -> None:
    job = await queue.add("x", None, now=T)
    with pytest.raises(JobStateError):
        await queue.retry_job(job.id, now=T)
    assert await queue.get_state(job.id) == "waiting"
