"""What every part of `JobWorker` shares: the state its ``__init__`` sets (declared here so
each part of the class is type-checked against it), the wake-up future of the loop, and the
hooks. The class is split by concern into a chain of bases: `_state` (this), `_reporting`
(outcomes to the backend, chores), `_tasks` (a job's task from start to end), `_loop` (a turn
of the run loop), `_controls` (pause, resume, waiting for the running loop to be idle) and
`_worker` (the public class: set-up, run, close)."""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .. import _tracing
from .._core import WorkerBook
from ..exceptions import ConfigError
from . import _log as _worker_log
from ._calls import AsyncProcessor, Processor
from ._retries import BackoffStrategy, RetryTypes

if TYPE_CHECKING:
    from ..queue import JobQueue
    from ._batches import Batcher, Gate, GroupedBatcher

log = logging.getLogger("lanemq.worker")

HOOKS = ("completed", "failed", "dead", "stalled", "error")


class WorkerState:
    """The attributes `JobWorker.__init__` sets that the parts of the class use."""

    queue: JobQueue
    id: str
    lease: float
    stalled_interval: float
    block_timeout: float
    unknown_name_retries: int
    unknown_name_delay: float
    _remote: bool
    _book: WorkerBook
    _processors: dict[str, AsyncProcessor]
    _default: AsyncProcessor | None
    _hooks: dict[str, list[Callable[..., Any]]]
    _timers: dict[asyncio.Task[Any], asyncio.TimerHandle]
    _strays: set[asyncio.Task[Any]]
    _awaited_cancels: dict[str, tuple[str, str, float]]
    _hold_queue: float
    _wake_future: asyncio.Future[None] | None
    _exchanges: set[asyncio.Task[bool]]
    _last_claim: asyncio.Task[bool] | None
    _closing: bool
    _force: bool
    _releasing: set[asyncio.Task[Any]]
    _loop: asyncio.AbstractEventLoop | None
    _stopped: asyncio.Event
    _outcomes: _tracing.Outcomes
    _outage: _worker_log.Outage
    _batchers: dict[str, Batcher | GroupedBatcher]
    _gate: Gate
    _batch_runs: set[asyncio.Task[None]]
    _running: asyncio.Task[None] | None
    _run_done: asyncio.Future[None] | None
    _looping: bool
    _idle_waiters: list[asyncio.Future[None]]
    _drain_waiters: list[asyncio.Future[None]]
    _recheck: bool
    _handlers: dict[str, Processor]
    _retry_policy: RetryTypes
    _retry_policies: dict[str | None, RetryTypes]
    _backoff_strategies: dict[str, BackoffStrategy]

    def _retry_policy_for(self, name: str) -> RetryTypes:
        """The retry policy of the processor that runs jobs called ``name``: its own, else the
        worker's (a batch processor has none of its own; the default processor runs the
        names no other processor has)."""
        own = self._retry_policies
        if not own or name in self._batchers:
            return self._retry_policy
        return own.get(name if name in self._handlers else None, self._retry_policy)

    @property
    def _wake(self) -> asyncio.Future[None] | None:
        """The future the loop waits on (None while it does not wait): a job that ends, or
        close(), sets it. The book has it too, for `WorkerBook.task_done`."""
        return self._wake_future

    @_wake.setter
    def _wake(self, wake: asyncio.Future[None] | None) -> None:
        self._wake_future = wake
        self._book.wake = wake

    def _poke(self) -> None:
        wake = self._wake
        if wake is not None and not wake.done():
            wake.set_result(None)

    async def _hook(self, event: str, *args: Any) -> None:
        for callback in self._hooks[event]:
            try:
                outcome = callback(*args)
                if inspect.isawaitable(outcome):
                    await outcome
            except Exception:
                log.exception("worker %s: %s hook %r raised", self.id, event, callback)


def checked_prefetch(value: object) -> int | None:
    """The jobs a worker may claim ahead beyond its concurrency: None (as many as the
    concurrency, up to 10) or an integer >= 0."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 2**32 - 1:
        raise ConfigError(f"invalid prefetch: {value!r} (must be None or an integer >= 0)")
    return value


def checked_concurrency(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"invalid concurrency: {value!r} (must be an integer >= 1)")
    return value


def retrieve(future: asyncio.Future[Any]) -> None:
    """Marks the outcome of a future nobody awaits as seen, so asyncio does not log it."""
    if not future.cancelled():
        future.exception()
