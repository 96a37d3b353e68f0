"""Metrics and the worker registry."""

from __future__ import annotations

from collections.abc import Iterable

from .. import observe as _observe
from ..observe import QueueMetrics, WorkerInfo
from ._base import QueueBase


class QueueObserve(QueueBase):
    """The part of `JobQueue` for metrics and the workers it knows."""

    async def record_metrics(
        self, kind: str, counts: Iterable[tuple[int, int]], max_data_points: int
    ) -> None:
        """Adds per-minute counts to the ``kind`` metrics (``"completed"`` or ``"failed"``):
        ``counts`` are ``(minute_start_ms, n)`` pairs, each minute's start a multiple of 60,000
        ms since the epoch. What a `JobWorker` with ``metrics_max_data_points`` calls, at most
        once a second. The series keeps at most ``max_data_points`` minutes (1 to 100,000; the
        oldest go), a 0 for each minute without jobs between recorded ones (as BullMQ fills
        gaps). A count for a minute older than the newest adds into that minute while the
        series holds it, else only to the total. A bad kind, pair or maximum is refused
        (`ConfigError` naming it) and nothing is written."""
        await _observe.record_metrics(self._core, kind, counts, max_data_points)

    async def get_metrics(self, kind: str, start: int = 0, end: int = -1) -> QueueMetrics:
        """The ``kind`` metrics (``"completed"`` or ``"failed"``, BullMQ's ``getMetrics``):
        the total, the per-minute counts from index ``start`` to ``end`` inclusive (0 is the
        newest minute; negative indexes count from the oldest end, as ``LRANGE``), how many
        minutes are kept and the newest minute's start. Any other kind is a `ConfigError`."""
        return await _observe.get_metrics(self._core, kind, start, end)

    async def heartbeat_worker(
        self, info: WorkerInfo, ttl: float, *, now: int | None = None
    ) -> None:
        """Records that the worker ``info`` describes is alive at ``now`` (its
        ``last_heartbeat`` is then ``now``, whatever ``info`` says), for ``ttl`` seconds: a
        worker not heard from again within them is dropped by `get_workers`. Low level: every
        running `JobWorker` calls it (its ttl is 3 heartbeat intervals)."""
        await _observe.heartbeat_worker(self._core, self.name, info, ttl, now)

    async def remove_worker(self, worker_id: str) -> bool:
        """Removes worker ``worker_id`` from the registry (a `JobWorker` does at close);
        whether it was there."""
        return await self._core.remove_worker(worker_id)

    async def get_workers(self, *, now: int | None = None) -> list[WorkerInfo]:
        """The workers of this queue heard from within their ttl at ``now`` (default: the
        wall clock), by ``started_at`` then ``id``; entries older than their ttl are deleted."""
        return await _observe.get_workers(self._core, self.name, now)
