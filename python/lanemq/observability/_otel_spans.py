"""The span and metric vocabulary of `lanemq.otel` (the OpenTelemetry messaging semantic
conventions' attribute names) and the helpers its spans share: attributes, ending a span with
the error it saw, carrying a span's context in a job's telemetry and reading it back."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from opentelemetry import propagate, trace
from opentelemetry.context import Context
from opentelemetry.trace import Link, Span, SpanContext, Status, StatusCode
from opentelemetry.util.types import AttributeValue

from .._core import JobOptions, __version__

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


def _tracer(provider: trace.TracerProvider | None) -> trace.Tracer:
    return trace.get_tracer("lanemq", __version__, provider)


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
