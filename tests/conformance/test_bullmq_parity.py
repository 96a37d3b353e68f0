"""Behaviours that BullMQ's own tests pin down (rate limiter, retries, job schedulers, clean,
getters, events, retention, priorities), where lanemq once differed: a `RateLimitError` with a
delay holds back every consumer of the queue; `retry_job` keeps the attempts made (the next
failure of an exhausted job is final) and the stalled count; a job scheduler's pending
occurrence cannot be removed by hand and stays through drain and clean; `immediately` with
`start` is refused; due delayed jobs go ahead of a job retried at once, whose `waiting` event
says it came from `active`; `KeepJobs(age=N)` removes a job that finished exactly N seconds
ago; priorities go up to 2^21 - 1."""

from __future__ import annotations

import math

import pytest
from lanemq import (
    ConfigError,
    Job,
    JobQueue,
    JobStateError,
    JobWorker,
    KeepJobs,
    RateLimitError,
)
from support import EPOCH_MS as T

from .helpers import claim_one, lock_token, stored_job

MAX_PRIORITY = 2**21 - 1


async def _claim_ids(queue: JobQueue, now: int, max_jobs: int = 10) -> list[str]:
    return [j.id for j in await queue.claim("w", lease=60.0, max_jobs=max_jobs, now=now)]


async def _last_event_id(queue: JobQueue) -> int:
    events = await queue.read_events()
    return events[-1].id if events else 0


async def _events_since(
    queue: JobQueue, after: int
) -> list[tuple[str, str | None, dict[str, str]]]:
    return [(e.event, e.job_id, e.fields) for e in await queue.read_events(start=after + 1)]


# --------------------------------------------------- 7. RateLimitError holds back the queue


async def test_rate_limit_error_with_a_delay_holds_back_every_consumer(queue: JobQueue) -> None:
    runs: list[str] = []

    async def work(job: Job) -> str:
        runs.append(job.id)
        raise RateLimitError(delay=30.0)

    job = await queue.add("api", None, attempts=1)
    later = await queue.add("api", None, attempts=1)
    worker = JobWorker(queue, work, concurrency=1)
    assert await worker.run_once() == 0  # given back: not a completion nor a failed attempt
    assert runs == [job.id]

    # The whole queue waits, not only the worker that was told to back off: another
    # consumer's claim finds nothing, the job given back included.
    assert await queue.get_rate_limit_ttl() > 29.0
    assert await queue.claim("another-worker", lease=60.0, max_jobs=10) == []
    stored = await stored_job(queue, job.id)
    assert (stored.state, stored.attempts_made) == ("waiting", 0)

    # Once the wait ends, the job given back comes first, on the attempt it had not used.
    await queue.remove_rate_limit_key()
    claimed = await queue.claim("another-worker", lease=60.0, max_jobs=10)
    assert [j.id for j in claimed] == [job.id, later.id]
    assert claimed[0].attempts_started == 1


async def test_rate_limit_error_without_a_delay_leaves_the_queue_free(queue: JobQueue) -> None:
    async def work(job: Job) -> str:
        raise RateLimitError()

    job = await queue.add("api", None)
    assert await JobWorker(queue, work).run_once() == 0
    assert await queue.get_rate_limit_ttl() == 0.0
    assert [j.id for j in await queue.claim("another-worker", lease=60.0)] == [job.id]


async def test_rate_limit_error_after_rate_limit_keeps_the_queue_wide_wait(
    queue: JobQueue,
) -> None:
    async def work(job: Job) -> str:
        await job.queue.rate_limit(30.0)
        raise RateLimitError()

    await queue.add("api", None)
    assert await JobWorker(queue, work).run_once() == 0
    assert await queue.get_rate_limit_ttl() > 29.0
    assert await queue.claim("another-worker", lease=60.0) == []


@pytest.mark.parametrize("bad", [-1.0, math.nan, math.inf, "5"])
def test_rate_limit_error_refuses_a_bad_delay(bad: object) -> None:
    with pytest.raises(ValueError, match="delay") as raised:
        RateLimitError(delay=bad)  # type: ignore[arg-type]
    assert str(bad) in str(raised.value) or repr(bad) in str(raised.value)


# ---------------------------------------- 8. retry_job keeps attempts and the stalled count


