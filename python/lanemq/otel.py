"""OpenTelemetry tracing and metrics for lanemq, after the OpenTelemetry messaging semantic
conventions (the ``otel`` extra: ``pip install 'lanemq[otel]'``, which brings
opentelemetry-api; an SDK, exporters and their set-up are the application's).

Activation: automatic once a real global tracer provider is set, before or after lanemq is
imported (see `lanemq._tracing` for when lanemq looks), or explicit with `instrument` (any
provider, or the global one) and `uninstrument`. While it is off a queue's ``add`` costs one
``is None`` check, or while a provider may still be set one look at the API's global, and a
worker nothing per job.

Spans (all with ``messaging.system`` ``"lanemq"`` and ``messaging.destination.name``, the
queue's name; ``messaging.operation.name`` is the first word of the span name and
``messaging.operation.type`` the conventions' type):

- ``send <queue>``, PRODUCER, for `JobQueue.add` and for each node of `JobQueue.add_flow` and
  `Job.add_children` (a node's span is the child of its parent node's, so a flow is one trace).
  Its context is the job's creation context: injected with the global propagator into the
  job's ``telemetry`` option (job metadata, never its data), so it crosses processes and
  backends. A job whose options already carry telemetry keeps it; its ``send`` span is then a
  CLIENT span that links to that context. Attributes: ``messaging.message.id`` (the job id),
  ``messaging.lanemq.job.name``.
- `JobQueue.add_bulk`: a ``create <queue>`` PRODUCER span per job (its creation context) and
  one ``send <queue>`` CLIENT span for the call with ``messaging.batch.message_count`` and a
  link to each creation context (the conventions' batch sending). ``instrument(
  bulk_create_spans=False)`` makes the one ``send`` span a PRODUCER span whose context every
  job of the call carries instead.
- ``process <queue>``, CONSUMER, around each processor run (outermost worker middleware, so
  the processor and its middleware see it as the current span): a link to the job's creation
  context, always, and that context as its parent when no other span is current (so producer
  and consumer share a trace); attributes ``messaging.message.id``,
  ``messaging.lanemq.job.name``, ``messaging.lanemq.job.attempt`` (1 for the first attempt),
  ``messaging.client.id`` (the worker's id). A processor that raises sets ``error.type`` (the
  exception's class name) and the ERROR status; `DelayedError` and `RateLimitError` move the
  job on and are not errors.
- ``settle <queue>``, CLIENT, around each batch the worker reports (``complete_many``,
  ``complete_and_claim``, ``fail_many``): one span per backend call, as the worker settles in
  batches, with ``messaging.batch.message_count``, ``messaging.lanemq.settle.outcome``
  (``completed`` or ``failed``), ``messaging.lanemq.settle.refused`` (outcomes the backend
  refused: lease lost) and a link to the ``process`` span of each job it settles.
- Lanes (opt-in: ``QueueManager(tracing=True)`` or ``instrument(lanes=True)``): a ``lane
  <lane id>`` INTERNAL span around each attempt of a command, the child of the context that
  submitted it, with ``lanemq.lane.id``, ``lanemq.lane.command.id``, ``.type`` and
  ``.attempt``.

Metrics (the conventions' attributes: ``messaging.system``, ``messaging.destination.name``,
``messaging.operation.name``, ``error.type`` on failure): ``messaging.client.sent.messages``
(counter, ``{message}``, per job added), ``messaging.client.consumed.messages`` (counter,
``{message}``, per processor run) and ``messaging.process.duration`` (histogram, seconds,
the conventions' bucket advice)."""

from __future__ import annotations

import functools
import time
import weakref
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any

try:
    from opentelemetry import context as otel_context
    from opentelemetry import metrics, propagate, trace
except ImportError as missing:  # pragma: no cover - the extra is not installed
    raise ImportError(
        "lanemq.otel needs opentelemetry-api: pip install 'lanemq[otel]'"
    ) from missing

from opentelemetry.context import Context
from opentelemetry.trace import Link, Span, SpanContext, SpanKind, Status, StatusCode
from opentelemetry.util.types import AttributeValue

from . import _tracing
from ._core import JobOptions, __version__
from .exceptions import DelayedError, RateLimitError

