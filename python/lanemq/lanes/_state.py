"""What every part of `QueueManager` shares: the state its ``__init__`` sets (declared here so
each part of the class is type-checked against it), and the events and alerts it emits. The
class is split by concern into a chain of bases: `_state` (this), `_running` (the runners
that run commands, and what they settle), and `_manager` (the public class: lanes, submits,
lifecycle, observation)."""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._core import AlertConfig, LaneDispatcher
from ..events import EventBus
from ..storage import LocalStorage
from ._handle import CommandHandle
from ._metrics_feed import MetricsFeed

if TYPE_CHECKING:
    from ._shared import SharedLanes

log = logging.getLogger("lanemq.lanes")


@dataclass(frozen=True, slots=True)
class Alert:
    """A threshold crossed: ``kind`` is ``queue_depth`` (value: pending commands) or ``latency``
    (value: seconds a command ran); ``level`` is ``warning`` or ``critical``; ``threshold`` is
    the `AlertConfig` value crossed. ``message`` says it in words, for a log line or a page."""

    lane_id: str
    kind: str
    level: str
    value: float
    threshold: float | None = None

    @property
    def message(self) -> str:
        """E.g. ``lane 'prompt': 12 commands waiting (warning at 10)``."""
        unit = ""
        if self.kind == "queue_depth":
            count = int(self.value)
            what = f"{count} command{'' if count == 1 else 's'} waiting"
        elif self.kind == "latency":
            what, unit = f"a command ran {self.value:.3g}s", "s"
        else:
            what = f"{self.kind} {self.value:g}"
        at = self.level if self.threshold is None else f"{self.level} at {self.threshold:g}{unit}"
        return f"lane {self.lane_id!r}: {what} ({at})"


def alert_threshold(config: AlertConfig | None, kind: str, level: str) -> float | None:
    """The `AlertConfig` value an alert of this ``kind`` and ``level`` crossed."""
    if config is None:
        return None
    value: float | None = getattr(config, f"{kind}_{level}", None)
    return value


class ManagerState:
    """The attributes `QueueManager.__init__` sets that the parts of the class use."""

    _core: LaneDispatcher
    _lane_ids: list[str]
    _timeouts: list[float | None]
    _feed: MetricsFeed | None
    _bus: EventBus
    _alert_callbacks: list[Callable[[Alert], Any]]
    _alert_config: AlertConfig | None
    _storage: LocalStorage | None
    _durable: dict[int, str]
    _event_loop: asyncio.AbstractEventLoop | None
    _idle: list[asyncio.Future[None]]
    _waking: int
    _wake_timer: asyncio.TimerHandle | None
    _wake_at: float
    _drained: list[asyncio.Future[None]]
    _due: list[CommandHandle[Any]]
    _background: set[asyncio.Task[Any]]
    _watch_signals: bool
    _stopping: bool
    _shared: SharedLanes | None
    _registry: dict[str, Callable[[Any], Any]]
    _autostart: bool
    _started: bool

    def _loop(self) -> asyncio.AbstractEventLoop:
        if self._event_loop is None:
            self._event_loop = asyncio.get_running_loop()
        return self._event_loop

    def _notify_drained(self) -> None:
        for waiter in self._drained:
            if not waiter.done():
                waiter.set_result(None)
        self._drained.clear()

    def _spawn(self, work: Coroutine[Any, Any, Any]) -> None:
        task = self._loop().create_task(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def _emit_for(self, key: str, handle: CommandHandle[Any], **extra: Any) -> None:
        if self._bus.active:
            self._bus.emit(
                key,
                lane_id=handle.lane_id,
                command_id=handle.id,
                command_type=handle.command_type,
                **extra,
            )

    def _emit(self, key: str, **payload: Any) -> None:
        if self._bus.active:
            self._bus.emit(key, **payload)

    def _process_signals(self) -> None:
        for kind, lane_id, level, value in self._core.take_signals():
            if kind == "pressure":
                self._emit("queue.lane.pressure", lane_id=lane_id, pending=int(value))
            elif kind == "idle":
                self._emit("queue.lane.idle", lane_id=lane_id)
            else:
                threshold = alert_threshold(self._alert_config, kind, level)
                alert = Alert(lane_id, kind, level, value, threshold)
                self._emit(
                    "queue.alert",
                    lane_id=lane_id,
                    kind=kind,
                    level=level,
                    value=value,
                    threshold=threshold,
                    message=alert.message,
                )
                for callback in self._alert_callbacks:
                    outcome = callback(alert)
                    if inspect.iscoroutine(outcome):
                        self._spawn(outcome)