async def test_retry_job_keeps_the_attempts_so_the_next_failure_is_final(
    queue: JobQueue,
) -> None:
    job = await queue.add("x", None, attempts=2, now=T)
    for i in range(2):
        claimed = await claim_one(queue, T + i)
        await queue.fail(job.id, lock_token(claimed), f"fail {i}", now=T + i)
    assert (await stored_job(queue, job.id)).attempts_made == 2

    await queue.retry_job(job.id, now=T + 10)
    stored = await stored_job(queue, job.id)
    assert (stored.state, stored.attempts_made, stored.failed_reason) == ("waiting", 2, None)

    # One more run: its failure is final, whatever the processor asks for.
    claimed = await claim_one(queue, T + 11)
    assert claimed.attempts_started == 3
    mark = await _last_event_id(queue)
    assert await queue.fail(job.id, lock_token(claimed), "again", now=T + 12) is False
    stored = await stored_job(queue, job.id)
    assert (stored.state, stored.attempts_made) == ("failed", 3)
    assert ("retries-exhausted", job.id, {"attemptsMade": "3"}) in await _events_since(queue, mark)


async def test_retry_job_of_a_job_with_attempts_left_keeps_what_is_left(
    queue: JobQueue,
) -> None:
    job = await queue.add("x", None, attempts=3, now=T)
    claimed = await claim_one(queue, T)
    # Failed for good on its first attempt (UnrecoverableError): two attempts are left.
    assert await queue.fail(job.id, lock_token(claimed), "fatal", retry=False, now=T + 1) is False
    await queue.retry_job(job.id, now=T + 2)
    claimed = await claim_one(queue, T + 3)
    assert claimed.attempts_started == 2
    assert await queue.fail(job.id, lock_token(claimed), "flaky", now=T + 4) is True
    claimed = await claim_one(queue, T + 5)
    assert await queue.fail(job.id, lock_token(claimed), "flaky", now=T + 6) is False


async def test_retry_job_of_a_completed_job_keeps_its_attempts(queue: JobQueue) -> None:
    job = await queue.add("x", None, attempts=2, now=T)
    claimed = await claim_one(queue, T)
    await queue.complete(job.id, lock_token(claimed), "first", now=T + 1)
    await queue.retry_job(job.id, now=T + 2)
    stored = await stored_job(queue, job.id)
    assert (stored.state, stored.attempts_made, stored.return_value) == ("waiting", 1, None)
    claimed = await claim_one(queue, T + 3)
    assert claimed.attempts_started == 2
    assert await queue.fail(job.id, lock_token(claimed), "boom", now=T + 4) is False


async def test_retry_job_reset_attempts_gives_a_full_set_again(queue: JobQueue) -> None:
    job = await queue.add("x", None, attempts=2, now=T)
    for i in range(2):
        claimed = await claim_one(queue, T + i)
        await queue.fail(job.id, lock_token(claimed), f"fail {i}", now=T + i)
    await queue.retry_job(job.id, reset_attempts=True, now=T + 10)
    assert (await stored_job(queue, job.id)).attempts_made == 0
    claimed = await claim_one(queue, T + 11)
    assert claimed.attempts_started == 1
    assert await queue.fail(job.id, lock_token(claimed), "once more", now=T + 12) is True


async def test_retry_job_keeps_the_stalled_count(queue: JobQueue) -> None:
    job = await queue.add("x", None, max_stalled_count=1, now=T)
    await claim_one(queue, T, lease=1.0)
    assert await queue.recover_stalled(now=T + 1_000) == ([job.id], [])
    claimed = await claim_one(queue, T + 1_001)
    await queue.fail(job.id, lock_token(claimed), "boom", now=T + 1_002)
    assert (await stored_job(queue, job.id)).stalled_count == 1

    await queue.retry_job(job.id, reset_attempts=True, now=T + 1_003)
    assert (await stored_job(queue, job.id)).stalled_count == 1
    # Its next stall is its second: past max_stalled_count, it fails.
    await claim_one(queue, T + 1_004, lease=1.0)
    assert await queue.recover_stalled(now=T + 2_004) == ([], [job.id])
    stored = await stored_job(queue, job.id)
    assert (stored.state, stored.stalled_count) == ("failed", 2)


