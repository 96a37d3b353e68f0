"""Cancellation on every backend (`JobQueue.cancel`, `cancel_group`): a job that has not
started fails for good and never runs; a running one is stopped by its worker, pushed there
(the listener) or, for a worker that missed the push, through its lease renewal; stall
recovery and release of a job whose cancellation was requested fail it; `max_started_attempts`.

Every wait is bounded by `asyncio.wait_for(..., LIMIT)`; the one latency bound (a running
job stopped within 1 s of `cancel()`) is the issue's, measured generously."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Coroutine
from typing import Any

import pytest
from lanemq import (
    BackendConnectionError,
    CancelRequestedError,
    FlowJob,
    Job,
    JobCancelledError,
    JobFailedError,
    JobNotFoundError,
    JobQueue,
    JobWorker,
)
from support import EPOCH_MS as T

from .helpers import claim_one, lock_token, stored_job
from .test_worker import LIMIT, running

STARTED_LIMIT = "job started more than allowable limit"


async def _events(queue: JobQueue, job_id: str) -> list[tuple[str, dict[str, str]]]:
    return [(ev.event, dict(ev.fields)) for ev in await queue.read_events() if ev.job_id == job_id]


async def _assert_cancelled(queue: JobQueue, job_id: str, reason: str) -> None:
    job = await stored_job(queue, job_id)
    assert job.state == "failed"
    assert job.failed_reason == reason
    assert job.stacktrace[-1] == f"JobCancelledError: {reason}"
    with pytest.raises(JobCancelledError) as raised:
        await asyncio.wait_for(job.wait(), LIMIT)
    assert reason in str(raised.value)
    assert isinstance(raised.value, JobFailedError) and raised.value.reason == reason


# ------------------------------------------------------------------ jobs not started


@pytest.mark.parametrize("kind", ["waiting", "prioritized", "delayed"])
async def test_cancel_a_job_not_started_fails_it_for_good(queue: JobQueue, kind: str) -> None:
    options: dict[str, Any] = {"attempts": 3}
    if kind == "prioritized":
        options["priority"] = 5
    if kind == "delayed":
        options["delay"] = 60.0
    job = await queue.add("send", {"n": 1}, **options)
    assert await queue.cancel(job.id, reason="user asked") == "failed"

    await _assert_cancelled(queue, job.id, "user asked")
    stored = await stored_job(queue, job.id)
    assert stored.attempts_made == 0
    events = await _events(queue, job.id)
    assert ("cancelled", {"reason": "user asked"}) in events
    assert any(name == "failed" and f.get("failedReason") == "user asked" for name, f in events)
    # It never runs.
    assert await queue.claim("w", lease=5.0, max_jobs=5) == []
    assert await queue.get_job_counts("failed") == {"failed": 1}


async def test_cancel_a_parent_waiting_for_children_cancels_them_too(
    queue: JobQueue, sibling: Any
) -> None:
    other = sibling("kids")
    node = await queue.add_flow(
        FlowJob(
            "parent",
            children=[
                FlowJob("child", {"i": 1}),
                FlowJob("child", {"i": 2}, queue=other.name),
            ],
        )
    )
    parent = node.job
    assert await queue.get_state(parent.id) == "waiting_children"
    assert await queue.cancel(parent.id, reason="flow dropped") == "failed"

    await _assert_cancelled(queue, parent.id, "flow dropped")
    for child in node.children:
        owner = queue if child.job.queue.name == queue.name else other
        assert await owner.get_state(child.job.id) == "failed"
        assert (await stored_job(owner, child.job.id)).failed_reason == "flow dropped"
    assert await queue.claim("w", lease=5.0, max_jobs=5) == []
    assert await other.claim("w", lease=5.0, max_jobs=5) == []


async def test_cancel_a_finished_job_changes_nothing(queue: JobQueue) -> None:
    await queue.add("a", None, now=T)
    job = await claim_one(queue, T + 1)
    await queue.complete(job.id, lock_token(job), "done", now=T + 2)
    before = await _events(queue, job.id)
    assert await queue.cancel(job.id, reason="too late") == "finished"
    assert (await stored_job(queue, job.id)).state == "completed"
    assert await _events(queue, job.id) == before


async def test_cancel_an_unknown_job_raises(queue: JobQueue) -> None:
    with pytest.raises(JobNotFoundError):
        await queue.cancel("no-such-job", reason="x")


# ------------------------------------------------------------------ active jobs, no worker


async def test_cancel_an_active_job_is_a_request_its_renewal_answers(queue: JobQueue) -> None:
    await queue.add("a", None, now=T)
    job = await claim_one(queue, T + 1, lease=5.0)
    token = lock_token(job)
    before = await queue.last_cancel_seq()
    assert await queue.cancel(job.id, reason="stop it") == "requested"
    assert await queue.cancel(job.id, reason="stop it") == "requested"  # sent again

    stored = await stored_job(queue, job.id)
    assert stored.state == "active" and stored.lock_token == token
    assert ("cancelled", {"reason": "stop it"}) in await _events(queue, job.id)
    heard = await queue.wait_cancels(before, timeout=1.0)
    assert [(job_id, reason) for _, job_id, reason in heard] == [(job.id, "stop it")] * 2
    assert heard[0][0] > before and heard[1][0] > heard[0][0]

    # The fallback road: the renewal renews the lease and answers with the request.
    with pytest.raises(CancelRequestedError, match="stop it"):
        await queue.renew(job.id, token, 5.0, now=T + 100)
    renewed = await stored_job(queue, job.id)
    assert renewed.state == "active" and renewed.lock_token == token
    assert await queue.renew_many([(job.id, token)], 5.0, now=T + 100) == []  # not lost

    # The worker fails it for good with the reason; no retry although attempts remain.
    retried = await queue.fail(
        job.id, token, "stop it", "JobCancelledError: stop it", retry=False, now=T + 200
    )
    assert not retried
    await _assert_cancelled(queue, job.id, "stop it")


async def test_a_failure_of_a_requested_job_is_never_retried(queue: JobQueue) -> None:
    await queue.add("a", None, attempts=3, now=T)
    job = await claim_one(queue, T + 1)
    await queue.cancel(job.id, reason="stop")
    retried = await queue.fail(job.id, lock_token(job), "boom", now=T + 2)
    assert not retried
    assert (await stored_job(queue, job.id)).state == "failed"


async def test_a_completion_before_the_worker_acts_is_accepted(queue: JobQueue) -> None:
    await queue.add("a", None, attempts=3, now=T)
    job = await claim_one(queue, T + 1)
    await queue.cancel(job.id, reason="stop")
    await queue.complete(job.id, lock_token(job), "ok", now=T + 2)
    assert (await stored_job(queue, job.id)).state == "completed"


async def test_wait_cancels_waits_for_a_push(queue: JobQueue) -> None:
    await queue.add("a", None)
    job = (await queue.claim("w", lease=30.0))[0]
    last = await queue.last_cancel_seq()
    assert await queue.wait_cancels(last) == []  # no timeout: no wait
    waiting = asyncio.ensure_future(queue.wait_cancels(last, timeout=LIMIT))
    await asyncio.sleep(0.05)
    assert not waiting.done()
    await queue.cancel(job.id, reason="now")
    heard = await asyncio.wait_for(waiting, LIMIT)
    assert [(job_id, reason) for _, job_id, reason in heard] == [(job.id, "now")]
    assert await queue.last_cancel_seq() == heard[-1][0]


async def test_stall_recovery_of_a_requested_job_fails_it(queue: JobQueue) -> None:
    await queue.add("a", None, attempts=3, max_stalled_count=5, now=T)
    job = await claim_one(queue, T, lease=1.0)
    await queue.cancel(job.id, reason="gone", now=T + 10)
    recovered, failed = await queue.recover_stalled(now=T + 2000)
    assert (recovered, failed) == ([], [job.id])
    await _assert_cancelled(queue, job.id, "gone")


async def test_release_of_a_requested_job_fails_it(queue: JobQueue) -> None:
    await queue.add("a", None, attempts=3, now=T)
    job = await claim_one(queue, T)
    await queue.cancel(job.id, reason="shutting down anyway", now=T + 1)
    await queue.release(job.id, lock_token(job), now=T + 2)
    await _assert_cancelled(queue, job.id, "shutting down anyway")


async def test_a_request_does_not_outlive_its_claim(queue: JobQueue) -> None:
    await queue.add("a", None, attempts=3, now=T)
    job = await claim_one(queue, T, lease=1.0)
    await queue.cancel(job.id, reason="old", now=T + 1)
    await queue.move_to_delayed(job.id, lock_token(job), delay_until=T + 5, now=T + 2)
    again = await claim_one(queue, T + 10, lease=5.0)
    assert again.id == job.id
    await queue.renew(again.id, lock_token(again), 5.0, now=T + 20)  # no request
    await queue.complete(again.id, lock_token(again), "ok", now=T + 30)


# ------------------------------------------------------------------ max_started_attempts


async def test_max_started_attempts_counts_stalls(queue: JobQueue) -> None:
    await queue.add("a", None, attempts=5, max_stalled_count=10, max_started_attempts=2, now=T)
    first = await claim_one(queue, T, lease=1.0)
    assert await queue.recover_stalled(now=T + 2000) == ([first.id], [])
    await claim_one(queue, T + 3000, lease=1.0)
    assert await queue.recover_stalled(now=T + 5000) == ([], [first.id])
    stored = await stored_job(queue, first.id)
    assert stored.state == "failed" and stored.failed_reason == STARTED_LIMIT


async def test_max_started_attempts_stops_retries(queue: JobQueue) -> None:
    await queue.add("a", None, attempts=5, max_started_attempts=2, now=T)
    job = await claim_one(queue, T)
    retried = await queue.fail(job.id, lock_token(job), "boom", now=T + 1)
    assert retried
    job = await claim_one(queue, T + 2)
    retried = await queue.fail(job.id, lock_token(job), "boom", now=T + 3)
    assert not retried
    stored = await stored_job(queue, job.id)
    assert stored.state == "failed" and stored.failed_reason == STARTED_LIMIT
    with pytest.raises(JobFailedError, match=STARTED_LIMIT):
        await asyncio.wait_for(stored.wait(), LIMIT)


async def test_max_started_attempts_ignores_releases(queue: JobQueue) -> None:
    await queue.add("a", None, attempts=5, max_started_attempts=1, now=T)
    job = await claim_one(queue, T)
    await queue.release(job.id, lock_token(job), now=T + 1)  # given back on purpose
    job = await claim_one(queue, T + 2)
    await queue.complete(job.id, lock_token(job), "ok", now=T + 3)
    assert (await stored_job(queue, job.id)).state == "completed"


# ------------------------------------------------------------------ a running worker


async def test_cancel_stops_a_running_job_on_its_worker(queue: JobQueue) -> None:
    started = asyncio.Event()
    stopped_at: list[float] = []

    async def slow(job: Job) -> str:
        started.set()
        try:
            await asyncio.sleep(60)
        finally:
            stopped_at.append(time.monotonic())
        return "never"

    worker = JobWorker(queue, {"slow": slow})
    job = await queue.add("slow", None, attempts=3)
    async with running(worker):
        await asyncio.wait_for(started.wait(), LIMIT)
        asked = time.monotonic()
        assert await queue.cancel(job.id, reason="user aborted") == "requested"
        with pytest.raises(JobCancelledError, match="user aborted"):
            await asyncio.wait_for(job.wait(), LIMIT)
        assert stopped_at, "the processor's finally did not run"
        assert stopped_at[0] - asked < 1.0
    await _assert_cancelled(queue, job.id, "user aborted")
    stored = await stored_job(queue, job.id)
    assert stored.attempts_made == 1  # no retry although attempts remain
    assert worker.failed == 1


async def test_a_plain_def_processor_sees_job_cancelled(queue: JobQueue) -> None:
    started = threading.Event()
    saw_it = threading.Event()

    def blocking(job: Job) -> str:
        started.set()
        deadline = time.monotonic() + LIMIT
        while time.monotonic() < deadline:
            if job.cancelled:
                saw_it.set()
                return "stopped early"
            time.sleep(0.01)
        return "ran to the end"

    worker = JobWorker(queue, {"blocking": blocking})
    job = await queue.add("blocking", None)
    assert job.cancelled is False
    async with running(worker):
        await asyncio.wait_for(asyncio.to_thread(started.wait, LIMIT), LIMIT)
        await queue.cancel(job.id, reason="enough")
        with pytest.raises(JobCancelledError, match="enough"):
            await asyncio.wait_for(job.wait(), LIMIT)
        assert await asyncio.to_thread(saw_it.wait, LIMIT)
    await _assert_cancelled(queue, job.id, "enough")


async def test_cancel_a_job_of_a_running_batch(queue: JobQueue) -> None:
    started = asyncio.Event()
    release = asyncio.Event()
    cancelled_batch: list[bool] = []

    worker = JobWorker(queue, concurrency=1)

    @worker.batch_processor("b", size=2, min_size=2, timeout=0.01)
    async def batch(jobs: list[Job]) -> list[str]:
        started.set()
        try:
            await release.wait()
        except asyncio.CancelledError:
            cancelled_batch.append(True)
            raise
        return [f"done {job.id}" for job in jobs]

    first = await queue.add("b", 1)
    second = await queue.add("b", 2)
    async with running(worker):
        await asyncio.wait_for(started.wait(), LIMIT)
        await queue.cancel(first.id, reason="not this one")
        with pytest.raises(JobCancelledError):
            await asyncio.wait_for(first.wait(), LIMIT)
        release.set()
        assert await asyncio.wait_for(second.wait(), LIMIT) == f"done {second.id}"
        assert cancelled_batch == []
    await _assert_cancelled(queue, first.id, "not this one")


async def test_a_batch_whose_jobs_are_all_cancelled_is_cancelled(queue: JobQueue) -> None:
    started = asyncio.Event()
    cancelled_batch = asyncio.Event()
    worker = JobWorker(queue, concurrency=1)

    @worker.batch_processor("b", size=2, min_size=2, timeout=0.01)
    async def batch(jobs: list[Job]) -> list[str]:
        started.set()
        try:
            await asyncio.sleep(60)
        finally:
            cancelled_batch.set()
        return ["x"] * len(jobs)

    jobs = [await queue.add("b", i) for i in range(2)]
    async with running(worker):
        await asyncio.wait_for(started.wait(), LIMIT)
        for job in jobs:
            await queue.cancel(job.id, reason="all of them")
        await asyncio.wait_for(cancelled_batch.wait(), LIMIT)
    for job in jobs:
        await _assert_cancelled(queue, job.id, "all of them")


async def test_a_request_heard_while_the_claim_was_in_flight_stops_the_job(
    queue: JobQueue,
) -> None:
    ran: list[str] = []

    async def slow(job: Job) -> None:
        ran.append(job.id)
        await asyncio.sleep(60)

    worker = JobWorker(queue, {"slow": slow})
    job = await queue.add("slow", None, attempts=3)
    claim = queue.claim

    async def claim_then_cancel(*args: Any, **kwargs: Any) -> list[Job]:
        claimed = await claim(*args, **kwargs)
        for each in claimed:  # cancelled before the worker has the claim's answer
            assert await queue.cancel(each.id, reason="too quick") == "requested"
        await asyncio.sleep(0.2)  # the worker's listener hears it meanwhile
        return claimed

    queue.claim = claim_then_cancel  # type: ignore[method-assign]
    try:
        assert await asyncio.wait_for(worker.run_once(), LIMIT) == 1
    finally:
        del queue.claim
    await _assert_cancelled(queue, job.id, "too quick")


async def test_a_worker_that_missed_the_push_hears_it_from_its_renewal(queue: JobQueue) -> None:
    started = asyncio.Event()
    finished = asyncio.Event()

    async def slow(job: Job) -> None:
        started.set()
        try:
            await asyncio.sleep(60)
        finally:
            finished.set()

    worker = JobWorker(queue, {"slow": slow}, lease=1.0, renew_every=0.1)

    async def hear_nothing() -> None:
        await worker._stopped.wait()

    def deaf() -> Coroutine[Any, Any, None]:  # a listener that hears nothing (a lost message)
        return hear_nothing()

    worker._listen_cancels = deaf  # type: ignore[method-assign]
    job = await queue.add("slow", None, attempts=2)
    async with running(worker):
        await asyncio.wait_for(started.wait(), LIMIT)
        await queue.cancel(job.id, reason="renewal says so")
        await asyncio.wait_for(finished.wait(), LIMIT)
        with pytest.raises(JobCancelledError):
            await asyncio.wait_for(job.wait(), LIMIT)
    await _assert_cancelled(queue, job.id, "renewal says so")


class _FlakyListening:
    """A queue's core whose first ``failures`` waits for cancel requests fail as a lost
    connection does; everything else is the real core's."""

    def __init__(self, core: Any, failures: int) -> None:
        self.core = core
        self.failures = failures

    def __getattr__(self, name: str) -> Any:
        return getattr(self.core, name)

    def wait_cancels(self, after: int, timeout: float | None = None) -> Any:
        if self.failures:
            self.failures -= 1
            raise BackendConnectionError("connection lost (injected)")
        return self.core.wait_cancels(after, timeout)


