"""Conformance of `JobWorker`'s own controls on every backend: `pause` / `resume` of one worker
(BullMQ's ``worker.pause()``), `run_until_idle` / `run_once` on a worker that runs,
``run_once(block=True)``, the idle wait's ``block_timeout`` (BullMQ's ``drainDelay``) and the
worker-local claim ``limiter``.

Every wait is bounded by `asyncio.wait_for(..., LIMIT)` so a broken worker fails a test
instead of hanging the suite."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from lanemq import ConfigError, Job, JobQueue, JobWorker

LIMIT = 5.0


async def echo(job: Job) -> Any:
    return job.data


def held_until_gate() -> tuple[asyncio.Event, asyncio.Event, Callable[[Job], Awaitable[str]]]:
    """A processor that sets ``started`` when it runs and returns "done" once ``gate`` is set."""
    started = asyncio.Event()
    gate = asyncio.Event()

    async def held(job: Job) -> str:
        started.set()
        await gate.wait()
        return "done"

    return started, gate, held


def count_turns(worker: JobWorker) -> list[int]:
    """Counts the turns of ``worker``'s run loop (one item per turn)."""
    turns: list[int] = []
    step = worker._step

    async def counted(loop: asyncio.AbstractEventLoop) -> None:
        turns.append(1)
        await step(loop)

    worker._step = counted  # type: ignore[method-assign]
    return turns


def spy_blocking_waits(queue: JobQueue) -> tuple[list[float | None], asyncio.Event]:
    """Records the timeout of each blocking wait for a job on ``queue``; the event is set
    from the third on."""
    timeouts: list[float | None] = []
    third = asyncio.Event()
    wait_and_claim = queue.wait_and_claim

    def spy(
        worker_id: str, lease: float, max_jobs: int, timeout: float | None
    ) -> tuple[Awaitable[list[Job]], Callable[[], None]]:
        timeouts.append(timeout)
        if len(timeouts) >= 3:
            third.set()
        return wait_and_claim(worker_id, lease, max_jobs, timeout)

    queue.wait_and_claim = spy  # type: ignore[method-assign]
    return timeouts, third


# ----------------------------------------------------------------------- pause, resume


async def test_a_paused_worker_takes_no_job_while_other_workers_go_on(queue: JobQueue) -> None:
    async with JobWorker(queue, echo) as paused:
        await asyncio.wait_for(paused.pause(), LIMIT)
        assert paused.is_paused()
        assert not await queue.is_paused()  # the queue goes on: only this worker stops
        turns = count_turns(paused)
        jobs = await queue.add_bulk([("j", i) for i in range(3)])
        other = JobWorker(queue, echo)
        assert await asyncio.wait_for(other.run_until_idle(), LIMIT) == 3
        assert paused.processed == 0
        # Its idle wait does not spin: woken by nothing, it sleeps until resumed.
        await asyncio.sleep(0.1)
        assert len(turns) <= 1
        await paused.resume()
        assert not paused.is_paused()
        later = await queue.add("j", "later")
        assert await asyncio.wait_for(later.wait(), LIMIT) == "later"
        await asyncio.wait_for(paused.run_until_idle(), LIMIT)  # (its report is in)
        assert paused.processed == 1
    assert [await queue.get_state(job.id) for job in jobs] == ["completed"] * 3


async def test_pause_waits_for_the_running_jobs_to_finish_and_be_reported(
    queue: JobQueue,
) -> None:
    started, gate, held = held_until_gate()
    job = await queue.add("h", None)
    async with JobWorker(queue, held) as worker:
        await asyncio.wait_for(started.wait(), LIMIT)
        pausing = asyncio.get_running_loop().create_task(worker.pause())
        done, _ = await asyncio.wait([pausing], timeout=0.1)
        assert not done  # the job still runs
        assert worker.is_paused()
        gate.set()
        await asyncio.wait_for(pausing, LIMIT)
        assert await queue.get_state(job.id) == "completed"
        assert worker.processed == 1


async def test_pause_without_waiting_returns_while_jobs_run(queue: JobQueue) -> None:
    started, gate, held = held_until_gate()
    job = await queue.add("h", None)
    async with JobWorker(queue, held) as worker:
        await asyncio.wait_for(started.wait(), LIMIT)
        await asyncio.wait_for(worker.pause(do_not_wait=True), LIMIT)
        assert await queue.get_state(job.id) == "active"
        second = await queue.add("h", None)
        gate.set()
        assert await asyncio.wait_for(job.wait(), LIMIT) == "done"
        assert await queue.get_state(second.id) == "waiting"  # paused: not taken
    assert worker.processed == 1


async def test_a_paused_worker_closes(queue: JobQueue) -> None:
    worker = JobWorker(queue, echo)
    async with worker:
        await asyncio.wait_for(worker.pause(), LIMIT)
        closing = asyncio.get_running_loop().create_task(worker.close())
        await asyncio.wait_for(closing, LIMIT)
    job = await queue.add("j", None)
    assert await queue.get_state(job.id) == "waiting"


async def test_a_paused_worker_steps_over_nothing(queue: JobQueue) -> None:
    await queue.add("j", None)
    worker = JobWorker(queue, echo)
    await worker.pause()
    assert await asyncio.wait_for(worker.run_until_idle(), LIMIT) == 0
    assert await asyncio.wait_for(worker.run_once(), LIMIT) == 0
    await worker.resume()
    assert await asyncio.wait_for(worker.run_until_idle(), LIMIT) == 1


