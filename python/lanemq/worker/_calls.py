"""How `JobWorker` calls a processor: an ``async def`` one as it is, a plain ``def`` one in a
worker thread; middleware around either."""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from ..job import Job

Processor = Callable[[Job], Any]
"""``async def f(job)``, or a plain ``def f(job)`` (run in a worker thread)."""
AsyncProcessor = Callable[[Job], Awaitable[Any]]
Middleware = Callable[[Job, Callable[[], Awaitable[Any]]], Awaitable[Any]]
"""``async def middleware(job, call_next)``: ``await call_next()`` runs the next middleware or
the processor and gives its result."""


def is_async_callable(fn: Any) -> bool:
    """Whether calling ``fn`` gives a coroutine: an ``async def`` function, a
    `functools.partial` of one, or an object whose class has an ``async def __call__``."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    if inspect.iscoroutinefunction(fn):
        return True
    call = getattr(type(fn), "__call__", None)  # noqa: B004 - the class's __call__, not fn's
    return call is not None and inspect.iscoroutinefunction(call)


def as_async(processor: Processor) -> AsyncProcessor:
    """``processor`` itself when it is async (no wrapper: the hot path stays as it was), else
    an async function that runs it in a worker thread."""
    if is_async_callable(processor):
        return processor
    return in_thread(processor)


def in_thread(processor: Processor) -> AsyncProcessor:
    """Runs the plain callable ``processor`` in the loop's default executor, with the
    caller's context variables (as `asyncio.to_thread` does), and gives its result; one that
    returns an awaitable after all has it awaited on the loop. Cancelling the call (a job
    timeout, close) cannot stop the thread: the call ends at once and whatever the thread
    does later is ignored (its writes through `Job.sync` are refused once the worker has let
    the job go)."""

    @functools.wraps(processor)
    async def run_in_thread(job: Job) -> Any:
        job.sync  # noqa: B018 - read on the loop, it binds the job to it for the thread's calls
        return await in_executor(processor, job)

    return run_in_thread


async def in_executor(fn: Callable[[Any], Any], arg: Any) -> Any:
    """``fn(arg)`` in the loop's default executor with the caller's context variables; an
    awaitable it returns is awaited on the loop (`in_thread`, and batch processors')."""
    loop = asyncio.get_running_loop()
    context = contextvars.copy_context()
    result = await loop.run_in_executor(None, context.run, fn, arg)
    if inspect.isawaitable(result):
        result = await result
    return result


def with_middleware(call: AsyncProcessor, middleware: Sequence[Middleware]) -> AsyncProcessor:
    """``call`` inside ``middleware``, the first one outermost."""
    for layer in reversed(middleware):
        call = _layer(layer, call)
    return call


def _layer(middleware: Middleware, inner: AsyncProcessor) -> AsyncProcessor:
    async def around(job: Job) -> Any:
        # call_next makes the coroutine only when called: a middleware that skips the
        # processor leaves no coroutine unawaited.
        return await middleware(job, lambda: inner(job))

    return around
