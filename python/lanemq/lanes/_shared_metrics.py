"""`MetricsRecorder`: the `QueueManager.metrics()` of lanes shared by processes. The Rust
dispatcher counts in-process lanes as it dispatches; shared lanes are dispatched by their store,
so this process counts what it saw happen (its submits; the commands it ran) through the same
`MetricsFeed` moments a ``metrics_sink`` receives, in the shape the Rust dispatcher reports."""

from __future__ import annotations

from collections import deque
from typing import Any

from ..observability.metrics_sink import COUNTERS, KINDS, LaneMetricsSink

SAMPLES = 4096  # the latest samples per lane and kind, as the Rust dispatcher keeps


def _percentiles(samples: deque[float]) -> dict[str, float]:
    ordered = sorted(samples)
    count = len(ordered)
    if not count:
        return {"count": 0, "p50": 0.0, "p90": 0.0, "p95": 0.0, "p99": 0.0}

    def at(q: float) -> float:
        return ordered[min(count - 1, int(q * count))]

    return {"count": count, "p50": at(0.5), "p90": at(0.9), "p95": at(0.95), "p99": at(0.99)}


class MetricsRecorder:
    """A `LaneMetricsSink` that keeps what `metrics()` reports, and passes every moment on to
    the user's sink, if any."""

    def __init__(self, lane_ids: list[str], forward: LaneMetricsSink | None) -> None:
        self._lane_ids = lane_ids
        self._forward = forward
        self._counts: dict[str, dict[str, int]] = {}
        self._samples: dict[str, dict[str, deque[float]]] = {}
        self.reset_own()

    def reset_own(self) -> None:
        self._counts = {lane: dict.fromkeys(COUNTERS, 0) for lane in self._lane_ids}
        self._samples = {
            lane: {kind: deque(maxlen=SAMPLES) for kind in KINDS} for lane in self._lane_ids
        }

    def increment(self, lane: str, counter: str, n: int = 1) -> None:
        self._counts[lane][counter] += n
        if self._forward is not None:
            self._forward.increment(lane, counter, n)

    def observe(self, lane: str, kind: str, seconds: float) -> None:
        self._samples[lane][kind].append(seconds)
        if self._forward is not None:
            self._forward.observe(lane, kind, seconds)

    def reset(self) -> None:
        self.reset_own()
        if self._forward is not None:
            self._forward.reset()

    def metrics(self) -> dict[str, dict[str, Any]]:
        report: dict[str, dict[str, Any]] = {}
        for lane in self._lane_ids:
            entry: dict[str, Any] = dict(self._counts[lane])
            for kind in KINDS:
                entry[kind] = _percentiles(self._samples[lane][kind])
            report[lane] = entry
        return report
