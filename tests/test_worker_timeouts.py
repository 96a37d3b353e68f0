"""Job timeouts hold against a processor that catches `CancelledError`: at the deadline the
job fails with `TimeoutError` (retried by its policy), its slot and lease are let go at once,
and the task that runs on is counted as a stray (`JobWorker.stray_tasks`) and named in a
warning; what it returns later is ignored."""

from __future__ import annotations

import asyncio
import logging

import pytest
from lanemq import InMemoryJobQueue, Job, JobFailedError, JobWorker

LIMIT = 5.0


async def strays_gone(worker: JobWorker, ended: asyncio.Event) -> int:
    """The stray count once the stray task has ended (``ended`` is set in its last step) and
    its done callbacks have run."""
    await ended.wait()
    for _ in range(3):
        await asyncio.sleep(0)
    return worker.stray_tasks


async def test_a_processor_that_swallows_cancellation_times_out_and_frees_its_slot(
    caplog: pytest.LogCaptureFixture,
) -> None:
    queue = InMemoryJobQueue("swallow")
    let_go = asyncio.Event()
    ended = asyncio.Event()
    runs: list[int] = []

    async def stubborn(job: Job) -> str:
        runs.append(job.attempts_started)
        if len(runs) > 1:
            return "second try"
        while not let_go.is_set():
            try:
                await let_go.wait()
            except asyncio.CancelledError:
                pass  # swallowed: the task cannot be stopped from outside
        ended.set()
        return "too late"

    worker = JobWorker(queue, stubborn, concurrency=1)
    job = await queue.add("stubborn", None, attempts=2, timeout=0.05)
    with caplog.at_level(logging.WARNING, logger="lanemq.worker"):
        async with worker:
            try:
                # The retry runs in the one slot while the first attempt's task still runs.
                assert await job.wait(timeout=LIMIT) == "second try"
                assert worker.stray_tasks == 1
            finally:
                let_go.set()  # (so a failure here does not hang close())
            assert await asyncio.wait_for(strays_gone(worker, ended), LIMIT) == 0

    assert runs == [1, 2]
    stored = await queue.get_job(job.id)
    assert stored is not None
    # The late "too late" was discarded: the job's outcome is its second attempt's.
    assert (stored.state, stored.return_value, stored.attempts_made) == (
        "completed",
        "second try",
        2,
    )
    assert worker.processed == 1 and worker.attempts_failed == 1
    strays = [r.getMessage() for r in caplog.records if "stray" in r.getMessage()]
    assert len(strays) == 1 and f"job {job.id} timed out" in strays[0], strays


async def test_a_swallowing_processor_without_retries_fails_with_the_timeout() -> None:
    queue = InMemoryJobQueue("swallow-once")
    let_go = asyncio.Event()
    ended = asyncio.Event()

    async def stubborn(job: Job) -> str:
        try:
            await let_go.wait()
        except asyncio.CancelledError:
            await let_go.wait()
        ended.set()
        return "too late"

    worker = JobWorker(queue, stubborn)
    job = await queue.add("stubborn", None, timeout=0.05)
    async with worker:
        try:
            with pytest.raises(JobFailedError, match=r"timed out after 0\.05s"):
                await job.wait(timeout=LIMIT)
            assert await queue.get_state(job.id) == "failed"
        finally:
            let_go.set()
        assert await asyncio.wait_for(strays_gone(worker, ended), LIMIT) == 0
    assert await queue.get_state(job.id) == "failed"  # the late return completed nothing
    assert worker.processed == 0 and worker.failed == 1
