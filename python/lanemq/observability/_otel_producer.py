"""`lanemq.otel`'s instrumentation: the tracer and instruments of one `instrument` call, and
the producer calls of `JobQueue` (``add``, ``add_bulk``, flows) in ``send`` spans."""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING

from opentelemetry import metrics, trace
from opentelemetry.context import Context
from opentelemetry.trace import Link, Span, SpanKind

from .._core import JobOptions, __version__
from ._otel_consumer import LaneTracing, WorkerTracing
from ._otel_spans import (
    _BATCH_COUNT,
    _JOB_NAME,
    _MESSAGE_ID,
    DURATION_BUCKETS,
    Attributes,
    _base,
    _carrying,
    _creation,
    _end,
    _ended,
    _link_to,
    _metric,
    _tracer,
)

if TYPE_CHECKING:
    from .._core import JobRecord, _AddedRow, _FlowNodeArgs
    from ..queue import JobQueue
    from ..worker import JobWorker


class Instrumentation:
    """The tracer and instruments of one `instrument` call, and what the producer calls of
    `JobQueue` hand their backend call to while it is active."""

    def __init__(
        self,
        tracer_provider: trace.TracerProvider | None,
        meter_provider: metrics.MeterProvider | None,
        lanes: bool,
        bulk_create_spans: bool,
    ) -> None:
        self.tracer = _tracer(tracer_provider)
        meter = metrics.get_meter("lanemq", __version__, meter_provider)
        self.sent = meter.create_counter(
            "messaging.client.sent.messages",
            unit="{message}",
            description="Number of messages producer attempted to send to the broker.",
        )
        self.consumed = meter.create_counter(
            "messaging.client.consumed.messages",
            unit="{message}",
            description="Number of messages that were delivered to the application.",
        )
        self.duration = meter.create_histogram(
            "messaging.process.duration",
            unit="s",
            description="Duration of processing operation.",
            explicit_bucket_boundaries_advisory=DURATION_BUCKETS,
        )
        self.lanes = LaneTracing(self.tracer) if lanes else None
        self.bulk_create_spans = bulk_create_spans
        #: The workers this instrumentation is installed on (taken out by `_switch`).
        self.workers: weakref.WeakSet[JobWorker] = weakref.WeakSet()

    # ------------------------------------------------------------------ producer

    async def add(
        self, queue: JobQueue, name: str, body: str, options: JobOptions | None, now: int
    ) -> JobRecord:
        span, options = self._send_span(queue.name, name, options, None)
        with self._counted_send(span, queue.name, 1):
            record = await queue._core.add(name, body, options, now)
            span.set_attribute(_MESSAGE_ID, record.id)
        return record

    async def add_bulk(
        self, queue: JobQueue, items: list[tuple[str, str, JobOptions | None]], now: int
    ) -> list[JobRecord]:
        destination = queue.name
        if not self.bulk_create_spans:
            span = self._start(
                f"send {destination}", SpanKind.PRODUCER, _base(destination, "send", "send")
            )
            span.set_attribute(_BATCH_COUNT, len(items))
            carried = [(n, b, _carrying(o, span)) for n, b, o in items]
            with self._counted_send(span, destination, len(items)):
                return await queue._core.add_bulk(carried, now)
        creates: list[Span | None] = []
        links: list[Link] = []
        traced: list[tuple[str, str, JobOptions | None]] = []
        for name, body, options in items:
            custom = None if options is None else options.telemetry
            if custom:
                _link_to(links, _creation(custom)[0])
                creates.append(None)
                traced.append((name, body, options))
                continue
            attributes = _base(destination, "create", "create")
            attributes[_JOB_NAME] = name
            create = self._start(f"create {destination}", SpanKind.PRODUCER, attributes)
            creates.append(create)
            _link_to(links, create.get_span_context())
            traced.append((name, body, _carrying(options, create)))
        attributes = _base(destination, "send", "send")
        attributes[_BATCH_COUNT] = len(items)
        send = self._start(f"send {destination}", SpanKind.CLIENT, attributes, links=links)
        try:
            with self._counted_send(send, destination, len(items)):
                records = await queue._core.add_bulk(traced, now)
        except BaseException as failed:
            for made in creates:
                if made is not None:
                    _end(made, failed)
            raise
        for made, record in zip(creates, records, strict=True):
            if made is not None:
                made.set_attribute(_MESSAGE_ID, record.id)
                made.end()
        return records

    async def add_flow(
        self, queue: JobQueue, args: _FlowNodeArgs, now: int | None
    ) -> list[_AddedRow]:
        spans: list[tuple[Span, str]] = []
        traced = self._flow_node(args, queue.name, None, spans)
        with self._flow_sent(spans) as done:
            rows = await queue._core.add_flow(traced, now)
            done(rows)
        return rows

    async def add_children(
        self, queue: JobQueue, job_id: str, token: str, args: list[_FlowNodeArgs], now: int | None
    ) -> list[_AddedRow]:
        spans: list[tuple[Span, str]] = []
        traced = [self._flow_node(node, queue.name, None, spans) for node in args]
        with self._flow_sent(spans) as done:
            rows = await queue._core.add_children(job_id, token, traced, now)
            done(rows)
        return rows

    async def attach_children(
        self, queue: JobQueue, job_id: str, args: list[_FlowNodeArgs], now: int | None
    ) -> list[_AddedRow]:
        """An add's ``parent``: ``queue`` holds the parent; each node names its own queue."""
        spans: list[tuple[Span, str]] = []
        traced = [self._flow_node(node, queue.name, None, spans) for node in args]
        with self._flow_sent(spans) as done:
            rows = await queue._core.attach_children(job_id, traced, now)
            done([row for row in rows if row[2] is None])
        return rows

    def _flow_node(
        self,
        node: _FlowNodeArgs,
        inherited: str,
        parent: Context | None,
        spans: list[tuple[Span, str]],
    ) -> _FlowNodeArgs:
        """A flow node (and its children) carrying the contexts of their ``send`` spans,
        started in preorder (as the backend returns the added nodes) into ``spans``."""
        queue_name, name, data, options, children = node
        destination = queue_name or inherited
        span, options = self._send_span(destination, name, options, parent)
        spans.append((span, destination))
        below = trace.set_span_in_context(span)
        return (
            queue_name,
            name,
            data,
            options,
            [self._flow_node(child, destination, below, spans) for child in children],
        )

    @contextmanager
    def _flow_sent(
        self, spans: list[tuple[Span, str]]
    ) -> Iterator[Callable[[list[_AddedRow]], None]]:
        """Ends the spans of a flow's nodes (with the call's error if it failed) and counts
        the nodes sent, per queue; what it yields records the added ids."""

        def done(rows: list[_AddedRow]) -> None:
            # An existing job (a custom id that exists, a dedup owner) comes back with all its
            # children, which the flow may not name: then the nodes and rows do not pair up.
            if len(rows) != len(spans):
                return
            for (span, _), (_, record, _) in zip(spans, rows, strict=True):
                span.set_attribute(_MESSAGE_ID, record.id)

        error: BaseException | None = None
        try:
            yield done
        except BaseException as failed:
            error = failed
            raise
        finally:
            for span, destination in spans:
                _end(span, error)
                self.sent.add(1, _metric(destination, "send", error))

    def _send_span(
        self, destination: str, name: str, options: JobOptions | None, parent: Context | None
    ) -> tuple[Span, JobOptions | None]:
        """The ``send`` span of one job, and the job's options carrying its context (unless
        they carry a creation context already: then the span is a CLIENT span linked to it)."""
        attributes = _base(destination, "send", "send")
        attributes[_JOB_NAME] = name
        custom = None if options is None else options.telemetry
        if custom:
            links: list[Link] = []
            _link_to(links, _creation(custom)[0])
            span = self._start(f"send {destination}", SpanKind.CLIENT, attributes, parent, links)
            return span, options
        span = self._start(f"send {destination}", SpanKind.PRODUCER, attributes, parent)
        return span, _carrying(options, span)

    def _counted_send(
        self, span: Span, destination: str, count: int
    ) -> AbstractContextManager[None]:
        """Ends ``span`` (recording the error, if any) and counts ``count`` messages sent."""

        def count_sent(error: BaseException | None) -> None:
            self.sent.add(count, _metric(destination, "send", error))

        return _ended(span, count_sent)

    def _start(
        self,
        name: str,
        kind: SpanKind,
        attributes: Attributes,
        parent: Context | None = None,
        links: Sequence[Link] = (),
    ) -> Span:
        return self.tracer.start_span(name, parent, kind, attributes, links)

    # -------------------------------------------------------------------- worker

    def attach(self, worker: JobWorker) -> None:
        """Installs the process middleware (outermost) and the traced outcome calls."""
        WorkerTracing(self, worker)
        self.workers.add(worker)
