"""Conformance on every backend of what `Job.wait()` raises for a failed job (an instance of
both `JobFailedError` and the class the processor raised, where that can be made, with
``cause_type``), and of the per-job ``stack_trace_limit`` (BullMQ's ``stackTraceLimit``)."""

from __future__ import annotations

import asyncio
import errno
from typing import Any

import pytest
from lanemq import (
    Backoff,
    ConfigError,
    Job,
    JobCancelledError,
    JobFailedError,
    JobOptions,
    JobQueue,
    JobWorker,
    UnrecoverableError,
)

LIMIT = 5.0
HERE = __name__


class Declined(Exception):
    """A processor's own error class, importable (its module is imported)."""


class NeedsArguments(Exception):
    """A class whose ``__init__`` wants arguments `wait` does not have."""

    def __init__(self, code: int, detail: str) -> None:
        super().__init__(f"{code}: {detail}")
        self.code = code


async def failed_wait(queue: JobQueue, error: BaseException, **options: Any) -> JobFailedError:
    """Fails a job with ``error`` through a worker and returns what its `wait` raises."""

    async def fail(job: Job) -> None:
        raise error

    job = await queue.add("f", None, **options)
    await asyncio.wait_for(JobWorker(queue, fail).run_until_idle(), LIMIT)
    # Through a job read back from the backend, as another process would.
    stored = await queue.get_job(job.id)
    assert stored is not None
    with pytest.raises(JobFailedError) as raised:
        await asyncio.wait_for(stored.wait(), LIMIT)
    return raised.value


async def test_a_builtin_error_is_caught_as_itself(queue: JobQueue) -> None:
    error = await failed_wait(queue, ValueError("bad value"))
    assert isinstance(error, ValueError)
    assert error.cause_type == "builtins.ValueError"
    assert error.reason == "ValueError: bad value"
    assert str(error).endswith("failed: ValueError: bad value")
    try:
        raise error
    except ValueError as caught:  # the point: an `except ValueError` catches it
        assert caught is error


async def test_the_joined_class_is_made_once_per_class(queue: JobQueue) -> None:
    first = await failed_wait(queue, KeyError("k"))
    second = await failed_wait(queue, KeyError("other"))
    assert isinstance(first, KeyError)
    assert type(first) is type(second)
    assert type(first).__name__ == "JobFailedError_KeyError"


async def test_an_importable_class_of_the_processor_is_caught_as_itself(
    queue: JobQueue,
) -> None:
    error = await failed_wait(queue, Declined("card declined"))
    assert isinstance(error, Declined)
    assert error.cause_type == f"{HERE}.Declined"
    # Its __init__ wants arguments: made without calling it.
    needy = await failed_wait(queue, NeedsArguments(402, "pay"))
    assert isinstance(needy, NeedsArguments)
    assert needy.cause_type == f"{HERE}.NeedsArguments"
    assert needy.reason == "NeedsArguments: 402: pay"


async def test_an_os_error_subclass_is_caught_as_itself(queue: JobQueue) -> None:
    error = await failed_wait(queue, FileNotFoundError(errno.ENOENT, "no such file", "/x"))
    assert isinstance(error, FileNotFoundError)
    assert isinstance(error, OSError)
    assert error.cause_type == "builtins.FileNotFoundError"


async def test_a_class_that_cannot_be_found_gives_plain_job_failed_error(
    queue: JobQueue,
) -> None:
    class Local(Exception):
        """Not importable: defined in a function."""

    error = await failed_wait(queue, Local("inner"))
    assert type(error) is JobFailedError
    assert error.cause_type == f"{HERE}.{Local.__qualname__}"


async def test_a_failure_that_names_no_class_has_no_cause_type(queue: JobQueue) -> None:
    job = await queue.add("f", None)
    (claimed,) = await queue.claim("w", 30.0, 1)
    assert claimed.lock_token is not None
    await queue.fail(job.id, claimed.lock_token, "timeout", retry=False)
    with pytest.raises(JobFailedError) as raised:
        await asyncio.wait_for(job.wait(), LIMIT)
    assert type(raised.value) is JobFailedError
    assert raised.value.cause_type is None