if TYPE_CHECKING:
    from ._core import JobRecord, _AddedRow, _FlowNodeArgs
    from .job import Job
    from .lanes import CommandHandle
    from .queue import JobQueue
    from .worker import JobWorker

__all__ = ["instrument", "is_instrumented", "uninstrument"]

SYSTEM = "lanemq"
#: ``messaging.process.duration``'s bucket boundaries (seconds), as the conventions advise.
DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10)
#: The process-span contexts a worker keeps for the links of its settle spans: a job that is
#: never reported (moved to delayed, parked for its children) must not keep one for ever.
MAX_UNSETTLED_LINKS = 65_536

_SYSTEM = "messaging.system"
_DESTINATION = "messaging.destination.name"
_OPERATION = "messaging.operation.name"
_OPERATION_TYPE = "messaging.operation.type"
_MESSAGE_ID = "messaging.message.id"
_BATCH_COUNT = "messaging.batch.message_count"
_CLIENT_ID = "messaging.client.id"
_ERROR_TYPE = "error.type"
_JOB_NAME = "messaging.lanemq.job.name"
_ATTEMPT = "messaging.lanemq.job.attempt"

Attributes = dict[str, AttributeValue]


def instrument(
    tracer_provider: trace.TracerProvider | None = None,
    meter_provider: metrics.MeterProvider | None = None,
    *,
    lanes: bool = False,
    bulk_create_spans: bool = True,
) -> None:
    """Turns lanemq's spans and metrics on, with these providers (None: the global ones, also
    when they are set later). Replaces an earlier instrumentation; running workers switch at
    once. ``lanes``: also a span per lane command of the `QueueManager` objects made from now
    on (their ``tracing=None``). ``bulk_create_spans``: a ``create`` span per job of
    `JobQueue.add_bulk` (the conventions' advice); False: the call's ``send`` span only."""
    _switch(Instrumentation(tracer_provider, meter_provider, lanes, bulk_create_spans))


def uninstrument() -> None:
    """Turns lanemq's spans and metrics off (running workers at once), and automatic
    activation with them, until `instrument` is called."""
    _switch(None)


def is_instrumented() -> bool:
    """Whether lanemq traces now (explicitly, or automatically)."""
    return _tracing.refresh() is not None


def auto_instrument() -> None:
    """The automatic activation (`lanemq._tracing.refresh`): the global providers."""
    _tracing.active = Instrumentation(None, None, lanes=False, bulk_create_spans=True)


def lane_tracing() -> LaneTracing:
    """For ``QueueManager(tracing=True)``: the active instrumentation's tracer, or the global
    provider's."""
    active = _tracing.refresh()
    return LaneTracing(active.tracer if active is not None else _tracer(None))


def _switch(instrumentation: Instrumentation | None) -> None:
    previous = _tracing.active
    _tracing.active = instrumentation
    _tracing.explicit = True
    if not isinstance(previous, Instrumentation):
        return
    for worker in list(previous.workers):
        installed = worker._traced_by
        if installed is not None:
            installed.detach()
        if instrumentation is not None and worker._running is not None:
            instrumentation.attach(worker)


def _tracer(provider: trace.TracerProvider | None) -> trace.Tracer:
    return trace.get_tracer("lanemq", __version__, provider)


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


