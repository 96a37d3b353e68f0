"""Plain ``def`` processors: `JobWorker` runs them in a worker thread and treats their result
or exception as a coroutine's; `Job.sync` gives them blocking versions of the job's calls.
(Before, the worker handed the function's return value to ``create_task``: the job stayed
active and ended "stalled more than allowable limit".)"""

from __future__ import annotations

import asyncio
import functools
import threading
import time
from typing import Any

import pytest
from conformance.backends import queue_fixture
from lanemq import (
    Backoff,
    DelayedError,
    InMemoryJobQueue,
    Job,
    JobFailedError,
    JobQueue,
    JobWorker,
    LockMismatchError,
    UnrecoverableError,
)

LIMIT = 10.0


queue = queue_fixture("memory", "local")


async def test_def_processor_runs_in_a_thread_and_completes(queue: JobQueue) -> None:
    loop_thread = threading.get_ident()
    threads: list[int] = []

    def double(job: Job) -> dict[str, int]:
        threads.append(threading.get_ident())
        time.sleep(0.01)  # blocking is fine here: the loop is not blocked
        return {"double": job.data * 2}

    completed: list[Any] = []
    worker = JobWorker(queue, {"double": double}, concurrency=2)
    worker.on("completed", lambda job, result: completed.append(result))
    jobs = [await queue.add("double", n) for n in (1, 2, 3)]
    async with worker:
        results = await asyncio.wait_for(asyncio.gather(*(j.wait() for j in jobs)), LIMIT)

    assert results == [{"double": 2}, {"double": 4}, {"double": 6}]
    # Two run at once in threads: either may finish first, so the hooks' order is not the jobs'.
    assert sorted(completed, key=lambda r: r["double"]) == results
    assert len(threads) == 3 and loop_thread not in threads
    for job in jobs:
        stored = await queue.get_job(job.id)
        assert stored is not None
        assert (stored.state, stored.attempts_made, stored.stalled_count) == ("completed", 1, 0)
    assert (worker.processed, worker.failed, worker.attempts_failed) == (3, 0, 0)


async def test_def_processor_exception_retries_then_fails(queue: JobQueue) -> None:
    runs: list[int] = []

    def flaky(job: Job) -> str:
        runs.append(job.attempts_started)
        raise RuntimeError(f"boom {len(runs)}")

    dead: list[BaseException] = []
    worker = JobWorker(queue, flaky)
    worker.on("dead", lambda job, error: dead.append(error))
    job = await queue.add("flaky", None, attempts=2, backoff=Backoff.fixed(0.01))
    async with worker:
        with pytest.raises(JobFailedError) as caught:
            await asyncio.wait_for(job.wait(), LIMIT)

    assert "boom 2" in caught.value.reason
    assert runs == [1, 2]
    assert [str(error) for error in dead] == ["boom 2"]
    stored = await queue.get_job(job.id)
    assert stored is not None
    assert (stored.state, stored.attempts_made) == ("failed", 2)
    assert stored.stacktrace and "RuntimeError: boom 2" in stored.stacktrace[-1]
    assert (worker.failed, worker.attempts_failed) == (1, 2)


async def test_def_processor_unrecoverable_error_is_terminal(queue: JobQueue) -> None:
    runs = 0

    def bad(job: Job) -> None:
        nonlocal runs
        runs += 1
        raise UnrecoverableError("bad input")

    worker = JobWorker(queue, bad)
    job = await queue.add("bad", None, attempts=5, backoff=Backoff.fixed(0.01))
    async with worker:
        with pytest.raises(JobFailedError) as caught:
            await asyncio.wait_for(job.wait(), LIMIT)
    assert "bad input" in caught.value.reason
    assert runs == 1
    assert await queue.get_state(job.id) == "failed"


async def test_def_processor_timeout_fails_the_job_and_ignores_the_thread(
    queue: JobQueue,
) -> None:
    let_go = threading.Event()
    thread_done = threading.Event()
    late: list[str] = []

    def stuck(job: Job) -> str:
        let_go.wait(LIMIT)  # stands for blocking work that outlives the timeout
        try:
            job.sync.update_progress(99)
        except LockMismatchError:
            late.append("progress refused")
        thread_done.set()
        return "too late"

    worker = JobWorker(queue, {"stuck": stuck})
    job = await queue.add("stuck", None, attempts=1, timeout=0.05)
    async with worker:
        with pytest.raises(JobFailedError) as caught:
            await asyncio.wait_for(job.wait(), LIMIT)
        assert "TimeoutError" in caught.value.reason and "timed out" in caught.value.reason
        let_go.set()
        assert await asyncio.to_thread(thread_done.wait, LIMIT)

    assert late == ["progress refused"]
    stored = await queue.get_job(job.id)
    assert stored is not None
    assert (stored.state, stored.attempts_made, stored.return_value) == ("failed", 1, None)
    assert stored.progress != 99
    assert (worker.processed, worker.failed) == (0, 1)


