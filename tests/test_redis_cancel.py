"""Cancellation on Redis (lua/cancel-2.lua, crates/lanemq-redis/src/cancels.rs), through the
public API: a job that has not started fails for good at once; an active one keeps running
with its request stored and pushed to the workers (`wait_cancels`, woken by the push in this
process and in another), answered by its lease renewal, and failing it when it stalls or is
released; any other way out of active drops the request. Also `max_started_attempts`, counted
in stall recovery and in a failure with retries. The worker side is the conformance suite's
(tests/conformance/test_cancel.py)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator

import pytest
from lanemq import CancelRequestedError, FlowJob, Job, JobNotFoundError, RedisJobQueue
from redis_support import Resp, queue_key
from support import EPOCH_MS as T
from support import Spawn, redis_prefix

WAIT = 10.0  # upper bound for anything awaited; never reached when things work
PUSH_BOUND = 1.0  # a request reaches a blocked waiter within this (generous: ~ a round trip)
STARTED_REASON = "job started more than allowable limit"


@pytest.fixture
async def queue(redis_url: str) -> AsyncIterator[RedisJobQueue]:
    made = RedisJobQueue("cancels", redis_url, prefix=redis_prefix())
    try:
        yield made
    finally:
        await made.obliterate(force=True)


async def _events(
    queue: RedisJobQueue, job_id: str, after: int = 0
) -> list[tuple[str, dict[str, str]]]:
    """The job's events after id ``after``: (name, fields), oldest first."""
    return [(e.event, e.fields) for e in await queue.read_events(after + 1) if e.job_id == job_id]


async def _claim_one(queue: RedisJobQueue, lease: float = 30.0, now: int = T) -> tuple[str, str]:
    (job,) = await queue.claim("w1", lease, now=now)
    assert job.lock_token is not None
    return job.id, job.lock_token


async def _get(queue: RedisJobQueue, job_id: str) -> Job:
    job = await queue.get_job(job_id)
    assert job is not None
    return job


# ------------------------------------------------------- jobs that have not started


@pytest.mark.parametrize("kind", ["waiting", "prioritized", "lifo", "delayed"])
async def test_a_job_that_has_not_started_fails_for_good_at_once(
    queue: RedisJobQueue, kind: str
) -> None:
    options = {
        "waiting": {},
        "prioritized": {"priority": 3},
        "lifo": {"lifo": True},
        "delayed": {"delay": 5.0},
    }[kind]
    other = await queue.add("other", None, now=T)
    job = await queue.add("doomed", {"x": 1}, now=T, **options)  # type: ignore[arg-type]
    mark = await queue._core.last_event_id()
    reason = "not wanted — any more"
    assert await queue.cancel(job.id, reason, now=T + 10) == "failed"

    done = await _get(queue, job.id)
    assert done.state == "failed"
    assert done.failed_reason == reason
    assert done.stacktrace == [f"JobCancelledError: {reason}"]
    assert done.finished_on == T + 10
    assert done.attempts_made == 0
    assert await _events(queue, job.id, mark) == [
        ("cancelled", {"reason": reason}),
        ("failed", {"failedReason": reason}),
    ]
    # It never runs: past its delay too, a claim takes only the other job.
    claimed = await queue.claim("w1", 30.0, max_jobs=5, now=T + 60_000)
    assert [j.id for j in claimed] == [other.id]
    counts = await queue.get_job_counts()
    assert counts["failed"] == 1 and counts["waiting"] == 0 and counts["delayed"] == 0
    assert await queue._core.last_cancel_seq() == 0  # nothing pushed to the workers


async def test_a_parent_waiting_for_its_children_fails_and_a_cancelled_child_fails_its_parent(
    queue: RedisJobQueue,
) -> None:
    node = await queue.add_flow(
        FlowJob("parent", None, children=[FlowJob("a", None), FlowJob("b", None)]), now=T
    )
    parent = node.job
    a, b = (child.job for child in node.children)
    assert parent.state == "waiting_children"
    assert await queue.cancel(a.id, "no a", now=T + 1) == "failed"
    # Its parent hears of it as of any failure for good: it fails too (fail_parent).
    failed_parent = await _get(queue, parent.id)
    assert failed_parent.state == "failed"
    assert failed_parent.failed_reason == f"child {a.id} failed: no a"
    assert (await _get(queue, b.id)).state == "waiting"

    other = await queue.add_flow(FlowJob("parent2", None, children=[FlowJob("c", None)]), now=T)
    assert await queue.cancel(other.job.id, "no parent", now=T + 2) == "failed"
    cancelled = await _get(queue, other.job.id)
    assert (cancelled.state, cancelled.failed_reason) == ("failed", "no parent")
    assert cancelled.stacktrace == ["JobCancelledError: no parent"]