@pytest.mark.parametrize("bad", [1, "yes", None])
async def test_retry_job_refuses_a_reset_attempts_that_is_not_a_bool(
    queue: JobQueue, bad: object
) -> None:
    job = await queue.add("x", None, now=T)
    claimed = await claim_one(queue, T)
    await queue.fail(job.id, lock_token(claimed), "boom", now=T + 1)
    mark = await _last_event_id(queue)
    with pytest.raises(ConfigError, match="reset_attempts"):
        await queue.retry_job(job.id, reset_attempts=bad, now=T + 2)  # type: ignore[arg-type]
    assert (await stored_job(queue, job.id)).state == "failed"
    assert await _events_since(queue, mark) == []


# ------------------------------- 9. a scheduler's pending occurrence is the scheduler's own


async def test_a_pending_occurrence_cannot_be_removed_by_hand(queue: JobQueue) -> None:
    waiting = await queue.upsert_scheduler("now", every=1.0, template=("x", None), now=T)
    delayed = await queue.upsert_scheduler(
        "later", every=1.0, start=T + 5_000, template=("x", None), now=T
    )
    mark = await _last_event_id(queue)
    for job, key in ((waiting, "now"), (delayed, "later")):
        with pytest.raises(JobStateError) as raised:
            await queue.remove(job.id, now=T + 1)
        assert job.id in str(raised.value) and key in str(raised.value)
        assert (await stored_job(queue, job.id)).state == job.state
        assert (await queue.get_scheduler(key)) is not None
        assert (await queue.get_scheduler(key)).job_id == job.id  # type: ignore[union-attr]
    assert await _events_since(queue, mark) == []
    # remove_scheduler removes it, with its scheduler.
    assert await queue.remove_scheduler("now", now=T + 2) is True
    assert await queue.get_job(waiting.id) is None


async def test_an_occurrence_that_ran_can_be_removed(queue: JobQueue) -> None:
    first = await queue.upsert_scheduler("k", every=1.0, template=("x", None), now=T)
    claimed = await claim_one(queue, T)
    assert claimed.id == first.id
    await queue.complete(first.id, lock_token(claimed), None, now=T + 1)
    await queue.remove(first.id, now=T + 2)
    assert await queue.get_job(first.id) is None
    # The next occurrence, produced when the first started, is pending and stays protected.
    pending = (await queue.get_scheduler("k")).job_id  # type: ignore[union-attr]
    assert pending == f"repeat:k:{T + 1000}"
    with pytest.raises(JobStateError):
        await queue.remove(pending, now=T + 3)


async def test_an_old_occurrence_given_back_to_waiting_can_be_removed(queue: JobQueue) -> None:
    # A retried occurrence is no longer the pending one (the next was produced at its claim).
    old = await queue.upsert_scheduler(
        "k", every=10.0, template=("x", None, {"attempts": 2}), now=T
    )
    claimed = await claim_one(queue, T)
    assert await queue.fail(old.id, lock_token(claimed), "boom", now=T + 1) is True
    assert (await stored_job(queue, old.id)).state == "waiting"
    await queue.remove(old.id, now=T + 2)
    assert await queue.get_job(old.id) is None


async def test_drain_keeps_pending_occurrences_waiting_or_delayed(queue: JobQueue) -> None:
    now_job = await queue.upsert_scheduler("now", every=1.0, template=("x", None), now=T)
    later_job = await queue.upsert_scheduler(
        "later", every=1.0, start=T + 500, template=("x", None), now=T
    )
    plain = await queue.add("plain", None, now=T)
    plain_delayed = await queue.add("plain", None, delay=1.0, now=T)
    assert await queue.drain(now=T) == 1
    assert await queue.get_job(plain.id) is None
    assert await queue.drain(delayed=True, now=T) == 1
    assert await queue.get_job(plain_delayed.id) is None
    for key, job in (("now", now_job), ("later", later_job)):
        assert (await stored_job(queue, job.id)).state == job.state
        assert (await queue.get_scheduler(key)).job_id == job.id  # type: ignore[union-attr]
    # The schedule goes on: claiming the occurrence produces the next one.
    assert await _claim_ids(queue, T) == [now_job.id]
    assert (await queue.get_scheduler("now")).job_id == f"repeat:now:{T + 1000}"  # type: ignore[union-attr]


