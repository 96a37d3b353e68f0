"""`Entrypoint`: the handlers of one queue, routed by job name, with the hooks an application
reacts to its jobs' ends with (the owlmeans seed's entrypoint dispatch and its ``onJobDead``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from .. import _checks
from ..exceptions import ConfigError
from ..job import Job
from ..worker import JobWorker

#: A job's handler: ``async def handle(job)`` (or a plain ``def``, which the worker runs in a
#: thread); what it returns is the job's result.
Handler = Callable[[Job], Any]
#: ``on_dead(job, error)``: the job failed for good (no attempt left, `UnrecoverableError`,
#: no handler for its name, or failed by stalled recovery).
DeadHook = Callable[[Job, BaseException], Any]

# Each hook keyword and the `JobWorker.on` event it is.
_HOOKS = {
    "on_dead": "dead",
    "on_failed": "failed",
    "on_completed": "completed",
    "on_stalled": "stalled",
}


class Entrypoint:
    """The handlers of one queue, one per job name (``handlers={"send": send}``), and its
    hooks: ``on_dead(job, error)``, called once when a job fails for good, where an
    application compensates (releases what the job held, marks its record failed);
    ``on_failed(job, error)`` after every failed attempt; ``on_completed(job, result)``;
    ``on_stalled(job_id)``. Hooks may be ``async``; one that raises is logged and never fails
    a job.

    A job whose name has no handler fails for good at once with ``no processor for job name
    '<name>'`` (an `UnrecoverableError`: no attempt can run it here), and ``on_dead`` hears
    of it. `attach` puts it on a `JobWorker`; a `Service` does that for the queues its process
    consumes (`Service.serve`)."""

    def __init__(
        self,
        handlers: Mapping[str, Handler],
        *,
        on_dead: DeadHook | None = None,
        on_failed: Callable[[Job, BaseException], Any] | None = None,
        on_completed: Callable[[Job, Any], Any] | None = None,
        on_stalled: Callable[[str], Any] | None = None,
    ) -> None:
        if not isinstance(handlers, Mapping):
            raise TypeError(f"handlers must map job names to handlers, got {handlers!r}")
        if not handlers:
            raise ConfigError("an Entrypoint needs at least one handler")
        for name, handler in handlers.items():
            _checks.job_name(name, "job name of a handler")
            if not callable(handler):
                raise TypeError(f"the handler of job name {name!r} is not callable: {handler!r}")
        hooks = {
            "on_dead": on_dead,
            "on_failed": on_failed,
            "on_completed": on_completed,
            "on_stalled": on_stalled,
        }
        for keyword, hook in hooks.items():
            if hook is not None and not callable(hook):
                raise TypeError(f"{keyword} must be callable, got {hook!r}")
        self._handlers = MappingProxyType(dict(handlers))
        self._hooks = {_HOOKS[key]: hook for key, hook in hooks.items() if hook is not None}

    @property
    def handlers(self) -> Mapping[str, Handler]:
        """The handlers by job name (read-only)."""
        return self._handlers

    def attach(self, worker: JobWorker) -> None:
        """Registers the handlers on ``worker`` (each under its job name) and the hooks as its
        `JobWorker.on` hooks. A name that already has a batch processor raises `ConfigError`
        before anything is registered."""
        taken = [name for name in self._handlers if name in worker._batch_handlers]
        if taken:
            raise ConfigError(f"job name {taken[0]!r} already has a batch processor")
        for name, handler in self._handlers.items():
            worker.processor(name)(handler)
        for event, hook in self._hooks.items():
            worker.on(event, hook)

    def __repr__(self) -> str:
        hooks = "".join(f", on_{event}=..." for event in self._hooks)
        return f"Entrypoint(handlers={sorted(self._handlers)}{hooks})"
