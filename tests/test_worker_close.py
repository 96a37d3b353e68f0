"""`JobWorker.close(grace=...)`: stops claiming at once, lets running jobs finish for at most
``grace`` seconds, then cancels the rest and releases them back to waiting at once (no lease
wait, no attempt used, not reported as failed); ``force=True`` keeps its old meaning."""

from __future__ import annotations

import asyncio
import contextlib
import threading

import pytest
from conformance.backends import queue_fixture
from lanemq import ConfigError, Job, JobQueue, JobWorker

LIMIT = 10.0


queue = queue_fixture("memory", "local", "redis")


class Recorder:
    """Every hook of a worker, as ``"<hook>:<job id>"`` strings."""

    def __init__(self, worker: JobWorker) -> None:
        self.seen: list[str] = []
        for hook in ("completed", "failed", "dead"):
            worker.on(hook, lambda job, _, hook=hook: self.seen.append(f"{hook}:{job.id}"))
        worker.on("error", lambda error: self.seen.append(f"error:{error}"))


async def start(worker: JobWorker) -> asyncio.Task[None]:
    task = asyncio.get_running_loop().create_task(worker.run())
    await asyncio.sleep(0)
    return task


async def start_sleeper(queue: JobQueue) -> tuple[JobWorker, Recorder, Job, asyncio.Task[None]]:
    """A running worker whose one job sleeps a minute, once that job has started."""
    started = asyncio.Event()

    async def slow(job: Job) -> None:
        started.set()
        await asyncio.sleep(60)

    worker = JobWorker(queue, slow)
    hooks = Recorder(worker)
    job = await queue.add("slow", None)
    task = await start(worker)
    await asyncio.wait_for(started.wait(), LIMIT)
    return worker, hooks, job, task


async def finish(task: asyncio.Task[None]) -> None:
    if not task.done():
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def test_job_longer_than_grace_goes_back_to_waiting_and_runs_once_elsewhere(
    queue: JobQueue,
) -> None:
    started = asyncio.Event()
    cancelled: list[str] = []

    async def slow(job: Job) -> str:
        started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.append(job.id)
            raise
        return "never"

    worker = JobWorker(queue, slow, lease=30.0)
    hooks = Recorder(worker)
    job = await queue.add("slow", None, attempts=3)
    before = await queue.get_job(job.id)
    assert before is not None
    task = await start(worker)
    try:
        await asyncio.wait_for(started.wait(), LIMIT)
        await asyncio.wait_for(worker.close(grace=0.2), LIMIT)
        assert task.done()
        task.result()
    finally:
        await finish(task)

    assert cancelled == [job.id]
    assert hooks.seen == []  # not failed, not completed
    assert (worker.processed, worker.failed, worker.attempts_failed) == (0, 0, 0)
    stored = await queue.get_job(job.id)
    assert stored is not None
    # Back to waiting at once (the 30 s lease did not have to run out), attempt given back.
    assert stored.state == "waiting"
    assert stored.lock_token is None
    assert stored.attempts_made == before.attempts_made == 0
    assert stored.stalled_count == 0
    assert stored.failed_reason is None

    runs: list[tuple[str, int]] = []

    async def quick(job: Job) -> str:
        runs.append((job.id, job.attempts_started))
        return "rescued"

    second = JobWorker(queue, quick)
    async with second:
        assert await asyncio.wait_for(job.wait(), LIMIT) == "rescued"
    assert runs == [(job.id, 1)]
    assert second.processed == 1
    stored = await queue.get_job(job.id)
    assert stored is not None
    assert (stored.state, stored.attempts_made) == ("completed", 1)


async def test_job_shorter_than_grace_completes(queue: JobQueue) -> None:
    started = asyncio.Event()

    async def short(job: Job) -> str:
        started.set()
        await asyncio.sleep(0.1)
        return "done"

    worker = JobWorker(queue, short)
    hooks = Recorder(worker)
    job = await queue.add("short", None)
    waiting = await queue.add("short", None)
    task = await start(worker)
    try:
        await asyncio.wait_for(started.wait(), LIMIT)
        await asyncio.wait_for(worker.close(grace=5.0), LIMIT)
        task.result()
    finally:
        await finish(task)
    assert hooks.seen == [f"completed:{job.id}"]
    assert await queue.get_state(job.id) == "completed"
    assert await queue.get_state(waiting.id) == "waiting"  # nothing claimed after close()
    assert worker.processed == 1


async def test_a_run_after_a_stepping_timeout_gets_its_full_grace(queue: JobQueue) -> None:
    # run_until_idle's timeout left its deadline behind, and a later run's close(grace=...)
    # released the job at once instead of letting it finish.
    started = asyncio.Event()

    async def short(job: Job) -> str:
        started.set()
        await asyncio.sleep(0.3)
        return "done"

    worker = JobWorker(queue, short)
    await queue.add("short", None)
    with pytest.raises(TimeoutError):
        await worker.run_until_idle(timeout=0.05)
    assert await queue.get_job_counts("waiting") == {"waiting": 1}  # released by the timeout
    started.clear()
    task = await start(worker)
    try:
        await asyncio.wait_for(started.wait(), LIMIT)
        await asyncio.wait_for(worker.close(grace=5.0), LIMIT)
        task.result()
    finally:
        await finish(task)
    assert await queue.get_job_counts("completed", "waiting") == {"completed": 1, "waiting": 0}