async def test_job_sync_calls_run_on_the_loop(queue: JobQueue) -> None:
    seen: dict[str, Any] = {}

    def work(job: Job) -> int:
        job.sync.update_progress(50)
        job.sync.log("first")
        count = job.sync.log("second")
        job.sync.update_data({"step": 2})
        job.sync.ensure_lease()
        seen["logs"] = job.sync.get_logs()
        seen["state"] = job.sync.get_state()
        seen["data"] = job.data
        return count

    worker = JobWorker(queue, work)
    job = await queue.add("p", {"step": 1})
    async with worker:
        assert await asyncio.wait_for(job.wait(), LIMIT) == 2

    assert seen == {"logs": (["first", "second"], 2), "state": "active", "data": {"step": 2}}
    stored = await queue.get_job(job.id)
    assert stored is not None
    assert (stored.progress, stored.data) == (50, {"step": 2})


async def test_job_sync_move_to_delayed_then_delayed_error(queue: JobQueue) -> None:
    runs: list[int] = []

    def work(job: Job) -> str:
        runs.append(job.attempts_started)
        if len(runs) == 1:
            job.sync.move_to_delayed(0.02)
            raise DelayedError("later")
        return "done"

    worker = JobWorker(queue, work)
    job = await queue.add("d", None, attempts=1)
    async with worker:
        assert await asyncio.wait_for(job.wait(), LIMIT) == "done"
    assert runs == [1, 1]
    assert worker.attempts_failed == 0


async def test_job_sync_on_the_loop_thread_raises_instead_of_deadlocking(
    queue: JobQueue,
) -> None:
    async def work(job: Job) -> str:
        try:
            job.sync.update_progress(1)
        except RuntimeError as error:
            return str(error)
        return "no error"

    worker = JobWorker(queue, work)
    job = await queue.add("a", None)
    async with worker:
        message = await asyncio.wait_for(job.wait(), LIMIT)
    assert "event loop's own thread" in message
    assert "await job.update_progress" in message


async def test_job_sync_taken_on_the_loop_works_in_another_thread(queue: JobQueue) -> None:
    job = await queue.add("a", None)
    sync = job.sync  # bound to this loop
    assert await asyncio.to_thread(sync.get_state) == "waiting"
    assert await asyncio.to_thread(sync.log, "from a thread") == 1
    assert await queue.get_logs(job.id) == (["from a thread"], 1)


def test_job_sync_without_a_known_loop_says_so() -> None:
    async def make() -> Job:
        return await InMemoryJobQueue("no-loop").add("a", None)

    job = asyncio.run(make())  # read on no loop, used on none
    with pytest.raises(RuntimeError, match="does not know this job's event loop"):
        job.sync.log("x")


def where() -> str:
    """Where the caller runs: the test's loop is in the main thread."""
    return "loop" if threading.current_thread() is threading.main_thread() else "thread"


class AsyncCallable:
    async def __call__(self, job: Job) -> str:
        return f"async object on {where()}"


class SyncCallable:
    def __call__(self, job: Job) -> str:
        return f"sync object on {where()}"


async def located(prefix: str, job: Job) -> str:
    return f"{prefix} on {where()}"


def blocking_located(prefix: str, job: Job) -> str:
    return f"{prefix} on {where()}"


async def test_kinds_of_callables_are_detected(queue: JobQueue) -> None:
    assert where() == "loop"

    async def coroutine_of(job: Job) -> str:
        return "awaitable from a def"

    processors = {
        "async-object": AsyncCallable(),
        "sync-object": SyncCallable(),
        "async-partial": functools.partial(located, "async partial"),
        "sync-partial": functools.partial(blocking_located, "sync partial"),
        "returns-awaitable": lambda job: coroutine_of(job),
    }
    worker = JobWorker(queue, processors)
    jobs = [await queue.add(name, None) for name in processors]
    async with worker:
        results = await asyncio.wait_for(asyncio.gather(*(j.wait() for j in jobs)), LIMIT)
    assert results == [
        "async object on loop",
        "sync object on thread",
        "async partial on loop",
        "sync partial on thread",
        "awaitable from a def",
    ]


async def test_def_processor_registered_with_the_decorator(queue: JobQueue) -> None:
    worker = JobWorker(queue)

    @worker.processor("sum")
    def total(job: Job) -> int:
        return sum(job.data)

    @worker.processor()
    def anything(job: Job) -> str:
        return f"any:{job.name}"

    a = await queue.add("sum", [1, 2, 3])
    b = await queue.add("other", None)
    async with worker:
        assert await asyncio.wait_for(a.wait(), LIMIT) == 6
        assert await asyncio.wait_for(b.wait(), LIMIT) == "any:other"
