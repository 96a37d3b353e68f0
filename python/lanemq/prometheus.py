"""`lanemq.prometheus`: Prometheus metrics for job queues, workers and lane
managers. It lives in `lanemq.observability.prometheus`; this path stays,
re-exporting its names, for the imports that name it."""

from __future__ import annotations

from .observability.prometheus import (
    DEFAULT_BUCKETS,
    JOB_STATES,
    LanemqCollector,
    MetricsServer,
    PrometheusMetricsSink,
    start_metrics_server,
)

__all__ = [
    "DEFAULT_BUCKETS",
    "JOB_STATES",
    "LanemqCollector",
    "MetricsServer",
    "PrometheusMetricsSink",
    "start_metrics_server",
]