async def test_a_finished_job_is_left_as_it_is_and_an_unknown_one_is_refused(
    queue: RedisJobQueue,
) -> None:
    await queue.add("a", None, now=T)
    job_id, token = await _claim_one(queue)
    await queue.complete(job_id, token, "ok", now=T + 1)
    mark = await queue._core.last_event_id()
    assert await queue.cancel(job_id, "late", now=T + 2) == "finished"
    done = await _get(queue, job_id)
    assert (done.state, done.return_value, done.stacktrace) == ("completed", "ok", [])
    assert await _events(queue, job_id, mark) == []

    failed = await queue.add("b", None, now=T)
    assert await queue.cancel(failed.id, "first", now=T + 3) == "failed"
    assert await queue.cancel(failed.id, "second", now=T + 4) == "finished"
    assert (await _get(queue, failed.id)).failed_reason == "first"

    with pytest.raises(JobNotFoundError, match="nope"):
        await queue.cancel("nope", "why")


# ------------------------------------------------------------------- active jobs


async def test_an_active_job_keeps_running_with_its_request_pushed(queue: RedisJobQueue) -> None:
    await queue.add("a", None, now=T)
    job_id, token = await _claim_one(queue)
    before = await queue._core.last_cancel_seq()
    mark = await queue._core.last_event_id()
    assert await queue.cancel(job_id, "stop it", now=T + 5) == "requested"

    still = await _get(queue, job_id)
    assert (still.state, still.lock_token, still.failed_reason) == ("active", token, None)
    seq = await queue._core.last_cancel_seq()
    assert seq == before + 1
    assert await queue._core.wait_cancels(before) == [(seq, job_id, "stop it")]
    assert await queue._core.wait_cancels(seq) == []
    assert await _events(queue, job_id, mark) == [("cancelled", {"reason": "stop it"})]

    # Again: the request is sent again, with its new reason, under the next seq.
    assert await queue.cancel(job_id, "really", now=T + 6) == "requested"
    assert await queue._core.wait_cancels(before, 1.0) == [
        (seq, job_id, "stop it"),
        (seq + 1, job_id, "really"),
    ]
    with pytest.raises(CancelRequestedError, match="really"):
        await queue.renew(job_id, token, 30.0, now=T + 7)


async def test_a_blocked_wait_cancels_wakes_on_the_push(queue: RedisJobQueue) -> None:
    await queue.add("a", None, now=T)
    job_id, _ = await _claim_one(queue)
    after = await queue._core.last_cancel_seq()
    # Nothing past `after`: a wait with a timeout returns nothing once it is over.
    assert await queue._core.wait_cancels(after, 0.2) == []
    waiter = asyncio.ensure_future(queue._core.wait_cancels(after, WAIT))
    await asyncio.sleep(0.3)
    assert not waiter.done()
    # Meanwhile the shared connection serves other calls (the wait has its own).
    assert (await _get(queue, job_id)).state == "active"
    started = time.monotonic()
    await queue.cancel(job_id, "now")
    got = await asyncio.wait_for(waiter, WAIT)
    elapsed = time.monotonic() - started
    assert got == [(after + 1, job_id, "now")]
    assert elapsed < PUSH_BOUND, f"the waiter woke {elapsed:.3f}s after the cancel"


_CHILD_WAITER = """
import asyncio, json, sys
from lanemq import RedisJobQueue

async def main() -> None:
    url, prefix = sys.argv[1], sys.argv[2]
    queue = RedisJobQueue("cancels", url, prefix=prefix)
    after = await queue._core.last_cancel_seq()
    print("ready", flush=True)
    got = await queue._core.wait_cancels(after, 20.0)
    print(json.dumps(got), flush=True)

asyncio.run(main())
"""


async def test_a_wait_cancels_in_another_process_hears_the_request(
    queue: RedisJobQueue, redis_url: str, spawn: Spawn
) -> None:
    await queue.add("a", None, now=T)
    job_id, _ = await _claim_one(queue)
    child = await spawn(_CHILD_WAITER, redis_url, queue.prefix)
    assert await child.line() == "ready", child.stderr()
    await asyncio.sleep(0.3)  # (blocked by now; a request before that is found all the same)
    started = time.monotonic()
    await queue.cancel(job_id, "from afar")
    line = await child.line()
    elapsed = time.monotonic() - started
    assert json.loads(line) == [[1, job_id, "from afar"]], child.stderr()
    assert elapsed < PUSH_BOUND, f"the other process heard it {elapsed:.3f}s after the cancel"


