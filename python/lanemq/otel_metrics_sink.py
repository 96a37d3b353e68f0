"""`lanemq.otel_metrics_sink`: a lane metrics sink that records OpenTelemetry
instruments. It lives in `lanemq.observability.otel_metrics_sink`; this path stays,
re-exporting its names, for the imports that name it."""

from __future__ import annotations

from .observability.otel_metrics_sink import OTelMetricsSink

__all__ = ["OTelMetricsSink"]
