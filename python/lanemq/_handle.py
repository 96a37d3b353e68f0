"""`CommandHandle`: what `QueueManager.submit_nowait` returns. It is awaitable, but it creates no
future unless someone awaits it before it finishes, which keeps fire-and-forget submission cheap."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    from .lanes import QueueManager

T = TypeVar("T")

PENDING = 0
RUNNING = 1
DONE = 2

# Why a running command's task was interrupted.
INTERRUPT_TIMEOUT = "timeout"
INTERRUPT_CANCEL = "cancel"


class CommandHandle(Generic[T]):
    """A submitted lane command: ``await handle`` gives its result or raises its error;
    ``handle.cancel()`` withdraws it (or cancels it while it runs)."""

    __slots__ = (
        "_args",
        "_cancelled",
        "_exception",
        "_fn",
        "_interrupt",
        "_kwargs",
        "_manager",
        "_result",
        "_runner",
        "_state",
        "_waiter",
        "durable_key",
        "id",
        "is_async",
        "lane",
        "lane_id",
    )

    def __init__(
        self,
        manager: QueueManager,
        command_id: int,
        lane: int,
        lane_id: str,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        is_async: bool,
    ) -> None:
        self.id = command_id
        self.lane = lane
        self.lane_id = lane_id
        self.is_async = is_async
        self.durable_key: str | None = None
        self._manager = manager
        self._fn = fn
        self._args = args
        self._kwargs = kwargs
        self._state = PENDING
        self._result: Any = None
        self._exception: BaseException | None = None
        self._cancelled = False
        self._waiter: asyncio.Future[None] | None = None
        self._runner: asyncio.Task[None] | None = None
        self._interrupt: str | None = None

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
        return self._state == DONE

    def running(self) -> bool:
        return self._state == RUNNING

    def cancelled(self) -> bool:
        return self._cancelled

    def result(self) -> T:
        """The command's return value; raises its error, `CancelledError`, or
        `asyncio.InvalidStateError` while it has not finished."""
        if self._state != DONE:
            raise asyncio.InvalidStateError(f"command {self.id} has not finished")
        if self._exception is not None:
            raise self._exception
        return self._result  # type: ignore[no-any-return]

    def exception(self) -> BaseException | None:
        if self._state != DONE:
            raise asyncio.InvalidStateError(f"command {self.id} has not finished")
        return self._exception

    def cancel(self) -> bool:
        """Withdraws a pending (or retry-waiting) command at once, or cancels a running one's
        task; the handle then raises `CancelledError`. False if it had already finished."""
        if self._state == DONE:
            return False
        return self._manager._cancel(self)

    def __await__(self) -> Generator[Any, None, T]:
        if self._state != DONE:
            waiter = self._waiter
            if waiter is None:
                waiter = self._waiter = self._manager._loop().create_future()
            try:
                yield from waiter
            except asyncio.CancelledError:
                # The awaiting task was cancelled: cancel the command, as awaiting a task would.
                if self._state != DONE:
                    self.cancel()
                raise
        return self.result()

    # Called by the manager only.

    def _call(self) -> Any:
        return self._fn(*self._args, **self._kwargs)

    def _finish(self, result: Any, exception: BaseException | None) -> None:
        self._state = DONE
        self._result = result
        self._exception = exception
        self._fn = self._args = self._kwargs = None  # type: ignore[assignment]
        self._runner = None
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _finish_cancelled(self) -> None:
        self._cancelled = True
        self._finish(None, asyncio.CancelledError(f"command {self.id} was cancelled"))

    def __repr__(self) -> str:
        state = ("pending", "running", "done")[self._state]
        return f"<CommandHandle id={self.id} lane={self.lane_id!r} {state}>"
