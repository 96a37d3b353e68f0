"""`lanemq.observe`: what workers and queues record for observation: the worker registry and
per-minute metrics. It lives in `lanemq.observability.observe`; this path stays, re-exporting
its names, for the imports that name it."""

from __future__ import annotations

# The names beyond `__all__` are for the job queues, which call the registry and metrics
# functions through this path.
from .observability.observe import MAX_DATA_POINTS as MAX_DATA_POINTS
from .observability.observe import METRICS_KINDS as METRICS_KINDS
from .observability.observe import MINUTE_MS as MINUTE_MS
from .observability.observe import MetricsTime, QueueMetrics, WorkerInfo
from .observability.observe import check_kind as check_kind
from .observability.observe import get_metrics as get_metrics
from .observability.observe import get_workers as get_workers
from .observability.observe import heartbeat_worker as heartbeat_worker
from .observability.observe import minute_of as minute_of
from .observability.observe import record_metrics as record_metrics

__all__ = ["MetricsTime", "QueueMetrics", "WorkerInfo"]
