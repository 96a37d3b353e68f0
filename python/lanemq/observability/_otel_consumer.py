"""`lanemq.otel` on the consumer side: the spans of a worker (``process`` around each
processor run, ``settle`` around each reported batch) and of lane commands (``lane``)."""

from __future__ import annotations

import functools
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Link, Span, SpanContext, SpanKind

from ..exceptions import DelayedError, RateLimitError
from ._otel_spans import (
    _ATTEMPT,
    _BATCH_COUNT,
    _CLIENT_ID,
    _JOB_NAME,
    _MESSAGE_ID,
    MAX_UNSETTLED_LINKS,
    Attributes,
    _base,
    _creation,
    _end,
    _ended,
    _metric,
)

if TYPE_CHECKING:
    from ..job import Job
    from ..jobs.lifecycle import FailItem
    from ..lanes import CommandHandle
    from ..queue import JobQueue
    from ..worker import JobWorker
    from ._otel_producer import Instrumentation


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

    async def fail_many(self, items: Iterable[FailItem]) -> list[tuple[str, bool, str | None]]:
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