@pytest.mark.parametrize("state", ["waiting", "delayed"])
async def test_clean_keeps_pending_occurrences(queue: JobQueue, state: str) -> None:
    start = T if state == "waiting" else T + 60_000
    occurrence = await queue.upsert_scheduler(
        "k", every=1.0, start=start, template=("x", None), now=T
    )
    assert occurrence.state == state
    plain = await queue.add("plain", None, delay=0.0 if state == "waiting" else 60.0, now=T)
    assert await queue.clean(0.0, state=state, now=T + 10) == [plain.id]
    assert (await stored_job(queue, occurrence.id)).state == state
    assert (await queue.get_scheduler("k")).job_id == occurrence.id  # type: ignore[union-attr]


async def test_clean_with_a_limit_skips_pending_occurrences(queue: JobQueue) -> None:
    occurrence = await queue.upsert_scheduler("k", every=1.0, template=("x", None), now=T)
    plain = [await queue.add("plain", i, now=T + 1) for i in range(3)]
    # The occurrence comes first in waiting; the limit counts what is removed.
    assert await queue.clean(0.0, limit=2, state="waiting", now=T + 10) == [
        plain[0].id,
        plain[1].id,
    ]
    assert (await stored_job(queue, occurrence.id)).state == "waiting"


@pytest.mark.parametrize("kind", ["every", "cron"])
async def test_immediately_with_start_is_refused(queue: JobQueue, kind: str) -> None:
    rule = {"every": 60.0} if kind == "every" else {"cron": "0 9 * * *"}
    with pytest.raises(ConfigError) as raised:
        await queue.upsert_scheduler(
            "k", **rule, immediately=True, start=T + 5_000, template=("x", None), now=T
        )
    message = str(raised.value)
    assert "immediately" in message and "start" in message and str(T + 5_000) in message
    assert await queue.count_schedulers() == 0
    assert await queue.get_job_counts("waiting", "delayed") == {"waiting": 0, "delayed": 0}
    assert await queue.read_events() == []


async def test_immediately_without_start_and_start_without_immediately_are_accepted(
    queue: JobQueue,
) -> None:
    now_job = await queue.upsert_scheduler(
        "a", cron="0 9 * * *", immediately=True, template=("x", None), now=T
    )
    assert (now_job.id, now_job.state) == (f"repeat:a:{T}", "waiting")
    later = await queue.upsert_scheduler(
        "b", cron="0 9 * * *", start=T + 5_000, template=("x", None), now=T
    )
    assert later.state == "delayed"


# ------------------------- 10 and 11. a job retried at once: after due delayed, from active


async def test_due_delayed_jobs_go_before_a_job_retried_at_once(queue: JobQueue) -> None:
    due = await queue.add("due", None, delay=1.0, now=T)
    not_yet = await queue.add("not-yet", None, delay=5.0, now=T)
    flaky = await queue.add("flaky", None, attempts=2, now=T)
    claimed = await claim_one(queue, T)
    assert claimed.id == flaky.id
    assert await queue.fail(flaky.id, lock_token(claimed), "boom", now=T + 2_000) is True
    # `due` was due before the retry: it was promoted first, so it is claimed first.
    assert await _claim_ids(queue, T + 2_000, max_jobs=1) == [due.id]
    assert await _claim_ids(queue, T + 2_000, max_jobs=1) == [flaky.id]
    assert await _claim_ids(queue, T + 5_000) == [not_yet.id]


async def test_due_delayed_jobs_are_promoted_by_the_retry(queue: JobQueue) -> None:
    due = await queue.add("due", None, delay=1.0, now=T)
    flaky = await queue.add("flaky", None, attempts=2, now=T)
    claimed = await claim_one(queue, T)
    mark = await _last_event_id(queue)
    assert await queue.fail(flaky.id, lock_token(claimed), "boom", now=T + 2_000) is True
    assert await queue.get_state(due.id) == "waiting"
    events = await _events_since(queue, mark)
    waiting = [(job_id, fields) for event, job_id, fields in events if event == "waiting"]
    assert waiting == [(due.id, {"prev": "delayed"}), (flaky.id, {"prev": "active"})]


async def test_a_priority_still_comes_before_the_promotion_order(queue: JobQueue) -> None:
    due = await queue.add("due", None, delay=1.0, priority=5, now=T)
    flaky = await queue.add("flaky", None, attempts=2, priority=1, now=T)
    claimed = await claim_one(queue, T)
    assert await queue.fail(flaky.id, lock_token(claimed), "boom", now=T + 2_000) is True
    assert await _claim_ids(queue, T + 2_000) == [flaky.id, due.id]


