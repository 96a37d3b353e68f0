"""`lanemq.otel`: OpenTelemetry tracing and metrics. It lives in `lanemq.observability.otel`;
this path stays, re-exporting its names, for the imports that name it."""

from __future__ import annotations

# The names beyond `__all__` are for `lanemq._tracing`, which reaches the instrumentation
# through this path.
from .observability.otel import DURATION_BUCKETS as DURATION_BUCKETS
from .observability.otel import MAX_UNSETTLED_LINKS as MAX_UNSETTLED_LINKS
from .observability.otel import SYSTEM as SYSTEM
from .observability.otel import Instrumentation as Instrumentation
from .observability.otel import LaneTracing as LaneTracing
from .observability.otel import TracedOutcomes as TracedOutcomes
from .observability.otel import WorkerTracing as WorkerTracing
from .observability.otel import auto_instrument as auto_instrument
from .observability.otel import instrument, is_instrumented, uninstrument
from .observability.otel import lane_tracing as lane_tracing

__all__ = ["instrument", "is_instrumented", "uninstrument"]
