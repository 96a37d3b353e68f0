"""Where a `QueueManager` sends its lane metrics besides its own counters: the `LaneMetricsSink`
protocol and `InMemoryMetricsSink`, a plain Python one.

The manager always keeps its built-in per-lane counters and latency percentiles in the Rust core
(`QueueManager.metrics()`); that is the default and costs nothing more. Given
``QueueManager(..., metrics_sink=sink)``, it also calls the sink as each command moves:
``increment(lane, counter)`` with the counters of `COUNTERS` (the same ones `metrics()`
reports, counted at the same moments) and ``observe(lane, kind, seconds)`` with the kinds of
`KINDS`: ``latency`` (start to end of each attempt that ran to an outcome) and ``queue_wait``
(submit, or a retry's due time, to start). Calls come from the event loop's thread, one per
event, so a sink needs no lock of its own for them. A sink that raises does not break the
manager: the error is logged (once per sink) and the command goes on.

Other sinks: `lanemq.prometheus.PrometheusMetricsSink` (histograms with buckets) and
`lanemq.otel_metrics_sink.OTelMetricsSink` (OpenTelemetry meter instruments)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

#: The counters a manager sends, as `QueueManager.metrics()` names them.
COUNTERS = (
    "submitted",
    "started",
    "completed",
    "failed",
    "timed_out",
    "retried",
    "dead_lettered",
    "cancelled",
)
#: The durations a manager sends, in seconds.
KINDS = ("latency", "queue_wait")


@runtime_checkable
class LaneMetricsSink(Protocol):
    """What `QueueManager(metrics_sink=...)` calls."""

    def increment(self, lane: str, counter: str, n: int = 1) -> None:
        """Adds ``n`` to the lane's counter (one of `COUNTERS`)."""

    def observe(self, lane: str, kind: str, seconds: float) -> None:
        """Records one duration of the lane (``kind``: one of `KINDS`)."""

    def reset(self) -> None:
        """Starts over from zero (`QueueManager.reset_metrics` calls it)."""


@dataclass(slots=True)
class Observations:
    """What `InMemoryMetricsSink` keeps of one lane's durations of one kind."""

    count: int = 0
    total: float = 0.0
    max: float = 0.0

    def add(self, seconds: float) -> None:
        """Records one duration."""
        self.count += 1
        self.total += seconds
        if seconds > self.max:
            self.max = seconds


class InMemoryMetricsSink:
    """Counts in Python dicts: per lane, each counter, and the count, sum and maximum of each
    kind of duration. For tests, and as the smallest example of a sink."""

    def __init__(self) -> None:
        self.counters: dict[str, dict[str, int]] = {}
        self.observations: dict[str, dict[str, Observations]] = {}

    def increment(self, lane: str, counter: str, n: int = 1) -> None:
        """Adds ``n`` to the lane's counter (one of `COUNTERS`)."""
        counts = self.counters.setdefault(lane, {})
        counts[counter] = counts.get(counter, 0) + n

    def observe(self, lane: str, kind: str, seconds: float) -> None:
        """Records one duration of the lane (``kind``: one of `KINDS`)."""
        self.observations.setdefault(lane, {}).setdefault(kind, Observations()).add(seconds)

    def reset(self) -> None:
        """Forgets every count and duration."""
        self.counters.clear()
        self.observations.clear()

    def count(self, lane: str, counter: str) -> int:
        """The lane's counter (0 when never incremented)."""
        return self.counters.get(lane, {}).get(counter, 0)

    def observed(self, lane: str, kind: str) -> Observations:
        """The lane's durations of ``kind`` (all zero when none)."""
        return self.observations.get(lane, {}).get(kind, Observations())


__all__ = [
    "COUNTERS",
    "KINDS",
    "InMemoryMetricsSink",
    "LaneMetricsSink",
    "Observations",
]
