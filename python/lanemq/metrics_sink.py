"""`lanemq.metrics_sink`: the lane metrics sink protocol and its in-memory
sink. It lives in `lanemq.observability.metrics_sink`; this path stays,
re-exporting its names, for the imports that name it."""

from __future__ import annotations

from .observability.metrics_sink import (
    COUNTERS,
    KINDS,
    InMemoryMetricsSink,
    LaneMetricsSink,
    Observations,
)

__all__ = ["COUNTERS", "KINDS", "InMemoryMetricsSink", "LaneMetricsSink", "Observations"]