async def test_the_renewal_answers_a_request_and_still_renews(queue: RedisJobQueue) -> None:
    await queue.add("a", None, now=T)
    await queue.add("b", None, now=T)
    (a, b) = await queue.claim("w1", 10.0, max_jobs=2, now=T)
    assert a.lock_token and b.lock_token
    await queue.cancel(a.id, "enough", now=T + 1)
    with pytest.raises(CancelRequestedError, match="enough") as raised:
        await queue.renew(a.id, a.lock_token, 10.0, now=T + 5_000)
    assert a.id in str(raised.value)
    # renew_many renews both (whether the binding lists a requested job among the lost ones
    # is its own: the backend answers it as CancelRequested).
    lost = await queue.renew_many([(a.id, a.lock_token), (b.id, b.lock_token)], 10.0, now=T + 5_000)
    assert b.id not in lost
    # Both leases were extended (to T + 15 s): nothing stalled at T + 12 s.
    assert await queue.recover_stalled(now=T + 12_000) == ([], [])
    assert (await _get(queue, a.id)).state == "active"


async def test_stall_recovery_of_a_requested_job_fails_it_with_the_reason(
    queue: RedisJobQueue,
) -> None:
    job = await queue.add("a", None, attempts=3, max_stalled_count=5, now=T)
    await _claim_one(queue, lease=1.0)
    await queue.cancel(job.id, "gone", now=T + 10)
    mark = await queue._core.last_event_id()
    assert await queue.recover_stalled(now=T + 5_000) == ([], [job.id])
    done = await _get(queue, job.id)
    assert (done.state, done.failed_reason, done.finished_on) == ("failed", "gone", T + 5_000)
    assert done.stacktrace == ["JobCancelledError: gone"]
    # No stall counted: it does not start again either way.
    assert (done.stalled_count, done.attempts_made) == (0, 1)
    names = [name for name, _ in await _events(queue, job.id, mark)]
    assert names == ["failed"]


async def test_release_of_a_requested_job_fails_it_with_the_reason(queue: RedisJobQueue) -> None:
    job = await queue.add("a", None, attempts=3, now=T)
    job_id, token = await _claim_one(queue)
    await queue.cancel(job_id, "shutting down anyway", now=T + 1)
    await queue.release(job_id, token, now=T + 2)
    done = await _get(queue, job.id)
    assert (done.state, done.failed_reason) == ("failed", "shutting down anyway")
    assert done.stacktrace == ["JobCancelledError: shutting down anyway"]
    assert done.attempts_made == 1
    assert await queue.claim("w1", 30.0, now=T + 3) == []


async def test_completion_after_a_request_is_accepted(queue: RedisJobQueue, redis_url: str) -> None:
    await queue.add("a", None, now=T)
    job_id, token = await _claim_one(queue)
    await queue.cancel(job_id, "too late", now=T + 1)
    with Resp.of(redis_url) as raw:
        assert raw.command("HGET", queue_key(queue, f"job:{job_id}"), "cancel") == "too late"
        await queue.complete(job_id, token, {"done": True}, now=T + 2)
        # The request went with the job's leaving active.
        assert raw.command("HGET", queue_key(queue, f"job:{job_id}"), "cancel") is None
    done = await _get(queue, job_id)
    assert (done.state, done.failed_reason) == ("completed", None)
    assert done.return_value == {"done": True}


async def test_a_failure_of_a_requested_job_is_never_retried(
    queue: RedisJobQueue, redis_url: str
) -> None:
    job = await queue.add("a", None, attempts=3, now=T)
    job_id, token = await _claim_one(queue)
    await queue.cancel(job_id, "stop", now=T + 1)
    assert not await queue.fail(job_id, token, "CancelledError", retry=True, now=T + 2)
    done = await _get(queue, job.id)
    assert (done.state, done.failed_reason) == ("failed", "CancelledError")
    with Resp.of(redis_url) as raw:
        assert raw.command("HGET", queue_key(queue, f"job:{job_id}"), "cancel") is None


async def test_a_request_goes_when_the_job_moves_to_delayed(queue: RedisJobQueue) -> None:
    job = await queue.add("a", None, attempts=3, now=T)
    job_id, token = await _claim_one(queue)
    await queue.cancel(job_id, "meant for the first attempt", now=T + 1)
    await queue.move_to_delayed(job_id, token, delay_until=T + 3, now=T + 2)
    again_id, again = await _claim_one(queue, now=T + 10)
    assert again_id == job.id
    # The next attempt runs without the old request: its renewal is plain.
    await queue.renew(again_id, again, 30.0, now=T + 11)
    await queue.complete(again_id, again, None, now=T + 12)
    assert (await _get(queue, job.id)).state == "completed"


