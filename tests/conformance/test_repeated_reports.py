"""A report repeated by the attempt that made it: a worker sends a completion or a failure
again when the reply of the first was lost (a connection cut, a server restart). The same
report by the same token is answered as done and changes nothing; any other (a stale token,
another result) is refused as before, so fencing holds."""

from __future__ import annotations

import pytest
from lanemq import Backoff, JobNotFoundError, JobQueue, JobStateError
from support import EPOCH_MS as T

from .helpers import claim_one, stored_job


async def _count(queue: JobQueue, job_id: str, event: str) -> int:
    return sum(1 for ev in await queue.read_events() if ev.job_id == job_id and ev.event == event)


@pytest.mark.parametrize("result", [{"sent": 1}, None])
async def test_a_completion_repeated_by_its_token_is_done_once(
    queue: JobQueue, result: object
) -> None:
    job = await queue.add("send", None, now=T)
    token = (await claim_one(queue, T + 1)).lock_token
    assert token
    item = (job.id, token, result)
    assert await queue.complete_many([item], now=T + 2) == []

    # The same report again, through each way a completion is sent.
    assert await queue.complete_many([item], now=T + 3) == []
    assert await queue.complete_and_claim([item], "w", max_jobs=1, now=T + 4) == ([], [])
    await queue.complete(job.id, token, result, now=T + 5)

    stored = await stored_job(queue, job.id)
    assert (stored.state, stored.finished_on, stored.return_value, stored.lock_token) == (
        "completed",
        T + 2,
        result,
        None,
    )
    assert await _count(queue, job.id, "completed") == 1
    assert await queue.get_job_counts("completed", "active") == {"completed": 1, "active": 0}


async def test_a_job_named_twice_in_one_batch_is_completed_once(queue: JobQueue) -> None:
    job = await queue.add("send", None, now=T)
    token = (await claim_one(queue, T + 1)).lock_token
    assert token
    errors = await queue.complete_many([(job.id, token, "A"), (job.id, token, "A")], now=T + 2)
    assert errors == []
    assert await _count(queue, job.id, "completed") == 1


async def test_a_completion_by_another_token_or_with_another_result_is_refused(
    queue: JobQueue,
) -> None:
    job = await queue.add("send", None, now=T)
    stale = (await claim_one(queue, T + 1, lease=1.0)).lock_token
    assert await queue.recover_stalled(now=T + 2000) == ([job.id], [])
    token = (await claim_one(queue, T + 2001)).lock_token
    assert stale and token and stale != token
    assert await queue.complete_many([(job.id, token, "B")], now=T + 2002) == []

    # The stalled attempt's completion: the job was completed by another attempt.
    refused = await queue.complete_many([(job.id, stale, "B")], now=T + 2003)
    assert [job_id for job_id, _ in refused] == [job.id]
    with pytest.raises(JobStateError):
        await queue.complete(job.id, stale, "B", now=T + 2003)
    # The finishing token with another result is not the same report.
    with pytest.raises(JobStateError):
        await queue.complete(job.id, token, "other", now=T + 2003)
    # Nor is a failure by the token that completed it.
    [(_, retried, problem)] = await queue.fail_many(
        [(job.id, token, "late", None, False)], now=T + 2003
    )
    assert not retried and problem is not None

    assert (await queue.finished_result(job.id)).value == "B"
    assert await _count(queue, job.id, "completed") == 1


async def test_a_completion_repeated_after_retention_removed_the_job_is_not_found(
    queue: JobQueue,
) -> None:
    # Its record is gone, and with it the token that would tell this attempt's completion
    # from another's: the repeat is refused as missing (the worker reports it as lost).
    job = await queue.add("send", None, remove_on_complete=True, now=T)
    token = (await claim_one(queue, T + 1)).lock_token
    assert token
    await queue.complete(job.id, token, "A", now=T + 2)
    with pytest.raises(JobNotFoundError):
        await queue.complete(job.id, token, "A", now=T + 3)


async def test_a_failure_repeated_by_its_token_is_done_once(queue: JobQueue) -> None:
    job = await queue.add("send", None, attempts=1, now=T)
    token = (await claim_one(queue, T + 1)).lock_token
    assert token
    item = (job.id, token, "boom", "at line 1", True)
    assert await queue.fail_many([item], now=T + 2) == [(job.id, False, None)]
    assert await queue.fail_many([item], now=T + 3) == [(job.id, False, None)]

    stored = await stored_job(queue, job.id)
    assert (stored.state, stored.finished_on, stored.failed_reason, stored.stacktrace) == (
        "failed",
        T + 2,
        "boom",
        ["at line 1"],
    )
    assert await _count(queue, job.id, "failed") == 1
    # Another reason is another report: refused.
    [(_, _, problem)] = await queue.fail_many([(job.id, token, "other", None, True)], now=T + 4)
    assert problem is not None
    with pytest.raises(JobStateError):
        await queue.complete(job.id, token, None, now=T + 4)


async def test_a_retried_failure_repeated_by_its_token_keeps_its_outcome(queue: JobQueue) -> None:
    later = await queue.add("send", "later", attempts=2, backoff=Backoff.fixed(5.0), now=T)
    now_ = await queue.add("send", "now", attempts=2, now=T)
    claimed = {job.id: job for job in await queue.claim("w", lease=30.0, max_jobs=2, now=T + 1)}
    items = [
        (later.id, claimed[later.id].lock_token or "", "busy", None, True),
        (now_.id, claimed[now_.id].lock_token or "", "busy", None, True),
    ]
    first = await queue.fail_many(items, now=T + 2)
    assert first == [(later.id, True, None), (now_.id, True, None)]
    assert await queue.fail_many(items, now=T + 3) == first

    assert (await stored_job(queue, later.id)).state == "delayed"
    assert (await stored_job(queue, now_.id)).state == "waiting"
    assert await _count(queue, later.id, "delayed") == 1
    assert await _count(queue, now_.id, "waiting") == 2  # added, then retried once
    # Claimed again: the new attempt's lock fences the old report off.
    again = await claim_one(queue, T + 4)
    assert again.id == now_.id
    [(_, _, problem)] = await queue.fail_many([items[1]], now=T + 5)
    assert problem is not None
    assert (await stored_job(queue, now_.id)).lock_token == again.lock_token