async def test_the_listener_outlives_a_lost_connection(
    queue: JobQueue, caplog: pytest.LogCaptureFixture
) -> None:
    started = asyncio.Event()

    async def slow(job: Job) -> None:
        started.set()
        await asyncio.sleep(60)

    core = queue._core
    queue._core = _FlakyListening(core, failures=3)  # type: ignore[assignment]
    try:
        worker = JobWorker(queue, {"slow": slow})
        job = await queue.add("slow", None)
        with caplog.at_level(logging.WARNING, logger="lanemq.worker"):
            async with running(worker):
                await asyncio.wait_for(started.wait(), LIMIT)
                await queue.cancel(job.id, reason="after the outage")
                with pytest.raises(JobCancelledError):
                    await asyncio.wait_for(job.wait(), LIMIT)
    finally:
        queue._core = core
    failed = [r for r in caplog.records if "listening for cancel requests failed" in r.message]
    assert len(failed) == 1, [r.message for r in caplog.records]


async def test_a_timeout_frees_the_slot_and_lets_go_of_the_lease(queue: JobQueue) -> None:
    cleaned = asyncio.Event()

    async def stuck(job: Job) -> None:
        try:
            await asyncio.sleep(60)
        finally:
            cleaned.set()

    async def quick(job: Job) -> str:
        return "quick"

    worker = JobWorker(queue, {"stuck": stuck, "quick": quick}, concurrency=1, lease=30.0)
    job = await queue.add("stuck", None, timeout=0.05)
    after = await queue.add("quick", None)
    async with running(worker):
        await asyncio.wait_for(cleaned.wait(), LIMIT)
        with pytest.raises(JobFailedError, match="timed out"):
            await asyncio.wait_for(job.wait(), LIMIT)
        # Its one slot was free at once, and the lease (30 s) given up, not left to run out.
        assert await asyncio.wait_for(after.wait(), LIMIT) == "quick"
        stored = await stored_job(queue, job.id)
        assert stored.state == "failed" and stored.lock_token is None
        assert worker.stray_tasks == 0


# ------------------------------------------------------------------ groups


async def test_cancel_group_cancels_each_unfinished_job(queue: JobQueue) -> None:
    # Needs `group_job_ids`, from the groups work (merged separately).
    waiting = await queue.add("g", 1, group="tenant-a")
    delayed = await queue.add("g", 2, group="tenant-a", delay=60.0)
    other = await queue.add("g", 3, group="tenant-b")
    assert await queue.cancel_group("tenant-a", reason="tenant left") == 2
    for job in (waiting, delayed):
        await _assert_cancelled(queue, job.id, "tenant left")
    assert await queue.get_state(other.id) == "waiting"
