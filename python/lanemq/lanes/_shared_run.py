"""Running a command that the shared lanes' store gave this process (`claim`): in its own task,
under its lane's timeout, then reported back to the store (`complete`, or `fail` with the lane's
retry delay) and, for this process's own callables, settled on their handles. A command
interrupted by the manager's close is given back to the store (`release`), so it runs again
elsewhere; one the store says this process lost (its lease ran out) is interrupted and not
reported."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..exceptions import CommandTimeoutError, UnrecoverableError
from ._handle import DONE, FAILED, PENDING, RUNNING, CommandHandle
from ._state import log

if TYPE_CHECKING:
    from ._shared import SharedLanes

# Why a running command's task was cancelled by the manager (None: by nobody we know of).
TIMEOUT = "timeout"
CLOSE = "close"
LOST = "lost"
CANCEL = "cancel"
REPORTING = "reporting"  # (not a cause: the body has ended, and its end is being reported)


class ClaimedCommand:
    """A command running in this process: its handle (this process's own callable's, or one
    made for a named command), its attempt, and why the manager interrupted it, if it did."""

    __slots__ = ("attempt", "handle", "own", "task", "why")

    def __init__(self, handle: CommandHandle[Any], attempt: int, own: bool) -> None:
        self.handle = handle
        self.attempt = attempt
        self.own = own
        self.why: str | None = None
        self.task: asyncio.Task[None] | None = None

    def interrupt(self, why: str) -> None:
        if self.why is None and self.task is not None and not self.task.done():
            self.why = why
            self.task.cancel()


async def execute(shared: SharedLanes, command: ClaimedCommand) -> None:
    """Runs ``command`` to its end and reports that end to the store."""
    manager = shared.manager
    handle = command.handle
    handle._state = RUNNING
    manager._emit_for("queue.command.started", handle, attempt=command.attempt)
    shared.feed.started(handle)
    timeout = manager._timeouts[handle.lane]
    timer = None
    if timeout is not None:
        timer = asyncio.get_running_loop().call_later(timeout, command.interrupt, TIMEOUT)
    result: Any = None
    error: BaseException | None = None
    try:
        result = await _call(handle)
    except (Exception, asyncio.CancelledError) as raised:
        error = raised
    finally:
        if timer is not None:
            timer.cancel()
    why = command.why
    command.why = why or REPORTING  # the body is over: nothing interrupts its report
    # Its local slot is free before the store hears of its end: the wake that the report
    # sends every process (this one too) must find a free slot here, or this process would
    # wait again without claiming, its wake spent.
    shared.running.pop(handle.id, None)
    if not isinstance(error, asyncio.CancelledError):
        if error is None:
            await _completed(shared, command, result)
        else:
            await _failed(shared, command, error, timed_out=False)
    elif why == TIMEOUT:
        text = f"command {handle.id} in lane {handle.lane_id!r} timed out after {timeout}s"
        await _failed(shared, command, CommandTimeoutError(text), timed_out=True)
    elif why == LOST:
        log.warning("command %s: its lease was lost; another process runs it", handle.id)
    else:  # the manager closes, or the handle (an own callable) was cancelled
        await shared.report(shared.store.release, handle.id)
        shared.settle_cancelled(handle)


async def _completed(shared: SharedLanes, command: ClaimedCommand, result: Any) -> None:
    handle = command.handle
    text = "null"
    if not command.own:
        try:
            text = json.dumps(result, allow_nan=False)
        except (TypeError, ValueError) as error:
            name = handle.command_type
            problem = TypeError(f"the result of {name!r} is not JSON-serialisable: {error}")
            await _failed(shared, command, problem, timed_out=False, retryable=False)
            return
    if not await shared.complete(handle.id, text):
        log.warning("command %s: completed after its lease was lost", handle.id)
    shared.manager._emit_for("queue.command.completed", handle)
    shared.feed.completed(handle)
    if command.own:
        handle._finish(DONE, result)
        shared.settled(handle.id)


def _call(handle: CommandHandle[Any]) -> Any:
    fn: Callable[..., Any] = handle._fn
    if handle.is_async:
        return fn(*handle._args, **(handle._kwargs or {}))
    return _in_thread(fn, handle)


async def _in_thread(fn: Callable[..., Any], handle: CommandHandle[Any]) -> Any:
    result = await asyncio.to_thread(fn, *handle._args, **(handle._kwargs or {}))
    if asyncio.iscoroutine(result) or isinstance(result, asyncio.Future):
        result = await result
    return result


async def _failed(
    shared: SharedLanes,
    command: ClaimedCommand,
    error: BaseException,
    timed_out: bool,
    retryable: bool = True,
) -> None:
    """Reports a failed attempt: a retry after the lane's delay, or a failure for good."""
    manager = shared.manager
    handle = command.handle
    retry = shared.retries[handle.lane]
    retryable = retryable and not isinstance(error, UnrecoverableError)
    delay = None
    if retryable and command.attempt <= retry.max_retries:
        delay = retry.delay_for(command.attempt)
    text = f"{type(error).__name__}: {error}"
    retry_in_ms = None if delay is None else max(0, round(delay * 1000))
    reported = await shared.report(
        shared.store.fail,
        handle.id,
        text,
        retry_in_ms,
        handle.command_type,
        shared.letter_limit,
    )
    if not reported:
        log.warning("command %s: failed after its lease was lost", handle.id)
        return
    shared.feed.failed(handle, timed_out, delay)
    attempt = command.attempt
    if timed_out:
        manager._emit_for("queue.command.timeout", handle, attempt=attempt, error=text)
    if delay is not None:
        handle._state = PENDING
        manager._emit_for("queue.command.retry", handle, attempt=attempt, error=text, delay=delay)
        return
    manager._emit_for("queue.command.dead_lettered", handle, attempt=attempt, error=text)
    manager._emit_for("queue.command.failed", handle, attempt=attempt, error=text)
    shared.letters_changed = time.monotonic()
    if command.own:
        handle._finish(FAILED, error)
        shared.settled(handle.id)