async def test_retry_job_by_hand_says_where_the_job_came_from(queue: JobQueue) -> None:
    failed = await queue.add("f", None, now=T)
    claimed = await claim_one(queue, T)
    await queue.fail(failed.id, lock_token(claimed), "boom", now=T + 1)
    completed = await queue.add("c", None, now=T + 2)
    claimed = await claim_one(queue, T + 2)
    await queue.complete(completed.id, lock_token(claimed), None, now=T + 3)
    mark = await _last_event_id(queue)
    await queue.retry_job(failed.id, now=T + 4)
    await queue.retry_job(completed.id, now=T + 5)
    assert await _events_since(queue, mark) == [
        ("waiting", failed.id, {"prev": "failed"}),
        ("waiting", completed.id, {"prev": "completed"}),
    ]


# ------------------------------------------------------- 12. KeepJobs(age) is inclusive


async def _run(queue: JobQueue, now: int) -> None:
    claimed = await claim_one(queue, now)
    await queue.complete(claimed.id, lock_token(claimed), None, now=now)


async def _run_fail(queue: JobQueue, now: int) -> None:
    claimed = await claim_one(queue, now)
    await queue.fail(claimed.id, lock_token(claimed), "boom", retry=False, now=now)


async def _ids(queue: JobQueue, state: str) -> list[str]:
    return [j.id for j in await queue.list_jobs(state)]


async def test_keep_jobs_age_removes_a_job_exactly_that_old(queue: JobQueue) -> None:
    policy = KeepJobs(age=10.0)
    a, b, c = [await queue.add("w", i, remove_on_complete=policy, now=T) for i in range(3)]
    await _run(queue, T)
    await _run(queue, T + 9_999)  # a is 9.999 s old: kept
    assert await _ids(queue, "completed") == [a.id, b.id]
    await _run(queue, T + 10_000)  # a is 10 s old: removed; b is 1 ms old
    assert await _ids(queue, "completed") == [b.id, c.id]


async def test_remove_on_fail_keep_jobs_age_removes_a_job_exactly_that_old(
    queue: JobQueue,
) -> None:
    policy = KeepJobs(age=2.0)
    a, b = [await queue.add("w", i, remove_on_fail=policy, now=T) for i in range(2)]
    await _run_fail(queue, T)
    await _run_fail(queue, T + 2_000)
    assert await _ids(queue, "failed") == [b.id]
    assert await queue.get_job(a.id) is None


async def test_keep_jobs_age_with_a_limit_removes_at_most_the_limit(queue: JobQueue) -> None:
    policy = KeepJobs(age=1.0, limit=1)
    jobs = [await queue.add("w", i, remove_on_complete=policy, now=T) for i in range(3)]
    await _run(queue, T)
    await _run(queue, T)
    await _run(queue, T + 1_000)  # both earlier ones are exactly 1 s old; the limit takes one
    assert await _ids(queue, "completed") == [jobs[1].id, jobs[2].id]


# ------------------------------------------------------------ 13. priority up to 2^21 - 1


async def test_the_largest_priority_is_two_to_the_21_minus_one(queue: JobQueue) -> None:
    top = await queue.add("top", None, priority=MAX_PRIORITY, now=T)
    assert top.priority == 2_097_151
    before = await queue.get_job_counts()
    for bad in (MAX_PRIORITY + 1, 2**21 + 5):
        with pytest.raises(ConfigError) as raised:
            await queue.add("x", None, priority=bad, now=T)
        assert str(bad) in str(raised.value) and "2097151" in str(raised.value)
        with pytest.raises(ConfigError, match=str(bad)):
            await queue.add("x", None, {"priority": bad}, now=T)
        with pytest.raises(ConfigError, match=str(bad)):
            await queue.update_priority(top.id, bad)
    assert await queue.get_job_counts() == before
    assert (await stored_job(queue, top.id)).priority == MAX_PRIORITY


async def test_jobs_of_the_largest_priority_keep_their_order(queue: JobQueue) -> None:
    jobs = [await queue.add("p", i, priority=MAX_PRIORITY, now=T) for i in range(5)]
    first = await queue.add("first", None, priority=MAX_PRIORITY - 1, now=T)
    assert await _claim_ids(queue, T + 1) == [first.id, *(j.id for j in jobs)]
