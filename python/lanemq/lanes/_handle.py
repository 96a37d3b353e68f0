"""`CommandHandle`: what `QueueManager.submit_nowait` returns.

It speaks asyncio's future protocol (`asyncio.isfuture` accepts it), so `asyncio.gather`,
`wait`, `wait_for`, `shield` and an awaiting task use it as it is instead of wrapping it in a
task; yet it is no `asyncio.Future`: a handle nobody awaits holds no future, callback list or
loop handle, which keeps fire-and-forget submission cheap."""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    from ._manager import QueueManager

T = TypeVar("T")

# A handle's state. A running command whose task was interrupted records why in its state, so
# the runner tells its own interruption from anyone else's cancelling of the task.
PENDING = 0
RUNNING = 1
TIMING_OUT = 2
CANCELLING = 3
DONE = 4
FAILED = 5

_DoneCallback = Callable[["CommandHandle[Any]"], object]
_Callback = tuple[_DoneCallback, contextvars.Context]
_Callbacks = _Callback | list[_Callback]


class CommandHandle(Generic[T]):
    """A submitted lane command: ``await handle`` gives its result or raises its error;
    ``handle.cancel()`` withdraws it (or cancels it while it runs).

    It behaves as an asyncio future (``asyncio.isfuture(handle)`` is true): done callbacks,
    ``result()``, ``exception()``, ``gather``/``wait``/``wait_for``/``shield``. As with a task,
    cancelling a task that awaits the handle cancels the command, and the handle is cancelled
    once the command has stopped (a running command that swallows its cancellation finishes with
    its result instead)."""

    # Few slots, and only those the hot path reads are set at construction: creating a handle
    # is part of every submit. `_runner` is set when the command starts, `_outcome` when it ends.
    # `_asyncio_future_blocking` is asyncio's marker of a future-like object (a task sets it
    # back to False when it takes the handle as the thing it waits on), so it must be a slot.
    __slots__ = (
        "_args",
        "_asyncio_future_blocking",
        "_callbacks",
        "_fn",
        "_kwargs",
        "_manager",
        "_outcome",
        "_runner",
        "_state",
        "id",
        "is_async",
        "lane",
    )

    def __init__(
        self,
        manager: QueueManager,
        lane: int,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any] | None,
        is_async: bool,
    ) -> None:
        self.id = 0  # set once the dispatcher has it
        self.lane = lane
        self.is_async = is_async
        self._manager = manager
        self._fn = fn
        self._args = args
        self._kwargs = kwargs
        self._state = PENDING
        self._asyncio_future_blocking = False
        # Done callbacks: one (callback, context) pair, or a list of them from the second on.
        self._callbacks: _Callbacks | None = None
        self._outcome: Any
        self._runner: asyncio.Task[None]

    @property
    def lane_id(self) -> str:
        """The name of the lane the command was submitted to."""
        return self._manager._lane_ids[self.lane]

    @property
    def command_type(self) -> str:
        """The command's type: its ``command_type`` attribute, or the callable's name."""
        fn = self._fn
        owner = getattr(fn, "__self__", None)
        declared = getattr(owner, "command_type", None)
        if isinstance(declared, str):
            return declared
        return str(getattr(fn, "__qualname__", None) or type(fn).__name__)

    def done(self) -> bool:
        """Whether the command finished: it returned, raised or was cancelled."""
        return self._state >= DONE

    def running(self) -> bool:
        """Whether the command has started and not finished."""
        return RUNNING <= self._state < DONE

    def cancelled(self) -> bool:
        """Whether the command was cancelled (`cancel`, or the manager's close)."""
        return self._state == FAILED and isinstance(self._outcome, asyncio.CancelledError)

    def result(self) -> T:
        """The command's return value; raises its error, `CancelledError`, or
        `asyncio.InvalidStateError` while it has not finished."""
        state = self._state
        if state == DONE:
            return self._outcome  # type: ignore[no-any-return]
        if state == FAILED:
            raise self._outcome
        raise asyncio.InvalidStateError(f"command {self.id} has not finished")

    def exception(self) -> BaseException | None:
        """The command's error (None if it succeeded); raises `CancelledError` if it was
        cancelled and `asyncio.InvalidStateError` while it has not finished, as a future does."""
        state = self._state
        if state < DONE:
            raise asyncio.InvalidStateError(f"command {self.id} has not finished")
        if state == DONE:
            return None
        outcome: BaseException = self._outcome
        if isinstance(outcome, asyncio.CancelledError):
            raise outcome
        return outcome

    def cancel(self, msg: Any | None = None) -> bool:
        """Withdraws a pending (or retry-waiting) command at once, or cancels a running one's
        task; the handle then raises `CancelledError`. False if it had already finished.
        ``msg`` is accepted for asyncio's future protocol (tasks and gather pass it)."""
        if self._state >= DONE:
            return False
        return self._manager._cancel(self)

    def get_loop(self) -> asyncio.AbstractEventLoop:
        """The event loop the manager runs on."""
        loop = self._manager._event_loop
        return self._manager._loop() if loop is None else loop

    def add_done_callback(
        self, fn: _DoneCallback, *, context: contextvars.Context | None = None
    ) -> None:
        """Calls ``fn(handle)`` soon after the command has finished (at once-soon if it already
        has), on the event loop, in ``context`` or else in a copy of the current context."""
        if context is None:
            context = contextvars.copy_context()
        if self._state >= DONE:
            self._manager._loop().call_soon(fn, self, context=context)
            return
        callbacks = self._callbacks
        if callbacks is None:
            # The usual case (one awaiting task, or gather): no list, fewer objects for the
            # garbage collector to track while many handles are pending.
            self._callbacks = (fn, context)
        elif isinstance(callbacks, tuple):
            self._callbacks = [callbacks, (fn, context)]
        else:
            callbacks.append((fn, context))

    def remove_done_callback(self, fn: _DoneCallback) -> int:
        """Removes every registration of ``fn`` not yet called; returns how many there were."""
        callbacks = self._callbacks
        if callbacks is None:
            return 0
        if isinstance(callbacks, tuple):
            if callbacks[0] != fn:
                return 0
            self._callbacks = None
            return 1
        kept = [entry for entry in callbacks if entry[0] != fn]
        removed = len(callbacks) - len(kept)
        self._callbacks = kept or None
        return removed

    def __await__(self) -> Generator[Any, None, T]:
        if self._state < DONE:
            # The future protocol: the awaiting task sees the flag, waits on this handle
            # through add_done_callback, and its cancel() calls ours.
            self._asyncio_future_blocking = True
            yield self
        if self._state == DONE:  # result(), inlined: this runs for every awaited command
            return self._outcome  # type: ignore[no-any-return]
        if self._state < DONE:
            raise RuntimeError("await wasn't used with future")
        raise self._outcome

    __iter__ = __await__  # `yield from handle` in generator-based code, as for a future

    # Read by asyncio.gather for cancelled children.

    @property
    def _cancel_message(self) -> str | None:
        if not self.cancelled():
            return None
        args = self._outcome.args
        return str(args[0]) if args else None

    def _make_cancelled_error(self) -> asyncio.CancelledError:
        if self.cancelled():
            error: asyncio.CancelledError = self._outcome
            return error
        return asyncio.CancelledError()

    # Called by the manager only.

    def _finish(self, state: int, outcome: Any) -> None:
        self._state = state
        self._outcome = outcome
        if self._callbacks is not None:
            # Inlined QueueManager._callbacks_due (a call less on every awaited command): the
            # manager calls them on the loop's next turn, with those of other handles.
            manager = self._manager
            due = manager._due
            if not due:
                manager._loop().call_soon(manager._run_due)
            due.append(self)

    def __repr__(self) -> str:
        state = ("pending", "running", "running", "running", "done", "failed")[self._state]
        return f"<CommandHandle id={self.id} lane={self.lane_id!r} {state}>"