class WorkerTracing:
    """What an instrumentation installed on one worker: the ``process`` middleware and the
    outcome calls that wrap each reported batch in a ``settle`` span."""

    def __init__(self, instrumentation: Instrumentation, worker: JobWorker) -> None:
        self.instrumentation = instrumentation
        self.worker = worker
        destination = worker.queue.name
        self.destination = destination
        self.process_name = f"process {destination}"
        self.settle_name = f"settle {destination}"
        self.metric_attributes = _metric(destination, "process", None)
        #: The contexts of the process spans of jobs not reported yet, by job id.
        self.unsettled: dict[str, SpanContext] = {}
        worker._middleware.insert(0, self.process)
        worker._rebuild()
        worker._outcomes = TracedOutcomes(worker.queue, self)
        worker._traced_by = self

    def detach(self) -> None:
        worker = self.worker
        if self.process in worker._middleware:
            worker._middleware.remove(self.process)
            worker._rebuild()
        worker._outcomes = worker.queue
        worker._traced_by = None
        self.instrumentation.workers.discard(worker)

    async def process(self, job: Job, call_next: Callable[[], Awaitable[Any]]) -> Any:
        """The ``process`` span around the rest of the chain, current while it runs."""
        instrumentation = self.instrumentation
        links: list[Link] = []
        parent: Context | None = None
        telemetry = job.options.telemetry
        if telemetry:
            created, creation = _creation(telemetry)
            if created.is_valid:
                links.append(Link(created))
                if not trace.get_current_span().get_span_context().is_valid:
                    parent = creation  # no other span is current: the producer's is the parent
        attributes = _base(self.destination, "process", "process")
        attributes[_MESSAGE_ID] = job.id
        attributes[_JOB_NAME] = job.name
        attributes[_ATTEMPT] = job.attempts_started
        attributes[_CLIENT_ID] = self.worker.id
        span = instrumentation.tracer.start_span(
            self.process_name, parent, SpanKind.CONSUMER, attributes, links
        )
        token = otel_context.attach(trace.set_span_in_context(span, parent))
        started = time.perf_counter()
        error: BaseException | None = None
        try:
            return await call_next()
        except (DelayedError, RateLimitError):
            raise  # the job was moved on (delayed, or given back), not failed
        except BaseException as failed:
            error = failed
            raise
        finally:
            otel_context.detach(token)
            _end(span, error)
            metric = (
                self.metric_attributes
                if error is None
                else _metric(self.destination, "process", error)
            )
            instrumentation.duration.record(time.perf_counter() - started, metric)
            instrumentation.consumed.add(1, metric)
            unsettled = self.unsettled
            if len(unsettled) >= MAX_UNSETTLED_LINKS:
                del unsettled[next(iter(unsettled))]
            unsettled[job.id] = span.get_span_context()

    @contextmanager
    def settling(self, items: Sequence[tuple[Any, ...]], outcome: str) -> Iterator[Span]:
        """The ``settle`` span of one reported batch, linked to its jobs' process spans."""
        unsettled = self.unsettled
        links = [Link(found) for item in items if (found := unsettled.pop(item[0], None))]
        attributes = _base(self.destination, "settle", "settle")
        attributes[_BATCH_COUNT] = len(items)
        attributes["messaging.lanemq.settle.outcome"] = outcome
        span = self.instrumentation.tracer.start_span(
            self.settle_name, None, SpanKind.CLIENT, attributes, links
        )
        with _ended(span):
            yield span


class TracedOutcomes:
    """A worker's outcome calls while it is traced: its queue's, each in a ``settle`` span."""

    def __init__(self, queue: JobQueue, tracing: WorkerTracing) -> None:
        self._queue = queue
        self._tracing = tracing

    async def complete_many(self, items: Iterable[tuple[str, str, Any]]) -> list[tuple[str, str]]:
        batch = list(items)
        with self._tracing.settling(batch, "completed") as span:
            refused = await self._queue.complete_many(batch)
            span.set_attribute("messaging.lanemq.settle.refused", len(refused))
        return refused

    async def complete_and_claim(
        self, items: Iterable[tuple[str, str, Any]], worker_id: str, lease: float, max_jobs: int
    ) -> tuple[list[tuple[str, str]], list[Job]]:
        batch = list(items)
        with self._tracing.settling(batch, "completed") as span:
            refused, jobs = await self._queue.complete_and_claim(batch, worker_id, lease, max_jobs)
            span.set_attribute("messaging.lanemq.settle.refused", len(refused))
        return refused, jobs

    async def fail_many(
        self, items: Iterable[tuple[str, str, str | BaseException, str | None, bool]]
    ) -> list[tuple[str, bool, str | None]]:
        batch = list(items)
        with self._tracing.settling(batch, "failed") as span:
            outcomes = await self._queue.fail_many(batch)
            refused = sum(1 for _, _, problem in outcomes if problem is not None)
            span.set_attribute("messaging.lanemq.settle.refused", refused)
        return outcomes


