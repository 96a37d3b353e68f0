"""A worker whose report was applied but whose reply was lost (a connection cut or a server
restart between the two) sends the report again: that retry is answered as done, so the job
is reported once, as completed (or failed), and never as a lost lease. The loss is made here
by letting the queue's first report call through and raising instead of its reply; a real
Redis restart does the same in tests/test_redis_outage.py."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from lanemq import Job, JobQueue, JobWorker, LockLostWarning

LIMIT = 10.0  # bounds every wait (a broken worker fails the test instead of hanging it)


def _reply_lost_once(queue: JobQueue, *names: str) -> list[str]:
    """Makes the first call of any of the queue's methods ``names`` run, then raise as a
    connection lost before its reply would; returns the names of the calls made, in order."""
    calls: list[str] = []

    def wrap(name: str, call: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        async def lossy(*args: Any, **kwargs: Any) -> Any:
            reply = await call(*args, **kwargs)
            calls.append(name)
            if len(calls) == 1:
                raise ConnectionError("connection lost before the reply")
            return reply

        return lossy

    for name in names:
        setattr(queue, name, wrap(name, getattr(queue, name)))
    return calls


def _note(error: BaseException, errors: list[BaseException], reported: asyncio.Event) -> None:
    errors.append(error)
    if isinstance(error, LockLostWarning):
        reported.set()  # reported as lost: what the tests assert does not happen


@contextlib.asynccontextmanager
async def _running(worker: JobWorker) -> AsyncIterator[None]:
    task = asyncio.get_running_loop().create_task(worker.run())
    try:
        yield
    finally:
        await asyncio.wait_for(worker.close(), LIMIT)
        await asyncio.wait_for(task, LIMIT)


async def test_a_completion_whose_reply_was_lost_is_reported_as_done(queue: JobQueue) -> None:
    calls = _reply_lost_once(queue, "complete_many", "complete_and_claim")
    completed: list[tuple[str, Any]] = []
    errors: list[BaseException] = []
    reported = asyncio.Event()

    def on_completed(job: Job, result: Any) -> None:
        completed.append((job.id, result))
        reported.set()

    async def send(job: Job) -> dict[str, int]:
        return {"sent": job.data}

    worker = JobWorker(queue, {"send": send})
    worker.on("completed", on_completed)
    worker.on("error", lambda error: _note(error, errors, reported))
    job = await queue.add("send", 7)
    async with _running(worker):
        await asyncio.wait_for(reported.wait(), LIMIT)

    assert len(calls) >= 2  # the lost one, then its retry
    assert completed == [(job.id, {"sent": 7})]
    assert not [e for e in errors if isinstance(e, LockLostWarning)], errors
    assert any(isinstance(e, ConnectionError) for e in errors)
    assert (await queue.finished_result(job.id)).value == {"sent": 7}
    assert worker.processed == 1


async def test_a_failure_whose_reply_was_lost_is_reported_as_failed(queue: JobQueue) -> None:
    calls = _reply_lost_once(queue, "fail_many")
    failed: list[tuple[str, str]] = []
    errors: list[BaseException] = []
    reported = asyncio.Event()

    def on_failed(job: Job, error: BaseException) -> None:
        failed.append((job.id, str(error)))
        reported.set()

    async def send(job: Job) -> None:
        raise ValueError("no route")

    worker = JobWorker(queue, {"send": send})
    worker.on("failed", on_failed)
    worker.on("error", lambda error: _note(error, errors, reported))
    job = await queue.add("send", 7, attempts=1)
    async with _running(worker):
        await asyncio.wait_for(reported.wait(), LIMIT)

    assert calls == ["fail_many", "fail_many"]
    assert failed == [(job.id, "no route")]
    assert not [e for e in errors if isinstance(e, LockLostWarning)], errors
    assert await queue.get_state(job.id) == "failed"
    assert worker.failed == 1


async def test_a_retried_failure_whose_reply_was_lost_is_reported_once(queue: JobQueue) -> None:
    calls = _reply_lost_once(queue, "fail_many")
    failed: list[str] = []
    dead: list[str] = []
    errors: list[BaseException] = []
    runs: list[int] = []
    reported = asyncio.Event()

    def on_dead(job: Job, error: BaseException) -> None:
        dead.append(job.id)
        reported.set()

    async def send(job: Job) -> None:
        runs.append(job.attempts_started)
        raise ValueError(f"no route, attempt {job.attempts_started}")

    worker = JobWorker(queue, {"send": send})
    worker.on("failed", lambda job, error: failed.append(str(error)))
    worker.on("dead", on_dead)
    worker.on("error", lambda error: _note(error, errors, reported))
    job = await queue.add("send", 7, attempts=2)
    async with _running(worker):
        await asyncio.wait_for(reported.wait(), LIMIT)

    assert calls[:2] == ["fail_many", "fail_many"]  # the lost report, then its retry
    assert runs == [1, 2]
    assert failed == ["no route, attempt 1", "no route, attempt 2"]
    assert dead == [job.id]
    assert not [e for e in errors if isinstance(e, LockLostWarning)], errors
    assert worker.failed == 1
