"""`JobWorker.use(middleware)`: ``async def middleware(job, call_next)`` around every processor
call, first registered outermost; it sees results and exceptions and may change them."""

from __future__ import annotations

import asyncio
import contextvars
import gc
import threading
import warnings
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from conformance.backends import queue_fixture
from lanemq import Job, JobFailedError, JobQueue, JobWorker, UnrecoverableError

LIMIT = 10.0
Next = Callable[[], Awaitable[Any]]


queue = queue_fixture("memory", "local")


async def test_middleware_runs_in_registration_order_around_the_processor(
    queue: JobQueue,
) -> None:
    trace: list[str] = []

    async def work(job: Job) -> str:
        trace.append("processor")
        return "result"

    worker = JobWorker(queue, work)

    @worker.use
    async def outer(job: Job, call_next: Next) -> Any:
        trace.append("outer>")
        result = await call_next()
        trace.append(f"<outer({result})")
        return result

    async def inner(job: Job, call_next: Next) -> Any:
        trace.append("inner>")
        result = await call_next()
        trace.append(f"<inner({result})")
        return result

    assert worker.use(inner) is inner
    assert await worker.run_until_idle() == 0
    await queue.add("j", None)
    assert await asyncio.wait_for(worker.run_until_idle(), LIMIT) == 1
    assert trace == ["outer>", "inner>", "processor", "<inner(result)", "<outer(result)"]


async def test_middleware_may_transform_the_result(queue: JobQueue) -> None:
    async def work(job: Job) -> int:
        return int(job.data)

    async def wrap(job: Job, call_next: Next) -> Any:
        return {"value": await call_next(), "job": job.name}

    worker = JobWorker(queue, work)
    worker.use(wrap)
    job = await queue.add("n", 7)
    await asyncio.wait_for(worker.run_until_idle(), LIMIT)
    assert (await queue.finished_result(job.id)).value == {"value": 7, "job": "n"}


async def test_middleware_sees_and_may_replace_exceptions(queue: JobQueue) -> None:
    seen: list[str] = []

    async def work(job: Job) -> str:
        raise RuntimeError(f"boom:{job.data}")

    async def observe(job: Job, call_next: Next) -> Any:
        try:
            return await call_next()
        except Exception as error:
            seen.append(f"{type(error).__name__}: {error}")
            raise

    async def policy(job: Job, call_next: Next) -> Any:
        try:
            return await call_next()
        except RuntimeError as error:
            if job.data == "recover":
                return "recovered"
            if job.data == "give-up":
                raise UnrecoverableError(f"gave up after {error}") from error
            raise

    worker = JobWorker(queue, work)
    worker.use(observe)
    worker.use(policy)
    recover = await queue.add("j", "recover", attempts=3)
    give_up = await queue.add("j", "give-up", attempts=3)
    plain = await queue.add("j", "plain", attempts=1)
    await asyncio.wait_for(worker.run_until_idle(), LIMIT)

    assert (await queue.finished_result(recover.id)).value == "recovered"
    with pytest.raises(JobFailedError, match="gave up after boom:give-up"):
        await give_up.wait(timeout=LIMIT)
    stored = await queue.get_job(give_up.id)
    assert stored is not None and stored.attempts_made == 1  # unrecoverable: no retry
    with pytest.raises(JobFailedError, match="boom:plain"):
        await plain.wait(timeout=LIMIT)
    assert seen == ["UnrecoverableError: gave up after boom:give-up", "RuntimeError: boom:plain"]


request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="-")


async def test_middleware_stays_on_the_loop_around_a_def_processor(queue: JobQueue) -> None:
    loop_thread = threading.get_ident()
    where: dict[str, Any] = {}

    async def context(job: Job, call_next: Next) -> Any:
        where["middleware"] = threading.get_ident() == loop_thread
        token = request_id.set(f"req-{job.data}")
        try:
            return await call_next()
        finally:
            request_id.reset(token)

    worker = JobWorker(queue)
    worker.use(context)

    @worker.processor()
    def blocking(job: Job) -> str:
        where["processor"] = threading.get_ident() == loop_thread
        return request_id.get()

    job = await queue.add("b", 42)
    await asyncio.wait_for(worker.run_until_idle(), LIMIT)
    assert (await queue.finished_result(job.id)).value == "req-42"
    assert where == {"middleware": True, "processor": False}


async def test_middleware_that_skips_the_processor_leaves_nothing_unawaited(
    queue: JobQueue,
) -> None:
    ran: list[str] = []

    async def work(job: Job) -> str:
        ran.append(job.id)
        return "ran"

    async def cached(job: Job, call_next: Next) -> Any:
        return "from cache"

    worker = JobWorker(queue, work)
    worker.use(cached)
    job = await queue.add("c", None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        await asyncio.wait_for(worker.run_until_idle(), LIMIT)
        gc.collect()
    assert (await queue.finished_result(job.id)).value == "from cache"
    assert ran == []
    assert [w for w in caught if "never awaited" in str(w.message)] == []


async def test_middleware_applies_to_processors_registered_before_and_after(
    queue: JobQueue,
) -> None:
    async def early(job: Job) -> str:
        return "early"

    worker = JobWorker(queue, {"early": early})

    async def tag(job: Job, call_next: Next) -> Any:
        return f"[{await call_next()}]"

    worker.use(tag)

    @worker.processor("late")
    async def late(job: Job) -> str:
        return "late"

    a = await queue.add("early", None)
    b = await queue.add("late", None)
    await asyncio.wait_for(worker.run_until_idle(), LIMIT)
    assert (await queue.finished_result(a.id)).value == "[early]"
    assert (await queue.finished_result(b.id)).value == "[late]"


async def test_use_refuses_what_is_not_async(queue: JobQueue) -> None:
    worker = JobWorker(queue)

    def plain(job: Job, call_next: Next) -> Any:
        return call_next()

    for bad in (plain, 42):
        with pytest.raises(TypeError, match="middleware must be an async def"):
            worker.use(bad)  # type: ignore[type-var]