# ------------------------------------------------------------- stepping a running worker


async def test_run_until_idle_on_a_running_worker_waits_and_counts(queue: JobQueue) -> None:
    async with JobWorker(queue, echo, concurrency=2) as worker:
        await worker.pause()
        jobs = await queue.add_bulk([("j", i) for i in range(5)])
        await worker.resume()
        assert await asyncio.wait_for(worker.run_until_idle(), LIMIT) == 5
        assert [await queue.get_state(job.id) for job in jobs] == ["completed"] * 5
        # Idle already: nothing more to count, and no error.
        assert await asyncio.wait_for(worker.run_until_idle(), LIMIT) == 0
        more = await queue.add("j", "more")
        assert await asyncio.wait_for(worker.run_once(), LIMIT) in (0, 1)
        assert await queue.get_state(more.id) == "completed"


async def test_a_second_run_returns_without_a_second_loop(queue: JobQueue) -> None:
    async with JobWorker(queue, echo) as worker:
        await asyncio.wait_for(worker.run(), LIMIT)  # returns at once
        job = await queue.add("j", "still")
        assert await asyncio.wait_for(job.wait(), LIMIT) == "still"
    assert worker.processed == 1


# ------------------------------------------------------------------ run_once(block=True)


async def test_run_once_blocking_waits_for_a_job(queue: JobQueue) -> None:
    worker = JobWorker(queue, echo)
    waiting = asyncio.get_running_loop().create_task(worker.run_once(block=True))
    done, _ = await asyncio.wait([waiting], timeout=0.1)
    assert not done  # no job yet: it waits
    job = await queue.add("j", "came")
    assert await asyncio.wait_for(waiting, LIMIT) == 1
    assert await queue.get_state(job.id) == "completed"


async def test_run_once_blocking_gives_up_after_its_timeout(queue: JobQueue) -> None:
    worker = JobWorker(queue, echo)
    assert await asyncio.wait_for(worker.run_once(block=True, timeout=0.2), LIMIT) == 0


# ------------------------------------------------------------------------ block_timeout


@pytest.mark.parametrize("bad", [0, -1.0, float("inf"), float("nan"), "5", True])
async def test_block_timeout_is_checked(queue: JobQueue, bad: Any) -> None:
    with pytest.raises(ConfigError, match=rf"invalid block_timeout: {bad!r}"):
        JobWorker(queue, echo, block_timeout=bad)


async def test_the_idle_wait_lasts_block_timeout(queue: JobQueue) -> None:
    timeouts, third = spy_blocking_waits(queue)
    async with JobWorker(queue, echo, block_timeout=0.05, stalled_interval=60.0):
        await asyncio.wait_for(third.wait(), LIMIT)  # it turned, wait after wait
    assert timeouts[:3] == [0.05] * 3
    assert JobWorker(queue, echo, stalled_interval=7.0).block_timeout == 7.0  # the default


async def test_run_once_blocking_waits_in_rounds_of_block_timeout(queue: JobQueue) -> None:
    timeouts, third = spy_blocking_waits(queue)
    worker = JobWorker(queue, echo, block_timeout=0.05)
    waiting = asyncio.get_running_loop().create_task(worker.run_once(block=True))
    await asyncio.wait_for(third.wait(), LIMIT)
    assert all(t is not None and 0 < t <= 0.05 for t in timeouts)
    await queue.add("j", None)
    assert await asyncio.wait_for(waiting, LIMIT) == 1


# ----------------------------------------------------------------------------- limiter


@pytest.mark.parametrize(
    "bad", [(0, 1.0), (1, 0), (1, -2.0), (1.5, 1.0), (True, 1.0), (1,), "2/s", (1, float("inf"))]
)
async def test_the_limiter_is_checked(queue: JobQueue, bad: Any) -> None:
    with pytest.raises(ConfigError, match="invalid limiter"):
        JobWorker(queue, echo, limiter=bad)


async def test_a_limited_worker_takes_at_most_its_limit(queue: JobQueue) -> None:
    jobs = await queue.add_bulk([("j", i) for i in range(5)])
    limited = JobWorker(queue, echo, concurrency=5, limiter=(2, 3600))
    assert await asyncio.wait_for(limited.run_until_idle(), LIMIT) == 2
    assert await asyncio.wait_for(limited.run_once(), LIMIT) == 0  # the window is full
    assert (await queue.get_job_counts("waiting"))["waiting"] == 3
    other = JobWorker(queue, echo, concurrency=5)
    assert await asyncio.wait_for(other.run_until_idle(), LIMIT) == 3
    assert [await queue.get_state(job.id) for job in jobs] == ["completed"] * 5


async def test_a_running_limited_worker_leaves_the_rest_waiting(queue: JobQueue) -> None:
    async with JobWorker(queue, echo, concurrency=3, limiter=(2, 3600)) as limited:
        await limited.pause()
        await queue.add_bulk([("j", i) for i in range(4)])
        await limited.resume()
        assert await asyncio.wait_for(limited.run_until_idle(), LIMIT) == 2
        assert (await queue.get_job_counts("waiting"))["waiting"] == 2
