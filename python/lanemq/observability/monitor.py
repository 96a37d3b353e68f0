"""Background monitors that poll and alert: `LaneMonitor` over a `QueueManager`'s lanes,
`QueueMonitor` over job queues.

Each reads its source every ``interval`` seconds (at least 1; the first read as it starts),
keeps the reading with its totals (`last`), and calls ``on_alert`` with a `MonitorAlert` when
a value reaches its threshold, and once more (``resolved=True``) when it falls back below:
one alert per crossing, not one per poll. Thresholds are per lane or queue (``pending_warning``)
and over all of them together (``total_pending_warning``); None leaves a value unwatched.

A `QueueManager`'s own `AlertConfig` (`QueueManager.on_alert`) reacts at once, inside the
scheduler, to one lane's depth or one command's latency; a monitor polls instead, so it can
also watch running commands, totals, and job queues, whose counts live in a backend."""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from ..exceptions import ConfigError
from ..lanes import QueueManager
from ..queue import JobQueue

log = logging.getLogger("lanemq.monitor")

#: The `MonitorAlert.source` of an alert on a total.
TOTAL = "*"


@dataclass(frozen=True, slots=True)
class MonitorAlert:
    """A threshold reached (or, with ``resolved``, left again): ``source`` is the lane id or
    queue name (`TOTAL` for the sum over all of them), ``kind`` the value watched
    (``pending`` / ``active`` for lanes, ``waiting`` / ``active`` for queues), ``value`` what
    was read and ``message`` says it all in words."""

    source: str
    kind: str
    value: int
    threshold: int
    message: str
    resolved: bool = False


@dataclass(frozen=True, slots=True)
class MonitorReading:
    """One poll: per lane or queue, the values watched (``values[source][kind]``); their
    ``totals``; and when it was read (``at``, seconds since the Unix epoch)."""

    values: dict[str, dict[str, int]]
    totals: dict[str, int]
    at: float


AlertCallback = Callable[[MonitorAlert], Any]
Reader = Callable[[], Awaitable[dict[str, dict[str, int]]]]
M = TypeVar("M", bound="_Monitor")


def _thresholds(prefix: str, given: Mapping[str, object]) -> dict[str, int]:
    """The thresholds set (not None) of ``given`` (kind -> value), checked; a bad one raises
    `ConfigError` naming its keyword, ``{prefix}{kind}_warning``."""
    checked: dict[str, int] = {}
    for kind, value in given.items():
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(
                f"invalid {prefix}{kind}_warning: {value!r} (must be an int >= 1, or None)"
            )
        checked[kind] = value
    return checked


