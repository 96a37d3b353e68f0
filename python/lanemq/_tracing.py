"""The switch the hot paths test for OpenTelemetry (`lanemq.otel`): one module global,
``active``, None while tracing is off. It imports nothing of OpenTelemetry, so that a process
with no tracer provider (the common case: FastAPI alone brings opentelemetry-api along) pays
one ``is None`` per `JobQueue.add`, and a worker nothing per job.

Automatic activation: tracing turns on by itself when ``opentelemetry.trace`` is loaded and a
real tracer provider (not the API's proxy or no-op one) is set; `refresh` looks at import of
lanemq, at the start of every `JobWorker.run` / `run_once` / `run_until_idle` and when a
`QueueManager` is made. After `lanemq.otel.instrument` or `uninstrument` it looks no more: the
explicit choice stands."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Protocol

from .exceptions import ConfigError

if TYPE_CHECKING:
    from .job import Job
    from .otel import Instrumentation, LaneTracing
    from .worker import JobWorker

#: The instrumentation `JobQueue.add`, `add_bulk` and `add_flow` hand their calls to, or None.
active: Instrumentation | None = None
#: Set by `lanemq.otel.instrument` / `uninstrument`: no automatic switching after either.
explicit = False


class Outcomes(Protocol):
    """The calls a `JobWorker` reports outcomes with: its queue's, or their traced versions
    (`lanemq.otel`), which wrap each batch in a ``settle`` span."""

    async def complete_many(
        self, items: Iterable[tuple[str, str, Any]]
    ) -> list[tuple[str, str]]: ...

    async def complete_and_claim(
        self, items: Iterable[tuple[str, str, Any]], worker_id: str, lease: float, max_jobs: int
    ) -> tuple[list[tuple[str, str]], list[Job]]: ...

    async def fail_many(
        self, items: Iterable[tuple[str, str, str | BaseException, str | None, bool]]
    ) -> list[tuple[str, bool, str | None]]: ...


def refresh() -> Instrumentation | None:
    """Turns automatic tracing on if it is not yet and a real tracer provider is set now (a
    look at ``sys.modules`` first: an API that was never imported has no provider)."""
    if active is None and not explicit:
        trace = sys.modules.get("opentelemetry.trace")
        if trace is not None and _real_provider(trace):
            from . import otel

            otel.auto_instrument()
    return active


def _real_provider(trace: Any) -> bool:
    provider = trace.get_tracer_provider()
    return not isinstance(provider, (trace.ProxyTracerProvider, trace.NoOpTracerProvider))


def prepare_worker(worker: JobWorker) -> None:
    """At the start of a worker's run: installs the tracing middleware and the traced outcome
    calls if tracing is on, or takes out those of an instrumentation that is no longer
    active. Costs the worker nothing per job while tracing is off."""
    instrumentation = refresh()
    installed = getattr(worker, "_traced_by", None)
    if installed is not None and installed.instrumentation is not instrumentation:
        installed.detach()
    if instrumentation is not None and getattr(worker, "_traced_by", None) is None:
        instrumentation.attach(worker)


def lane_tracing(tracing: bool | None) -> LaneTracing | None:
    """What a `QueueManager` traces its commands with: ``tracing=True`` always (the API must
    be installed), False never, None as `lanemq.otel.instrument(lanes=True)` (or the
    automatic instrumentation) says."""
    if tracing is False:
        return None
    if tracing:
        try:
            from . import otel
        except ImportError:
            raise ConfigError(
                "invalid tracing: True (needs opentelemetry-api: pip install 'lanemq[otel]')"
            ) from None
        return otel.lane_tracing()
    instrumentation = refresh()
    return None if instrumentation is None else instrumentation.lanes
