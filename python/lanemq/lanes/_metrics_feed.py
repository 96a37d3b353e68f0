"""`MetricsFeed`: what a `QueueManager` given a ``metrics_sink`` calls as each command moves,
turning those moments into the sink's counters and durations. A manager without a sink has no
feed and pays nothing for it.

The moments and what is counted mirror the Rust dispatcher's own metrics
(crates/lanemq-core/src/lanes/dispatcher.rs), so a sink sees what `QueueManager.metrics()`
counts: ``queue_wait`` runs from the submit (or the retry's due time) to the start, ``latency``
from the start to the end of an attempt that completed or failed (not of one cancelled)."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from ..observability.metrics_sink import LaneMetricsSink

if TYPE_CHECKING:
    from ._handle import CommandHandle

log = logging.getLogger("lanemq.lanes")


class MetricsFeed:
    __slots__ = ("_broken", "_lane_ids", "_ready", "_started", "sink")

    def __init__(self, sink: LaneMetricsSink, lane_ids: list[str]) -> None:
        for method in ("increment", "observe", "reset"):
            if not callable(getattr(sink, method, None)):
                raise TypeError(
                    f"metrics_sink must have increment(), observe() and reset() "
                    f"(LaneMetricsSink), got {sink!r}"
                )
        self.sink = sink
        self._lane_ids = lane_ids
        # When each command became ready to start (submit, or a retry's due time), and when
        # the running ones started: perf_counter() seconds, by command id.
        self._ready: dict[int, float] = {}
        self._started: dict[int, float] = {}
        self._broken = False

    def submitted(self, handle: CommandHandle[Any]) -> None:
        self._ready[handle.id] = time.perf_counter()
        self._send(handle.lane, ("submitted",))

    def started(self, handle: CommandHandle[Any]) -> None:
        now = time.perf_counter()
        ready = self._ready.pop(handle.id, now)
        self._started[handle.id] = now
        self._send(handle.lane, ("started",), ("queue_wait", max(0.0, now - ready)))

    def completed(self, handle: CommandHandle[Any]) -> None:
        now = time.perf_counter()
        started = self._started.pop(handle.id, now)
        self._send(handle.lane, ("completed",), ("latency", now - started))

    def failed(
        self, handle: CommandHandle[Any], timed_out: bool, retry_delay: float | None
    ) -> None:
        now = time.perf_counter()
        started = self._started.pop(handle.id, now)
        counters: tuple[str, ...] = ("timed_out",) if timed_out else ()
        if retry_delay is None:
            counters += ("failed", "dead_lettered")
        else:
            counters += ("retried",)
            self._ready[handle.id] = now + retry_delay
        self._send(handle.lane, counters, ("latency", now - started))

    def cancelled(self, handle: CommandHandle[Any]) -> None:
        self._ready.pop(handle.id, None)
        self._started.pop(handle.id, None)
        self._send(handle.lane, ("cancelled",))

    def _send(
        self, lane: int, counters: tuple[str, ...], duration: tuple[str, float] | None = None
    ) -> None:
        lane_id = self._lane_ids[lane]
        sink = self.sink
        try:
            for counter in counters:
                sink.increment(lane_id, counter)
            if duration is not None:
                sink.observe(lane_id, *duration)
        except Exception:
            # A broken sink must not break the commands: say so once, then stay quiet.
            if not self._broken:
                self._broken = True
                log.exception("metrics sink %r raised (further errors are not logged)", sink)
