"""The switch the hot paths use for OpenTelemetry (`lanemq.otel`): ``active``, the
instrumentation (None while tracing is off), and ``producer``, what the add paths of
`JobQueue` hand their backend call to, chosen whenever ``active`` is set: `DIRECT` (the
backend, untraced) while it is None, else ``active`` itself. It imports nothing of
OpenTelemetry, so that a process with no tracer provider (the common case: FastAPI alone brings
opentelemetry-api along) pays little per `JobQueue.add` (one read of ``producer`` and a call, or
while a provider may still come, a look at the API's global, as its proxy tracer takes), and a
worker nothing per job.

Automatic activation: tracing turns on by itself once a real tracer provider (not the API's
proxy or no-op one) is set, whenever that is. When lanemq is imported and the API is installed
but no provider is set, ``active`` is a `Watch`: each producer call looks whether one is set
now (the global provider can be set once only, so the first provider seen settles it: tracing
on for a real one, off for good otherwise). A worker looks at the start of every `JobWorker.run`
/ `run_once` / `run_until_idle`, and a `QueueManager` when it is made. After
`lanemq.otel.instrument` or `uninstrument` it looks no more: the explicit choice stands."""

from __future__ import annotations

import importlib.util
import sys
import types
from collections.abc import Awaitable, Iterable
from typing import TYPE_CHECKING, Any, Protocol

from .exceptions import ConfigError

if TYPE_CHECKING:
    from ._core import JobOptions, JobRecord, _AddedRow, _FlowNodeArgs
    from .job import Job
    from .jobs._base import QueueBase
    from .jobs.lifecycle import FailItem
    from .otel import Instrumentation, LaneTracing
    from .queue import JobQueue
    from .worker import JobWorker

_API = "opentelemetry.trace"


class Watch:
    """``active`` while automatic activation waits for a tracer provider: the producer calls
    of `JobQueue` go straight to the backend until one is set, then to the instrumentation
    that `settle` makes of it."""

    def __init__(self) -> None:
        #: ``opentelemetry.trace`` once something imported it (lanemq never does).
        self.api: Any = None

    def tracing(self) -> Instrumentation | None:
        """The instrumentation in force: None while no provider is set (one read of the API's
        global, as its proxy tracer reads it), else what `settle` decides."""
        api = self.api
        if api is None:
            api = self.api = sys.modules.get(_API)
            if api is None:
                return None
        try:
            if api._TRACER_PROVIDER is None:
                return None
        except AttributeError:  # an API without its proxy's global: the public look
            if not _real_provider(api):
                return None
        return settle(api)

    def add(
        self, queue: JobQueue, name: str, body: str, options: JobOptions | None, now: int
    ) -> Awaitable[JobRecord]:
        tracing = self.tracing()
        if tracing is None:
            return queue._add_one(name, body, options, now)
        return tracing.add(queue, name, body, options, now)

    def add_bulk(
        self, queue: JobQueue, items: list[tuple[str, str, JobOptions | None]], now: int
    ) -> Awaitable[list[JobRecord]]:
        tracing = self.tracing()
        if tracing is None:
            return queue._core.add_bulk(items, now)
        return tracing.add_bulk(queue, items, now)

    def add_flow(
        self, queue: JobQueue, args: _FlowNodeArgs, now: int | None
    ) -> Awaitable[list[_AddedRow]]:
        tracing = self.tracing()
        if tracing is None:
            return queue._core.add_flow(args, now)
        return tracing.add_flow(queue, args, now)

    def add_children(
        self, queue: JobQueue, job_id: str, token: str, args: list[_FlowNodeArgs], now: int | None
    ) -> Awaitable[list[_AddedRow]]:
        tracing = self.tracing()
        if tracing is None:
            return queue._core.add_children(job_id, token, args, now)
        return tracing.add_children(queue, job_id, token, args, now)

    def attach_children(
        self, queue: JobQueue, job_id: str, args: list[_FlowNodeArgs], now: int | None
    ) -> Awaitable[list[_AddedRow]]:
        tracing = self.tracing()
        if tracing is None:
            return queue._core.attach_children(job_id, args, now)
        return tracing.attach_children(queue, job_id, args, now)


