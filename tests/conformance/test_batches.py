"""Batch finishing: complete_many and fail_many finish many jobs in one step and report, per
item, what could not be done, without letting one bad item spoil the others."""

from __future__ import annotations

from lanemq import Backoff, JobQueue
from support import EPOCH_MS as T


async def test_complete_many_reports_only_the_refused_items(queue: JobQueue) -> None:
    for i in range(3):
        await queue.add("job", i, now=T)
    a, b, c = await queue.claim("w", lease=10.0, max_jobs=3, now=T)
    assert a.lock_token and b.lock_token and c.lock_token
    errors = await queue.complete_many(
        [(a.id, a.lock_token, "A"), (b.id, "not-the-token", "B"), (c.id, c.lock_token, {"c": 3})],
        now=T + 1,
    )
    assert [job_id for job_id, _ in errors] == [b.id]
    assert "lock" in errors[0][1].lower()
    assert (await queue.finished_result(a.id)).value == "A"
    assert (await queue.finished_result(c.id)).value == {"c": 3}
    assert await queue.get_state(b.id) == "active"
    assert await queue.get_job_counts("completed", "active") == {"completed": 2, "active": 1}


async def test_complete_many_refuses_a_job_that_is_not_active(queue: JobQueue) -> None:
    waiting = await queue.add("job", None, now=T)
    errors = await queue.complete_many([(waiting.id, "token", None)], now=T)
    assert [job_id for job_id, _ in errors] == [waiting.id]
    assert await queue.get_state(waiting.id) == "waiting"


async def test_fail_many_retries_fails_and_reports_per_item(queue: JobQueue) -> None:
    retried = await queue.add("job", 1, attempts=2, backoff=Backoff.fixed(1.0), now=T)
    final = await queue.add("job", 2, attempts=1, now=T)
    kept = await queue.add("job", 3, attempts=5, now=T)
    jobs = {job.id: job for job in await queue.claim("w", lease=10.0, max_jobs=3, now=T)}
    outcomes = await queue.fail_many(
        [
            (retried.id, jobs[retried.id].lock_token or "", "boom", None, True),
            (final.id, jobs[final.id].lock_token or "", ValueError("bad"), "trace", True),
            (kept.id, "stale-token", "late", None, True),
        ],
        now=T + 1,
    )
    assert outcomes[0] == (retried.id, True, None)
    assert outcomes[1] == (final.id, False, None)
    assert outcomes[2][0] == kept.id and outcomes[2][1] is False and outcomes[2][2]
    assert await queue.get_state(retried.id) == "delayed"
    failed = await queue.get_job(final.id)
    assert failed is not None and failed.state == "failed"
    assert failed.failed_reason == "ValueError: bad"
    assert failed.stacktrace == ["trace"]
    assert await queue.get_state(kept.id) == "active"


async def test_fail_many_items_may_carry_their_own_delay(queue: JobQueue) -> None:
    # A sixth value replaces the backoff (a worker's custom backoff strategy sends it); None
    # keeps it.
    own = await queue.add("job", 1, attempts=2, backoff=Backoff.fixed(1.0), now=T)
    kept = await queue.add("job", 2, attempts=2, backoff=Backoff.fixed(1.0), now=T)
    at_once = await queue.add("job", 3, attempts=2, backoff=Backoff.fixed(1.0), now=T)
    jobs = {job.id: job for job in await queue.claim("w", lease=10.0, max_jobs=3, now=T)}
    outcomes = await queue.fail_many(
        [
            (own.id, jobs[own.id].lock_token or "", "boom", None, True, 7.5),
            (kept.id, jobs[kept.id].lock_token or "", "boom", None, True, None),
            (at_once.id, jobs[at_once.id].lock_token or "", "boom", None, True, 0),
        ],
        now=T + 1,
    )
    assert [retried for _, retried, _ in outcomes] == [True, True, True]
    own_job, kept_job = await queue.get_job(own.id), await queue.get_job(kept.id)
    assert own_job is not None and own_job.delay_until == T + 1 + 7500
    assert kept_job is not None and kept_job.delay_until == T + 1 + 1000
    assert await queue.get_state(at_once.id) == "waiting"


async def test_fail_many_with_retry_false_is_terminal(queue: JobQueue) -> None:
    job = await queue.add("job", None, attempts=3, now=T)
    [claimed] = await queue.claim("w", lease=10.0, now=T)
    [(job_id, retried, problem)] = await queue.fail_many(
        [(job.id, claimed.lock_token or "", "fatal", None, False)], now=T + 1
    )
    assert (job_id, retried, problem) == (job.id, False, None)
    assert (await queue.finished_result(job.id)).reason == "fatal"


async def test_refresh_reads_the_job_again(queue: JobQueue) -> None:
    job = await queue.add("job", {"v": 1}, now=T)
    await queue.update_data(job.id, {"v": 2})
    assert job.data == {"v": 1}
    await job.refresh()
    assert job.data == {"v": 2}


async def test_complete_and_claim_completes_first_then_claims(queue: JobQueue) -> None:
    for i in range(4):
        await queue.add("job", i, now=T)
    a, b = await queue.claim("w", lease=10.0, max_jobs=2, now=T)
    assert a.lock_token and b.lock_token
    refused, claimed = await queue.complete_and_claim(
        [(a.id, a.lock_token, "A"), (b.id, "stale", "B")], "w", lease=10.0, max_jobs=5, now=T + 1
    )
    assert [job_id for job_id, _ in refused] == [b.id]
    assert [job.data for job in claimed] == [2, 3]
    assert all(job.state == "active" and job.lock_token for job in claimed)
    assert (await queue.finished_result(a.id)).value == "A"
    assert await queue.get_job_counts("completed", "active", "waiting") == {
        "completed": 1,
        "active": 3,
        "waiting": 0,
    }


async def test_complete_and_claim_with_no_slots_only_completes(queue: JobQueue) -> None:
    await queue.add("job", 1, now=T)
    await queue.add("job", 2, now=T)
    [a] = await queue.claim("w", lease=10.0, now=T)
    refused, claimed = await queue.complete_and_claim(
        [(a.id, a.lock_token or "", None)], "w", max_jobs=0, now=T + 1
    )
    assert (refused, claimed) == ([], [])
    assert await queue.get_job_counts("completed", "waiting") == {"completed": 1, "waiting": 1}


async def test_complete_and_claim_refuses_a_bad_result_before_writing(queue: JobQueue) -> None:
    await queue.add("job", 1, now=T)
    await queue.add("job", 2, now=T)
    [a] = await queue.claim("w", lease=10.0, now=T)
    try:
        await queue.complete_and_claim([(a.id, a.lock_token or "", {1, 2})], "w", now=T + 1)
    except TypeError as error:
        assert a.id in str(error)
    else:
        raise AssertionError("a set is not JSON")
    assert await queue.get_job_counts("active", "waiting") == {"active": 1, "waiting": 1}
