"""`JobWorker(prefetch=N)`: on a remote backend (Redis, local) the worker claims up to N jobs
beyond its concurrency, held active and leased but not started; they start in claim order as
slots free, their leases are renewed with the running jobs', a cancel drops one, and close
gives them back to waiting at once with their attempt unused. In memory nothing is claimed
ahead."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

import pytest
from conformance.backends import queue_fixture
from lanemq import ConfigError, Job, JobQueue, JobWorker

LIMIT = 10.0

queue = queue_fixture("local", "redis")
in_process = queue_fixture("memory")


async def until(check: Callable[[], Awaitable[bool]]) -> None:
    """Waits (at most LIMIT seconds) until ``check()`` holds."""

    async def poll() -> None:
        while not await check():  # noqa: ASYNC110 (the queue's counts: no event to await)
            await asyncio.sleep(0.01)

    await asyncio.wait_for(poll(), LIMIT)


async def active(queue: JobQueue) -> int:
    return (await queue.get_job_counts("active"))["active"]


async def stop(task: asyncio.Task[None]) -> None:
    if not task.done():
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


class Gated:
    """A processor that records each start and waits for ``gate``."""

    def __init__(self) -> None:
        self.gate = asyncio.Event()
        self.started: list[str] = []

    async def __call__(self, job: Job) -> None:
        self.started.append(job.id)
        await self.gate.wait()


@pytest.mark.parametrize("bad", [-1, 1.5, True, "2", 2**40])
async def test_a_bad_prefetch_raises_config_error_naming_it(
    in_process: JobQueue, bad: object
) -> None:
    with pytest.raises(ConfigError, match=f"invalid prefetch: {bad!r}"):
        JobWorker(in_process, Gated(), prefetch=bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("prefetch", [2, None])  # (None: as many as the concurrency)
async def test_active_jobs_stay_within_concurrency_plus_prefetch_and_start_in_claim_order(
    queue: JobQueue, prefetch: int | None
) -> None:
    gated = Gated()
    worker = JobWorker(queue, gated, concurrency=2, prefetch=prefetch)
    jobs = [await queue.add("j", i) for i in range(10)]
    task = asyncio.get_running_loop().create_task(worker.run())
    try:
        await until(lambda: _ge(queue, 4))
        for _ in range(20):  # held there while the two running jobs wait
            assert await active(queue) == 4
            await asyncio.sleep(0.01)
        assert gated.started == [jobs[0].id, jobs[1].id]
        gated.gate.set()
        await until(lambda: _completed(queue, 10))
        assert gated.started == [job.id for job in jobs]
    finally:
        # (a grace: a failed assertion above leaves the gated job running; close must not
        # wait for it, or the test hangs instead of reporting the failure)
        await worker.close(grace=1.0)
        await stop(task)


async def _ge(queue: JobQueue, n: int) -> bool:
    return await active(queue) >= n


async def _completed(queue: JobQueue, n: int) -> bool:
    return (await queue.get_job_counts("completed"))["completed"] == n


async def test_in_memory_nothing_is_claimed_ahead(in_process: JobQueue) -> None:
    gated = Gated()
    worker = JobWorker(in_process, gated, concurrency=2, prefetch=5)
    for i in range(6):
        await in_process.add("j", i)
    task = asyncio.get_running_loop().create_task(worker.run())
    try:
        await until(lambda: _ge(in_process, 2))
        await asyncio.sleep(0.1)
        assert await active(in_process) == 2
        gated.gate.set()
        await until(lambda: _completed(in_process, 6))
    finally:
        # (a grace: a failed assertion above leaves the gated job running; close must not
        # wait for it, or the test hangs instead of reporting the failure)
        await worker.close(grace=1.0)
        await stop(task)


@pytest.mark.parametrize("force", [False, True])
async def test_held_jobs_go_back_to_waiting_at_close_and_run_once_elsewhere(
    queue: JobQueue, force: bool
) -> None:
    first = Gated()
    worker = JobWorker(queue, first, concurrency=1, prefetch=2)
    jobs = [await queue.add("j", i, attempts=1) for i in range(3)]
    task = asyncio.get_running_loop().create_task(worker.run())
    await until(lambda: _ge(queue, 3))
    closing = asyncio.get_running_loop().create_task(worker.close(grace=LIMIT, force=force))
    # Given back at once: while the running job still has its grace.
    await until(lambda: _waiting(queue, 2))
    assert first.started == [jobs[0].id]
    first.gate.set()
    await closing
    await stop(task)
    second = Gated()
    second.gate.set()
    other = JobWorker(queue, second, concurrency=1, prefetch=0)
    await other.run_until_idle()
    assert sorted(second.started) == sorted(job.id for job in jobs[1:])
    for job in jobs[1:]:
        done = await queue.get_job(job.id)
        assert done is not None
        assert (done.state, done.attempts_made) == ("completed", 1)  # the held claim unused


async def _waiting(queue: JobQueue, n: int) -> bool:
    return (await queue.get_job_counts("waiting"))["waiting"] == n


async def test_a_held_jobs_lease_is_renewed_so_stalled_recovery_leaves_it(
    queue: JobQueue,
) -> None:
    gated = Gated()
    # (a lease of 1 s renewed every 0.1 s: ten renewals to a lease, so a busy machine's slow
    # moment does not let it lapse)
    worker = JobWorker(queue, gated, concurrency=1, prefetch=1, lease=1.0, renew_every=0.1)
    stalled: list[str] = []
    worker.on("stalled", stalled.append)
    jobs = [await queue.add("j", i) for i in range(2)]
    task = asyncio.get_running_loop().create_task(worker.run())
    try:
        await until(lambda: _ge(queue, 2))
        await asyncio.sleep(2.5)  # two and a half leases: only renewals keep the held job's
        recovered, failed = await queue.recover_stalled()
        assert (recovered, failed) == ([], [])
        assert gated.started == [jobs[0].id]
        gated.gate.set()
        await until(lambda: _completed(queue, 2))
        assert gated.started == [job.id for job in jobs]
        assert stalled == []
    finally:
        # (a grace: a failed assertion above leaves the gated job running; close must not
        # wait for it, or the test hangs instead of reporting the failure)
        await worker.close(grace=1.0)
        await stop(task)


async def test_cancelling_a_held_job_drops_it_unstarted(queue: JobQueue) -> None:
    gated = Gated()
    worker = JobWorker(queue, gated, concurrency=1, prefetch=1)
    jobs = [await queue.add("j", i) for i in range(2)]
    task = asyncio.get_running_loop().create_task(worker.run())
    try:
        await until(lambda: _ge(queue, 2))
        await queue.cancel(jobs[1].id, "not wanted")
        await until(lambda: _state(queue, jobs[1].id, "failed"))
        held = await queue.get_job(jobs[1].id)
        assert held is not None and held.failed_reason == "not wanted"
        gated.gate.set()
        await until(lambda: _completed(queue, 1))
        assert gated.started == [jobs[0].id]
    finally:
        # (a grace: a failed assertion above leaves the gated job running; close must not
        # wait for it, or the test hangs instead of reporting the failure)
        await worker.close(grace=1.0)
        await stop(task)


async def _state(queue: JobQueue, job_id: str, state: str) -> bool:
    return await queue.get_state(job_id) == state
