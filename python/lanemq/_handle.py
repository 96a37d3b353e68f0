"""`CommandHandle`: what `QueueManager.submit_nowait` returns. It is awaitable, but it creates no
future unless someone awaits it before it finishes, which keeps fire-and-forget submission cheap."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    from .lanes import QueueManager

T = TypeVar("T")

# A handle's state. A running command whose task was interrupted records why in its state, so
# the runner tells its own interruption from anyone else's cancelling of the task.
PENDING = 0
RUNNING = 1
TIMING_OUT = 2
CANCELLING = 3
DONE = 4
FAILED = 5


class CommandHandle(Generic[T]):
    """A submitted lane command: ``await handle`` gives its result or raises its error;
    ``handle.cancel()`` withdraws it (or cancels it while it runs)."""

    # Few slots, and only those the hot path reads are set at construction: creating a handle
    # is part of every submit. `_runner` is set when the command starts, `_outcome` when it ends.
    __slots__ = (
        "_args",
        "_fn",
        "_kwargs",
        "_manager",
        "_outcome",
        "_runner",
        "_state",
        "_waiter",
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
        self.id = 0  # set once the scheduler has it
        self.lane = lane
        self.is_async = is_async
        self._manager = manager
        self._fn = fn
        self._args = args
        self._kwargs = kwargs
        self._state = PENDING
        self._waiter: asyncio.Future[None] | None = None
        self._outcome: Any
        self._runner: asyncio.Task[None]

    @property
    def lane_id(self) -> str:
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
        return self._state >= DONE

    def running(self) -> bool:
        return RUNNING <= self._state < DONE

    def cancelled(self) -> bool:
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
        if self._state < DONE:
            raise asyncio.InvalidStateError(f"command {self.id} has not finished")
        return self._outcome if self._state == FAILED else None

    def cancel(self) -> bool:
        """Withdraws a pending (or retry-waiting) command at once, or cancels a running one's
        task; the handle then raises `CancelledError`. False if it had already finished."""
        if self._state >= DONE:
            return False
        return self._manager._cancel(self)

    def __await__(self) -> Generator[Any, None, T]:
        if self._state < DONE:
            waiter = self._waiter
            if waiter is None:
                waiter = self._waiter = self._manager._loop().create_future()
            try:
                yield from waiter
            except asyncio.CancelledError:
                # The awaiting task was cancelled: cancel the command, as awaiting a task would.
                if self._state < DONE:
                    self.cancel()
                raise
        return self.result()

    # Called by the manager only.

    def _finish(self, state: int, outcome: Any) -> None:
        self._state = state
        self._outcome = outcome
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def __repr__(self) -> str:
        state = ("pending", "running", "running", "running", "done", "failed")[self._state]
        return f"<CommandHandle id={self.id} lane={self.lane_id!r} {state}>"
