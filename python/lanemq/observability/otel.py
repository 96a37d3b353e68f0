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

try:
    from opentelemetry import metrics, trace
except ImportError as missing:  # pragma: no cover - the extra is not installed
    raise ImportError(
        "lanemq.otel needs opentelemetry-api: pip install 'lanemq[otel]'"
    ) from missing


from .. import _tracing

# The classes are defined beside it; `lanemq._tracing` and older callers reach them here.
from ._otel_consumer import LaneTracing as LaneTracing
from ._otel_consumer import TracedOutcomes as TracedOutcomes
from ._otel_consumer import WorkerTracing as WorkerTracing
from ._otel_producer import Instrumentation as Instrumentation
from ._otel_spans import DURATION_BUCKETS as DURATION_BUCKETS
from ._otel_spans import MAX_UNSETTLED_LINKS as MAX_UNSETTLED_LINKS
from ._otel_spans import SYSTEM as SYSTEM
from ._otel_spans import _tracer

__all__ = ["instrument", "is_instrumented", "uninstrument"]


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