async def test_obliterate_takes_the_requests_stream_too(
    queue: RedisJobQueue, redis_url: str
) -> None:
    await queue.add("a", None, now=T)
    job_id, _ = await _claim_one(queue)
    await queue.cancel(job_id, "x")
    with Resp.of(redis_url) as raw:
        key = queue_key(queue, "cancels")
        assert raw.command("TYPE", key) == "stream"
        # Requests last about a minute after the last one: older ones are the renewal's.
        assert 0 < raw.command("PTTL", key) <= 60_000
        await queue.obliterate(force=True)
        assert raw.scan(f"{queue.prefix}:*") == []


async def test_the_stream_keeps_about_the_newest_thousand_requests(
    queue: RedisJobQueue, redis_url: str
) -> None:
    await queue.add("a", None, now=T)
    job_id, _ = await _claim_one(queue)
    for n in range(1_250):
        await queue.cancel(job_id, f"r{n}")
    assert await queue._core.last_cancel_seq() == 1_250
    kept = await queue._core.wait_cancels(0)
    # (trimmed by whole nodes of the stream: about 1,000, never fewer)
    assert 1_000 <= len(kept) < 1_250
    assert kept[-1] == (1_250, job_id, "r1249")
    assert [seq for seq, _, _ in kept] == list(range(1_251 - len(kept), 1_251))
    with Resp.of(redis_url) as raw:
        assert raw.command("XLEN", queue_key(queue, "cancels")) == len(kept)


# --------------------------------------------------------------- max_started_attempts


async def test_max_started_attempts_counts_stalls(queue: RedisJobQueue) -> None:
    job = await queue.add("a", None, max_started_attempts=2, max_stalled_count=10, now=T)
    await _claim_one(queue, lease=1.0, now=T)
    assert await queue.recover_stalled(now=T + 2_000) == ([job.id], [])
    await _claim_one(queue, lease=1.0, now=T + 3_000)
    # Started twice: a third start would pass the limit.
    assert await queue.recover_stalled(now=T + 5_000) == ([], [job.id])
    done = await _get(queue, job.id)
    assert (done.state, done.failed_reason, done.stalled_count) == ("failed", STARTED_REASON, 2)


async def test_max_started_attempts_ends_retries_and_releases_do_not_count(
    queue: RedisJobQueue,
) -> None:
    job = await queue.add("a", None, attempts=5, max_started_attempts=2, now=T)
    job_id, token = await _claim_one(queue)
    await queue.release(job_id, token, now=T + 1)  # given back on purpose: no start counted
    job_id, token = await _claim_one(queue, now=T + 2)
    assert await queue.fail(job_id, token, "one", retry=True, now=T + 3)
    job_id, token = await _claim_one(queue, now=T + 4)
    # Its second start ended: a retry would start it a third time.
    assert not await queue.fail(job_id, token, "two", retry=True, now=T + 5)
    done = await _get(queue, job.id)
    assert (done.state, done.failed_reason, done.attempts_made) == ("failed", STARTED_REASON, 2)
    assert done.stacktrace == []  # (no trace was given with either failure)
    # The same report sent again (its reply lost) is answered with that outcome.
    assert not await queue.fail(job_id, token, "two", retry=True, now=T + 6)

    plain = await queue.add("b", None, attempts=3, now=T)
    plain_id, plain_token = await _claim_one(queue, now=T + 7)
    assert plain_id == plain.id
    assert await queue.fail(plain_id, plain_token, "no limit", retry=True, now=T + 8)


# ---------------------------------------------------------------------- Redis Cluster


async def test_cancel_on_a_redis_cluster(redis_cluster3_url: str) -> None:
    queue = RedisJobQueue("cancels", redis_cluster3_url, prefix=redis_prefix())
    try:
        waiting = await queue.add("w", None, now=T)
        await queue.add("a", None, now=T)
        assert await queue.cancel(waiting.id, "not this one", now=T + 1) == "failed"
        job_id, token = await _claim_one(queue, now=T + 2)
        after = await queue._core.last_cancel_seq()
        waiter = asyncio.ensure_future(queue._core.wait_cancels(after, WAIT))
        await asyncio.sleep(0.3)
        assert not waiter.done()
        assert await queue.cancel(job_id, "this one", now=T + 3) == "requested"
        assert await asyncio.wait_for(waiter, WAIT) == [(after + 1, job_id, "this one")]
        with pytest.raises(CancelRequestedError):
            await queue.renew(job_id, token, 30.0, now=T + 4)
        failed = await _get(queue, waiting.id)
        assert (failed.state, failed.failed_reason) == ("failed", "not this one")
    finally:
        await queue.obliterate(force=True)
        await queue.close()
