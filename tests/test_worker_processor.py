"""`JobWorker.processor` as a decorator: with a name, with none (every name), and bare, which
registers the function under its own name (it was a silent no-op: the function was taken for
the name and nothing was registered)."""

from __future__ import annotations

import asyncio

import pytest
from lanemq import InMemoryJobQueue, Job, JobWorker

LIMIT = 5.0


async def test_bare_decorator_registers_the_function_under_its_name() -> None:
    queue = InMemoryJobQueue("bare")
    worker = JobWorker(queue)

    @worker.processor
    async def send(job: Job) -> str:
        return f"sent {job.data}"

    @worker.processor
    def resize(job: Job) -> int:  # a plain def: run in a thread, as with parentheses
        return int(job.data) * 2

    assert callable(send) and callable(resize)  # the decorator gives the function back
    sent = await queue.add("send", "mail")
    resized = await queue.add("resize", 21)
    other = await queue.add("other", None)
    assert await asyncio.wait_for(worker.run_until_idle(), LIMIT) == 3
    assert await sent.wait(timeout=LIMIT) == "sent mail"
    assert await resized.wait(timeout=LIMIT) == 42
    # Bare means "this name", not "every name": a job of another name has no processor.
    assert await queue.get_state(other.id) == "failed"


async def test_processor_name_of_another_type_raises_type_error() -> None:
    worker = JobWorker(InMemoryJobQueue("bad-name"))
    with pytest.raises(TypeError, match="processor name must be a str or None, got 42"):
        worker.processor(42)  # type: ignore[call-overload]