class Producer(Protocol):
    """What ``producer`` is: the backend calls of the add paths, traced or not. (An
    `Instrumentation` or a `Watch` declares its queue a `JobQueue`, which every part of one is.)"""

    def add(
        self, queue: QueueBase, name: str, body: str, options: JobOptions | None, now: int
    ) -> Awaitable[JobRecord]: ...

    def add_bulk(
        self, queue: QueueBase, items: list[tuple[str, str, JobOptions | None]], now: int
    ) -> Awaitable[list[JobRecord]]: ...

    def add_flow(
        self, queue: QueueBase, args: _FlowNodeArgs, now: int | None
    ) -> Awaitable[list[_AddedRow]]: ...

    def add_children(
        self, queue: QueueBase, job_id: str, token: str, args: list[_FlowNodeArgs], now: int | None
    ) -> Awaitable[list[_AddedRow]]: ...

    def attach_children(
        self, queue: QueueBase, job_id: str, args: list[_FlowNodeArgs], now: int | None
    ) -> Awaitable[list[_AddedRow]]: ...


class Direct:
    """``producer`` while tracing is off: the backend's own calls, untraced."""

    def add(
        self, queue: QueueBase, name: str, body: str, options: JobOptions | None, now: int
    ) -> Awaitable[JobRecord]:
        return queue._add_one(name, body, options, now)

    def add_bulk(
        self, queue: QueueBase, items: list[tuple[str, str, JobOptions | None]], now: int
    ) -> Awaitable[list[JobRecord]]:
        return queue._core.add_bulk(items, now)

    def add_flow(
        self, queue: QueueBase, args: _FlowNodeArgs, now: int | None
    ) -> Awaitable[list[_AddedRow]]:
        return queue._core.add_flow(args, now)

    def add_children(
        self, queue: QueueBase, job_id: str, token: str, args: list[_FlowNodeArgs], now: int | None
    ) -> Awaitable[list[_AddedRow]]:
        return queue._core.add_children(job_id, token, args, now)

    def attach_children(
        self, queue: QueueBase, job_id: str, args: list[_FlowNodeArgs], now: int | None
    ) -> Awaitable[list[_AddedRow]]:
        return queue._core.attach_children(job_id, args, now)


DIRECT = Direct()

#: The instrumentation, a `Watch` for a provider to come, or None (off).
active: Instrumentation | Watch | None = None
#: What `JobQueue.add`, `add_bulk`, `add_flow` and `add_children` (and an add's ``parent``, by
#: ``attach_children``) hand their calls to: ``active``,
#: or `DIRECT` while that is None. Set with it, never on its own (`_choose`).
producer: Producer = DIRECT
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

    async def fail_many(self, items: Iterable[FailItem]) -> list[tuple[str, bool, str | None]]: ...


def start() -> None:
    """At import of lanemq: tracing on if a real provider is set already; else, if the API is
    installed (imported or not), a `Watch` for one; else (no API) off, at no cost."""
    if active is not None or explicit:
        return
    api = sys.modules.get(_API)
    if api is None and not _api_installed():
        return
    _choose(Watch())
    refresh()


def _api_installed() -> bool:
    try:
        return importlib.util.find_spec(_API) is not None
    except ImportError:  # no ``opentelemetry`` package at all (or one that cannot load)
        return False


def refresh() -> Instrumentation | None:
    """The instrumentation in force now (None: tracing is off), a provider set since the
    last look included."""
    current = active
    if isinstance(current, Watch):
        api = current.api or sys.modules.get(_API)
        if api is not None:
            # (the API makes a provider named by OTEL_PYTHON_TRACER_PROVIDER at this look)
            api.get_tracer_provider()
        return current.tracing()
    return current


def settle(api: Any) -> Instrumentation | None:
    """A global tracer provider is set (for good: the API sets it once): automatic tracing
    turns on if it is a real one, off otherwise."""
    if not isinstance(active, Watch):  # (an explicit choice came first)
        return active
    if _real_provider(api):
        from . import otel

        otel.auto_instrument()
    else:
        _choose(None)
    return refresh()


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


def _choose(instrumentation: Instrumentation | Watch | None) -> None:
    """Sets ``active`` and, with it, ``producer``."""
    globals()["active"] = instrumentation
    globals()["producer"] = DIRECT if instrumentation is None else instrumentation


class _Switch(types.ModuleType):
    """This module's class, so that setting ``active`` from outside (`lanemq.otel` does, to
    switch tracing on or off) chooses ``producer`` too: the add paths then read one object
    rather than test ``active`` on every call."""

    @property
    def active(self) -> Instrumentation | Watch | None:
        return self.__dict__["active"]  # type: ignore[no-any-return]

    @active.setter
    def active(self, instrumentation: Instrumentation | Watch | None) -> None:
        _choose(instrumentation)


sys.modules[__name__].__class__ = _Switch