class _Monitor:
    """The polling, the crossing logic and the alert delivery; ``read`` (each subclass's)
    gives the values per source."""

    #: How `message` names a source ("lane", "queue") and its units ("commands", "jobs").
    _noun = ""
    _units = ""

    def __init__(
        self,
        read: Reader,
        interval: float,
        thresholds: Mapping[str, object],
        total_thresholds: Mapping[str, object],
        on_alert: AlertCallback | None,
    ) -> None:
        if not (isinstance(interval, (int, float)) and 1.0 <= interval < 1e9):
            raise ConfigError(f"invalid interval: {interval!r} (must be >= 1 second)")
        if on_alert is not None and not callable(on_alert):
            raise TypeError(f"on_alert must be callable, got {on_alert!r}")
        self.interval = float(interval)
        self._read = read
        self._thresholds = _thresholds("", thresholds)
        self._total_thresholds = _thresholds("total_", total_thresholds)
        self._callbacks: list[AlertCallback] = [] if on_alert is None else [on_alert]
        self._raised: set[tuple[str, str]] = set()
        self._last: MonitorReading | None = None
        self._task: asyncio.Task[None] | None = None

    def on_alert(self, callback: AlertCallback) -> None:
        """Also calls ``callback(alert)`` (a plain or an async function) on each alert."""
        if not callable(callback):
            raise TypeError(f"on_alert callback must be callable, got {callback!r}")
        self._callbacks.append(callback)

    @property
    def last(self) -> MonitorReading | None:
        """The latest reading (None before the first)."""
        return self._last

    @property
    def running(self) -> bool:
        """Whether the monitor's polling task runs (between `start` and `stop`)."""
        return self._task is not None and not self._task.done()

    async def check(self) -> list[MonitorAlert]:
        """Reads now, delivers the alerts this reading raises (or resolves), returns them."""
        values = await self._read()
        totals: dict[str, int] = {}
        for entry in values.values():
            for kind, value in entry.items():
                totals[kind] = totals.get(kind, 0) + value
        self._last = MonitorReading(values, totals, time.time())
        alerts: list[MonitorAlert] = []
        for source, entry in values.items():
            for kind, threshold in self._thresholds.items():
                alerts += self._crossing(source, kind, entry.get(kind, 0), threshold)
        for kind, threshold in self._total_thresholds.items():
            alerts += self._crossing(TOTAL, kind, totals.get(kind, 0), threshold)
        for alert in alerts:
            await self._deliver(alert)
        return alerts

    def _crossing(self, source: str, kind: str, value: int, threshold: int) -> list[MonitorAlert]:
        key = (source, kind)
        where = f"all {self._noun}s" if source == TOTAL else f"{self._noun} {source!r}"
        if value >= threshold and key not in self._raised:
            self._raised.add(key)
            message = f"{where}: {value} {self._units} {kind} (warning at {threshold})"
            return [MonitorAlert(source, kind, value, threshold, message)]
        if value < threshold and key in self._raised:
            self._raised.discard(key)
            message = f"{where}: {value} {self._units} {kind}, back below {threshold}"
            return [MonitorAlert(source, kind, value, threshold, message, resolved=True)]
        return []

    async def _deliver(self, alert: MonitorAlert) -> None:
        (log.info if alert.resolved else log.warning)("%s", alert.message)
        for callback in self._callbacks:
            try:
                outcome = callback(alert)
                if inspect.isawaitable(outcome):
                    await outcome
            except Exception:
                log.exception("monitor alert callback %r raised", callback)

    async def start(self) -> None:
        """Starts polling on the running loop (the first read at once)."""
        if not self.running:
            self._task = asyncio.get_running_loop().create_task(self._poll())

    async def _poll(self) -> None:
        while True:
            try:
                await self.check()
            except Exception:
                log.exception("%s monitor: the check failed", self._noun)
            await asyncio.sleep(self.interval)

    async def stop(self) -> None:
        """Stops polling (a check in progress is cancelled)."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    async def __aenter__(self: M) -> M:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()


class LaneMonitor(_Monitor):
    """Polls ``manager.stats()``: per lane (and in total) the ``pending`` commands and the
    ``active`` (running) ones, alerting at ``pending_warning`` / ``active_warning`` per lane
    and ``total_pending_warning`` / ``total_active_warning`` over all lanes."""

    _noun = "lane"
    _units = "commands"

    def __init__(
        self,
        manager: QueueManager,
        interval: float = 5.0,
        *,
        pending_warning: int | None = None,
        active_warning: int | None = None,
        total_pending_warning: int | None = None,
        total_active_warning: int | None = None,
        on_alert: AlertCallback | None = None,
    ) -> None:
        if not isinstance(manager, QueueManager):
            raise TypeError(f"not a QueueManager: {manager!r}")
        self.manager = manager
        super().__init__(
            self._read_lanes,
            interval,
            {"pending": pending_warning, "active": active_warning},
            {"pending": total_pending_warning, "active": total_active_warning},
            on_alert,
        )

    async def _read_lanes(self) -> dict[str, dict[str, int]]:
        return {
            lane: {"pending": entry["pending"], "active": entry["active"]}
            for lane, entry in self.manager.stats().items()
        }


class QueueMonitor(_Monitor):
    """Polls job queues' counts: per queue (and in total) the ``waiting`` and ``active``
    jobs, alerting at ``waiting_warning`` / ``active_warning`` per queue and
    ``total_waiting_warning`` / ``total_active_warning`` over all of them. A queue whose read
    fails is left out of that reading (and logged, once until it reads again)."""

    _noun = "queue"
    _units = "jobs"

    def __init__(
        self,
        queues: JobQueue | Iterable[JobQueue],
        interval: float = 5.0,
        *,
        waiting_warning: int | None = None,
        active_warning: int | None = None,
        total_waiting_warning: int | None = None,
        total_active_warning: int | None = None,
        on_alert: AlertCallback | None = None,
    ) -> None:
        listed = [queues] if isinstance(queues, JobQueue) else list(queues)
        self.queues: dict[str, JobQueue] = {}
        for queue in listed:
            if not isinstance(queue, JobQueue):
                raise TypeError(f"not a JobQueue: {queue!r}")
            if queue.name in self.queues and self.queues[queue.name] is not queue:
                raise ConfigError(f"two queues named {queue.name!r}: names must differ")
            self.queues[queue.name] = queue
        if not self.queues:
            raise ConfigError("QueueMonitor needs at least one queue")
        self._down: set[str] = set()
        super().__init__(
            self._read_queues,
            interval,
            {"waiting": waiting_warning, "active": active_warning},
            {"waiting": total_waiting_warning, "active": total_active_warning},
            on_alert,
        )

    async def _read_queues(self) -> dict[str, dict[str, int]]:
        names = list(self.queues)
        counts = await asyncio.gather(
            *(self.queues[name].get_job_counts("waiting", "active") for name in names),
            return_exceptions=True,
        )
        values: dict[str, dict[str, int]] = {}
        for name, read in zip(names, counts, strict=True):
            if isinstance(read, BaseException):
                if not isinstance(read, Exception):
                    raise read  # (cancellation: the monitor is stopping)
                if name not in self._down:
                    self._down.add(name)
                    log.warning("queue monitor: cannot read queue %r: %r", name, read)
                continue
            self._down.discard(name)
            values[name] = read
        return values


__all__ = ["TOTAL", "LaneMonitor", "MonitorAlert", "MonitorReading", "QueueMonitor"]
