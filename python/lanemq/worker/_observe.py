"""What a running `JobWorker` writes for observation (`lanemq.observe`), from one chore of its
own beside renewals and stalled recovery, never from the calls that claim or finish jobs:

- its heartbeat: a `WorkerInfo` with a ttl of three intervals, the first as ``run()`` starts,
  then every ``heartbeat_interval``; it leaves the registry at close (not for `run_once` and
  `run_until_idle`, which record metrics only: a worker stepped by hand is not a member of
  the registry between its steps);
- with ``metrics_max_data_points``, its metrics: what the worker's ``processed`` and
  ``failed`` counters (`WorkerBook`) grew by, recorded per minute at most once a second. The
  chore wakes on whole seconds of the wall clock, and what it takes goes to the minute of the
  middle of the time since the last take: a minute's jobs land in that minute, give or take
  the second around its boundary. Counts that could not be recorded (the backend away) wait,
  by minute, for the next wake-up; the last are recorded at close, before the worker leaves
  the registry.

A failing heartbeat or record is logged and passed to the ``error`` hooks, like the other
chores' failures (`JobWorker._run_chore`): it never stops the worker."""

from __future__ import annotations

import asyncio
import math
import os
import socket
import time
from typing import TYPE_CHECKING

from .._core import __version__
from ..exceptions import ConfigError
from ..observability.observe import MAX_DATA_POINTS, WorkerInfo, minute_of

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from ._worker import JobWorker

#: The shortest heartbeat interval: nothing polls a backend more often than once a second.
MIN_HEARTBEAT_INTERVAL = 1.0
#: A worker not heard from for this many heartbeat intervals is dropped from the registry.
TTL_INTERVALS = 3


def check_observe(heartbeat_interval: object, metrics_max_data_points: object) -> None:
    """Raises `ConfigError` naming the value unless the interval is a number of seconds >= 1
    and the maximum None or an integer from 1 to `MAX_DATA_POINTS`."""
    interval = heartbeat_interval
    if (
        isinstance(interval, bool)
        or not isinstance(interval, int | float)
        or not interval >= MIN_HEARTBEAT_INTERVAL
        or interval == float("inf")
    ):
        raise ConfigError(
            f"invalid heartbeat_interval: {interval!r} (must be >= {MIN_HEARTBEAT_INTERVAL}"
            " seconds)"
        )
    points = metrics_max_data_points
    if points is not None and not _whole_between(points, 1, MAX_DATA_POINTS):
        raise ConfigError(
            f"invalid metrics_max_data_points: {points!r} (must be None or an integer from 1"
            f" to {MAX_DATA_POINTS})"
        )


def _whole_between(value: object, low: int, high: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def _now_ms() -> int:
    return int(time.time() * 1000)


def _next_second(now: float) -> float:
    """The next whole second of the wall clock at least half a second after ``now`` (a timer
    may fire a little early: the second it was set for is then skipped, not run twice)."""
    return float(math.floor(now + 0.5) + 1)


class WorkerObserver:
    """The heartbeat and metrics of one ``run()`` of ``worker``; without ``heartbeats``, the
    metrics of one `run_once` / `run_until_idle`."""

    def __init__(self, worker: JobWorker, heartbeats: bool = True) -> None:
        self.worker = worker
        self.heartbeats = heartbeats
        self.started_at = _now_ms()
        book = worker._book
        # The counters as last taken (jobs finished before this run are not recorded), and
        # when: the jobs counted since then finished in that minute.
        self._taken = (book.processed, book.failed)
        self._since = self.started_at
        # Counts taken but not recorded yet: (kind, minute) -> n.
        self._pending: dict[tuple[str, int], int] = {}
        self._next_heartbeat = 0.0 if heartbeats else math.inf

    async def run(self, stopped: asyncio.Event) -> None:
        """Heartbeats at once, then wakes for heartbeats and (metrics on) every whole second,
        until ``stopped``."""
        worker = self.worker
        metrics = worker.metrics_max_data_points is not None
        if not (metrics or self.heartbeats):
            return
        if self.heartbeats:
            await self._safely(self._heartbeat)
        while True:
            now = time.time()
            wake = self._next_heartbeat
            if metrics:
                wake = min(wake, _next_second(now))
            try:
                await asyncio.wait_for(stopped.wait(), max(wake - now, 0.0))
                return
            except asyncio.TimeoutError:
                pass
            if metrics:
                await self._safely(self._record)
            if time.time() >= self._next_heartbeat:
                await self._safely(self._heartbeat)

    async def finish(self) -> None:
        """At close: the last metrics, then out of the registry."""
        if self.worker.metrics_max_data_points is not None:
            await self._safely(self._record)
        if self.heartbeats:
            await self._safely(self._leave)

    async def _safely(self, chore: Callable[[], Awaitable[None]]) -> None:
        await self.worker._run_chore(chore)

    def info(self, now: int) -> WorkerInfo:
        worker = self.worker
        book = worker._book
        return WorkerInfo(
            id=worker.id,
            queue=worker.queue.name,
            host=socket.gethostname(),
            pid=os.getpid(),
            concurrency=worker.concurrency,
            version=__version__,
            started_at=self.started_at,
            last_heartbeat=now,
            processed=book.processed,
            failed=book.failed,
            running=book.running,
        )

    async def _heartbeat(self) -> None:
        interval = self.worker.heartbeat_interval
        self._next_heartbeat = time.time() + interval
        now = _now_ms()
        await self.worker.queue.heartbeat_worker(self.info(now), TTL_INTERVALS * interval, now=now)

    def _take(self) -> None:
        """Moves what the counters grew by since they were last taken into `_pending`, under
        the minute of the middle of that time: wake-ups a second apart on whole seconds put
        each second in its own minute, whether a timer fired a little early or late."""
        book = self.worker._book
        taken = (book.processed, book.failed)
        now = _now_ms()
        minute = minute_of((self._since + now) // 2)
        for kind, count, before in zip(("completed", "failed"), taken, self._taken, strict=True):
            if count > before:
                key = (kind, minute)
                self._pending[key] = self._pending.get(key, 0) + count - before
        self._taken = taken
        self._since = now

    async def _record(self) -> None:
        self._take()
        if not self._pending:
            return
        pending, self._pending = self._pending, {}
        points = self.worker.metrics_max_data_points
        assert points is not None
        queue = self.worker.queue
        kinds = sorted({kind for kind, _ in pending})
        calls = [
            queue.record_metrics(
                kind, [(m, n) for (k, m), n in pending.items() if k == kind], points
            )
            for kind in kinds
        ]
        outcomes = await asyncio.gather(*calls, return_exceptions=True)
        failure: BaseException | None = None
        for kind, outcome in zip(kinds, outcomes, strict=True):
            if isinstance(outcome, BaseException):
                # Recorded at the next wake-up (a record writes all of its counts or none).
                for (k, minute), n in pending.items():
                    if k == kind:
                        self._pending[(k, minute)] = self._pending.get((k, minute), 0) + n
                failure = failure or outcome
        if failure is not None:
            raise failure

    async def _leave(self) -> None:
        await self.worker.queue.remove_worker(self.worker.id)