class LaneTracing:
    """Wraps each lane command at submit in a ``lane <lane id>`` span, the child of the
    submitter's context (the command itself runs in a runner task, not the submitter's)."""

    def __init__(self, tracer: trace.Tracer) -> None:
        self.tracer = tracer

    def wrap(self, handle: CommandHandle[Any]) -> None:
        fn = handle._fn
        command_type = handle.command_type
        submitted = otel_context.get_current()
        traced: Callable[..., Any]
        if handle.is_async:

            @functools.wraps(fn)
            async def traced_async(*args: Any, **kwargs: Any) -> Any:
                with self._span(handle, command_type, submitted):
                    return await fn(*args, **kwargs)

            traced = traced_async
        else:

            @functools.wraps(fn)
            def traced_sync(*args: Any, **kwargs: Any) -> Any:  # runs in a worker thread
                with self._span(handle, command_type, submitted):
                    return fn(*args, **kwargs)

            traced = traced_sync
        owner = getattr(fn, "__self__", None)
        if owner is not None:
            # The command's type is read from the object a bound ``execute`` belongs to.
            setattr(traced, "__self__", owner)  # noqa: B010 - a function attribute
        handle._fn = traced

    @contextmanager
    def _span(
        self, handle: CommandHandle[Any], command_type: str, parent: Context
    ) -> Iterator[None]:
        lane_id = handle.lane_id
        attributes: Attributes = {
            "lanemq.lane.id": lane_id,
            "lanemq.lane.command.id": handle.id,
            "lanemq.lane.command.type": command_type,
        }
        attempt = handle._manager._core.attempt(handle.id)
        if attempt is not None:
            attributes["lanemq.lane.command.attempt"] = attempt
        span = self.tracer.start_span(f"lane {lane_id}", parent, SpanKind.INTERNAL, attributes)
        token = otel_context.attach(trace.set_span_in_context(span, parent))
        try:
            with _ended(span):
                yield
        finally:
            otel_context.detach(token)


# ---------------------------------------------------------------------- helpers


def _base(destination: str, operation: str, operation_type: str) -> Attributes:
    return {
        _SYSTEM: SYSTEM,
        _DESTINATION: destination,
        _OPERATION: operation,
        _OPERATION_TYPE: operation_type,
    }


def _metric(destination: str, operation: str, error: BaseException | None) -> Attributes:
    attributes: Attributes = {_SYSTEM: SYSTEM, _DESTINATION: destination, _OPERATION: operation}
    if error is not None:
        attributes[_ERROR_TYPE] = _error_type(error)
    return attributes


def _error_type(error: BaseException) -> str:
    return type(error).__qualname__


def _end(span: Span, error: BaseException | None) -> None:
    if error is not None:
        span.set_attribute(_ERROR_TYPE, _error_type(error))
        span.set_status(Status(StatusCode.ERROR, f"{type(error).__name__}: {error}"))
        span.record_exception(error)
    span.end()


@contextmanager
def _ended(
    span: Span, after: Callable[[BaseException | None], None] | None = None
) -> Iterator[None]:
    """Ends ``span`` once the block is done, recording the error it raised (which goes on);
    then calls ``after`` with that error (None: none)."""
    error: BaseException | None = None
    try:
        yield
    except BaseException as failed:
        error = failed
        raise
    finally:
        _end(span, error)
        if after is not None:
            after(error)


def _carrying(options: JobOptions | None, span: Span) -> JobOptions | None:
    """``options`` with ``span``'s context (and the current baggage) as the job's telemetry;
    unchanged when the propagator writes nothing (a span of no real provider)."""
    carrier: dict[str, str] = {}
    propagate.inject(carrier, trace.set_span_in_context(span))
    if not carrier:
        return options
    return JobOptions(telemetry=carrier) if options is None else options.with_telemetry(carrier)


def _creation(telemetry: dict[str, str]) -> tuple[SpanContext, Context]:
    """The span context a job's telemetry carries, and the whole context (baggage too)."""
    context = propagate.extract(telemetry)
    return trace.get_current_span(context).get_span_context(), context


def _link_to(links: list[Link], context: SpanContext) -> None:
    if context.is_valid:
        links.append(Link(context))
