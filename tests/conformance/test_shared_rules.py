"""Rules that were once written separately per backend and drifted apart, now defined once
(the Rust core's `jobs::constants` and `jobs::lifecycle`, which the Lua scripts are tested
against): how many stack traces a job keeps, the reason a stalled-out job fails with, and the
order in which a finished job's reactions run."""

from __future__ import annotations

import asyncio

from lanemq import JobQueue
from support import EPOCH_MS as T

from .helpers import claim_one, lock_token

# The limit and the reason of the Rust core (`jobs::constants`), spelled out here on purpose:
# a change to them is a change of behaviour, and this test should say so.
STACKTRACE_LIMIT = 10
STALLED_REASON = "job stalled more than allowable limit"


async def test_a_job_keeps_the_newest_stack_traces(queue: JobQueue) -> None:
    attempts = STACKTRACE_LIMIT + 3
    job = await queue.add("flaky", None, attempts=attempts, now=T)
    for attempt in range(attempts):
        claimed = await claim_one(queue, T + attempt)
        await queue.fail(job.id, lock_token(claimed), f"error {attempt}", f"trace {attempt}", now=T)
    stored = await queue.get_job(job.id)
    assert stored is not None
    assert stored.state == "failed"
    assert stored.stacktrace == [f"trace {i}" for i in range(3, attempts)]
    assert stored.failed_reason == f"error {attempts - 1}"


async def test_a_failure_without_a_trace_keeps_the_traces_it_has(queue: JobQueue) -> None:
    job = await queue.add("flaky", None, attempts=3, now=T)
    first = await claim_one(queue, T)
    await queue.fail(job.id, lock_token(first), "one", "trace one", now=T)
    second = await claim_one(queue, T + 1)
    await queue.fail(job.id, lock_token(second), "two", now=T + 1)
    stored = await queue.get_job(job.id)
    assert stored is not None
    assert (stored.state, stored.stacktrace) == ("waiting", ["trace one"])


async def test_a_job_that_stalls_too_often_fails_with_the_stalled_reason(
    queue: JobQueue,
) -> None:
    job = await queue.add("slow", None, max_stalled_count=1, now=T)
    await queue.claim("w1", lease=1.0, now=T)
    assert await queue.recover_stalled(now=T + 1_000) == ([job.id], [])
    await queue.claim("w2", lease=1.0, now=T + 1_000)
    assert await queue.recover_stalled(now=T + 2_000) == ([], [job.id])

    stored = await queue.get_job(job.id)
    assert stored is not None
    assert (stored.state, stored.failed_reason, stored.stalled_count) == (
        "failed",
        STALLED_REASON,
        2,
    )
    events = [(e.event, e.fields) for e in await queue.read_events() if e.job_id == job.id]
    assert ("failed", {"failedReason": STALLED_REASON}) in events
    # Both stalls were reported, each before what became of the job.
    names = [name for name, _ in events]
    assert names.count("stalled") == 2
    assert names.index("failed") > max(i for i, n in enumerate(names) if n == "stalled")


async def test_a_finish_tells_its_waiters_before_retention_removes_the_job(
    queue: JobQueue,
) -> None:
    """Waiters hear first, retention comes last: a job removed on completion still gives a
    waiter its value, and its `completed` event is the last one it has."""
    job = await queue.add("once", None, remove_on_complete=True, now=T)
    waiter = asyncio.create_task(job.wait(timeout=5.0))
    await asyncio.sleep(0)
    claimed = await claim_one(queue, T)
    await queue.complete(job.id, lock_token(claimed), {"ok": True}, now=T + 5)
    assert await waiter == {"ok": True}
    assert await queue.get_job(job.id) is None
    events = [e.event for e in await queue.read_events() if e.job_id == job.id]
    assert events[-1] == "completed", events