async def test_grace_finishes_short_jobs_and_releases_long_ones(queue: JobQueue) -> None:
    running = 0
    both = asyncio.Event()

    async def work(job: Job) -> str:
        nonlocal running
        running += 1
        if running == 2:
            both.set()
        await asyncio.sleep(0.05 if job.data == "short" else 60)
        return str(job.data)

    worker = JobWorker(queue, work, concurrency=2)
    hooks = Recorder(worker)
    short = await queue.add("w", "short")
    long = await queue.add("w", "long")
    task = await start(worker)
    try:
        await asyncio.wait_for(both.wait(), LIMIT)
        await asyncio.wait_for(worker.close(grace=1.0), LIMIT)
        task.result()
    finally:
        await finish(task)
    assert hooks.seen == [f"completed:{short.id}"]
    assert await queue.get_state(short.id) == "completed"
    assert await queue.get_state(long.id) == "waiting"


async def test_grace_zero_releases_at_once(queue: JobQueue) -> None:
    worker, hooks, job, task = await start_sleeper(queue)
    try:
        await asyncio.wait_for(worker.close(grace=0), LIMIT)
        task.result()
    finally:
        await finish(task)
    assert hooks.seen == []
    stored = await queue.get_job(job.id)
    assert stored is not None
    assert (stored.state, stored.attempts_made) == ("waiting", 0)


async def test_force_during_grace_abandons_the_job_to_stalled_recovery(
    queue: JobQueue,
) -> None:
    worker, hooks, job, task = await start_sleeper(queue)
    try:
        graceful = asyncio.get_running_loop().create_task(worker.close(grace=60))
        await asyncio.sleep(0.05)
        assert not graceful.done()  # waiting for the job
        await asyncio.wait_for(worker.close(force=True), LIMIT)
        await asyncio.wait_for(graceful, LIMIT)
        task.result()
    finally:
        await finish(task)
    assert hooks.seen == []
    stored = await queue.get_job(job.id)
    assert stored is not None
    assert stored.state == "active"  # left for its lease to run out
    assert stored.lock_token


async def test_def_processor_thread_past_grace_is_released_and_ignored(
    queue: JobQueue,
) -> None:
    started = threading.Event()
    let_go = threading.Event()
    thread_done = threading.Event()
    refused: list[str] = []

    def blocking(job: Job) -> str:
        started.set()
        let_go.wait(LIMIT)
        try:
            job.sync.log("too late")
        except Exception as error:
            refused.append(type(error).__name__)
        thread_done.set()
        return "ignored"

    worker = JobWorker(queue, blocking)
    hooks = Recorder(worker)
    job = await queue.add("b", None)
    task = await start(worker)
    try:
        assert await asyncio.to_thread(started.wait, LIMIT)
        await asyncio.wait_for(worker.close(grace=0.1), LIMIT)
        task.result()
    finally:
        let_go.set()
        await finish(task)
    assert await asyncio.to_thread(thread_done.wait, LIMIT)
    assert refused == ["LockMismatchError"]
    assert hooks.seen == []
    stored = await queue.get_job(job.id)
    assert stored is not None
    assert (stored.state, stored.attempts_made) == ("waiting", 0)
    assert await queue.get_logs(job.id) == ([], 0)


async def test_invalid_grace_is_refused_and_changes_nothing(queue: JobQueue) -> None:
    async def work(job: Job) -> str:
        return "ok"

    worker = JobWorker(queue, work)
    task = await start(worker)
    try:
        for bad in (-1, -0.5, float("nan"), "5", True):
            with pytest.raises(ConfigError, match="grace"):
                await worker.close(grace=bad)  # type: ignore[arg-type]
        job = await queue.add("j", None)  # the worker still runs
        assert await asyncio.wait_for(job.wait(), LIMIT) == "ok"
        await asyncio.wait_for(worker.close(), LIMIT)
        task.result()
    finally:
        await finish(task)


async def test_close_returns_when_run_returns_not_when_its_caller_ends(
    queue: JobQueue,
) -> None:
    async def work(job: Job) -> str:
        return "ok"

    worker = JobWorker(queue, work)
    ran = asyncio.Event()
    after_run = asyncio.Event()

    async def service() -> None:
        ran.set()
        await worker.run()
        after_run.set()
        await asyncio.sleep(60)  # the caller goes on with other things

    task = asyncio.get_running_loop().create_task(service())
    try:
        await asyncio.wait_for(ran.wait(), LIMIT)
        job = await queue.add("j", None)
        assert await asyncio.wait_for(job.wait(), LIMIT) == "ok"
        await asyncio.wait_for(worker.close(grace=1.0), LIMIT)
        await asyncio.wait_for(after_run.wait(), LIMIT)
        assert not task.done()
    finally:
        await finish(task)