@pytest.mark.parametrize("limit", [None, 0])
async def test_a_cancelled_job_still_raises_job_cancelled_error(
    queue: JobQueue, limit: int | None
) -> None:
    # (its cancellation's trace entry is kept even with stack_trace_limit=0: wait reads it)
    job = await queue.add("c", None, stack_trace_limit=limit)
    await queue.cancel(job.id, "not needed")
    with pytest.raises(JobCancelledError) as raised:
        await asyncio.wait_for(job.wait(), LIMIT)
    assert type(raised.value) is JobCancelledError


async def test_a_running_job_cancelled_without_traces_raises_job_cancelled_error(
    queue: JobQueue,
) -> None:
    started = asyncio.Event()

    async def slow(job: Job) -> None:
        started.set()
        await asyncio.sleep(60)

    job = await queue.add("slow", None, stack_trace_limit=0)
    async with JobWorker(queue, slow):
        await asyncio.wait_for(started.wait(), LIMIT)
        await queue.cancel(job.id, "user aborted")
        with pytest.raises(JobCancelledError, match="user aborted"):
            await asyncio.wait_for(job.wait(), LIMIT)


async def test_without_a_trace_the_reason_names_a_builtin(queue: JobQueue) -> None:
    error = await failed_wait(queue, ValueError("untraced"), stack_trace_limit=0)
    assert isinstance(error, ValueError)
    assert error.cause_type == "builtins.ValueError"
    custom = await failed_wait(queue, UnrecoverableError("give up"), stack_trace_limit=0)
    assert type(custom) is JobFailedError
    assert custom.cause_type == "UnrecoverableError"


# ------------------------------------------------------------------- stack_trace_limit


async def fail_times(queue: JobQueue, attempts: int, **options: Any) -> list[str]:
    """Fails every attempt of one job; returns the stack traces it keeps."""

    async def fail(job: Job) -> None:
        raise RuntimeError(f"attempt {job.attempts_made + 1}")

    job = await queue.add("f", None, attempts=attempts, backoff=Backoff.fixed(0), **options)
    worker = JobWorker(queue, fail)
    assert await asyncio.wait_for(worker.run_until_idle(), LIMIT) == attempts
    stored = await queue.get_job(job.id)
    assert stored is not None and stored.state == "failed"
    return stored.stacktrace


async def test_the_default_keeps_ten_traces(queue: JobQueue) -> None:
    traces = await fail_times(queue, 12)
    assert len(traces) == 10
    assert "attempt 12" in traces[-1]


async def test_stack_trace_limit_keeps_the_newest(queue: JobQueue) -> None:
    traces = await fail_times(queue, 4, stack_trace_limit=2)
    assert len(traces) == 2
    assert "attempt 3" in traces[0] and "attempt 4" in traces[1]
    stored = (await queue.list_jobs("failed"))[0]
    assert stored.options.stack_trace_limit == 2  # stored with the job


async def test_a_stack_trace_limit_of_zero_keeps_none(queue: JobQueue) -> None:
    assert await fail_times(queue, 3, stack_trace_limit=0) == []


async def test_stack_trace_limit_as_job_options(queue: JobQueue) -> None:
    job = await queue.add("f", None, JobOptions(stack_trace_limit=1, attempts=2))
    assert job.options.stack_trace_limit == 1
    bulk = await queue.add_bulk([("f", None, {"stack_trace_limit": 0})])
    assert bulk[0].options.stack_trace_limit == 0
    assert (await queue.add("f", None)).options.stack_trace_limit is None


@pytest.mark.parametrize("bad", [-1, 1.5, "3", 2**32])
async def test_a_bad_stack_trace_limit_is_refused(queue: JobQueue, bad: Any) -> None:
    with pytest.raises((ConfigError, TypeError), match="stack_trace_limit"):
        await queue.add("f", None, stack_trace_limit=bad)
    assert await queue.list_jobs() == []
