"""An OpenTelemetry SDK of a test's own for lanemq.otel: a tracer provider with an in-memory
exporter and a meter provider with an in-memory reader, instrumented explicitly (the global
providers stay unset, so tests do not depend on each other)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from lanemq import otel
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


@dataclass
class Sdk:
    tracer_provider: TracerProvider
    exporter: InMemorySpanExporter
    reader: InMemoryMetricReader

    def spans(self, name: str | None = None) -> list[ReadableSpan]:
        """The finished spans (called ``name``), in the order they ended."""
        found = self.exporter.get_finished_spans()
        return [s for s in found if name is None or s.name == name]

    def span(self, name: str) -> ReadableSpan:
        found = self.spans(name)
        assert len(found) == 1, [s.name for s in self.spans()]
        return found[0]

    def metric(self, name: str) -> dict[frozenset[tuple[str, Any]], Any]:
        """The points of metric ``name`` by their attributes: a counter's value, or a
        histogram's count."""
        points: dict[frozenset[tuple[str, Any]], Any] = {}
        data = self.reader.get_metrics_data()
        for resource in data.resource_metrics if data else ():
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    if metric.name != name:
                        continue
                    for point in metric.data.data_points:
                        key = frozenset((point.attributes or {}).items())
                        is_histogram = isinstance(point, HistogramDataPoint)
                        points[key] = point.count if is_histogram else point.value
        return points


def ids(span: ReadableSpan) -> tuple[int, int]:
    """A span's (trace id, span id)."""
    assert span.context is not None
    return span.context.trace_id, span.context.span_id


def parent_ids(span: ReadableSpan) -> tuple[int, int] | None:
    return None if span.parent is None else (span.parent.trace_id, span.parent.span_id)


def link_ids(span: ReadableSpan) -> list[tuple[int, int]]:
    return [(link.context.trace_id, link.context.span_id) for link in span.links]


@contextmanager
def instrumented(**options: Any) -> Iterator[Sdk]:
    """An SDK of its own, instrumented with ``options`` (`lanemq.otel.instrument`'s) while the
    block runs."""
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    otel.instrument(tracer_provider, meter_provider, **options)
    try:
        yield Sdk(tracer_provider, exporter, reader)
    finally:
        otel.uninstrument()
        tracer_provider.shutdown()
        meter_provider.shutdown()


@pytest.fixture
def sdk() -> Iterator[Sdk]:
    with instrumented() as made:
        yield made
