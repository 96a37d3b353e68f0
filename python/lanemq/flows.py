"""Flows (BullMQ's FlowProducer): `FlowJob` describes a job and its children, `JobNode` is what
`add_flow` / `Job.add_children` return, `Dependencies` a page of a parent's children.

A job with children is created in ``waiting_children`` and waits there until every child is
done (completed, or failed under the ignore or remove policy); then it becomes waiting (or
delayed, its ``delay`` counted from then). A child's options choose what its terminal failure
does to its parent (``parent_policy`` or one of BullMQ's four flags): fail it (the default,
``fail_parent_on_failure``), ignore it (``ignore_dependency_on_failure``), drop it
(``remove_dependency_on_failure``), release the parent at once
(``continue_parent_on_failure``) or, as BullMQ does by default, keep the parent waiting for
the failed child until it is retried (``keep_parent_waiting``). Children are named by their
key, ``<queue>:<id>``."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from . import _json
from ._checks import job_name
from ._core import JobOptions
from .exceptions import ConfigError

# (imported at run time, not only for the type checker: the reference (mkdocstrings) and
# `typing.get_type_hints` resolve `JobNode.job` and `Dependencies.jobs` through it; job.py
# imports this module only for the type checker)
from .job import Job

if TYPE_CHECKING:
    from ._core import _FlowNodeArgs


@dataclass(frozen=True, slots=True)
class FlowJob:
    """One job of a flow and its children. ``queue`` names a queue of the same backend (for
    in-memory queues: of the same `MemoryGroup`; for local queues: whose files are in the same
    directory; for Redis queues: on the same server with the same prefix); None means the
    queue `add_flow` is called on for the root, and the parent's queue for a child.
    ``options`` are `JobOptions`, a dict of them, or None."""

    name: str
    data: Any = None
    options: JobOptions | dict[str, Any] | None = None
    children: Iterable[FlowJob] = ()
    queue: str | None = None


@dataclass(slots=True)
class JobNode:
    """A job as a flow added it, and its children's nodes."""

    job: Job
    children: list[JobNode] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Dependencies:
    """A page of a parent's children, each set sorted by child key (``<queue>:<id>``):
    ``processed`` maps completed children to their return values, ``failed`` and ``ignored``
    map children to their failure reasons. ``next_*_cursor`` is the cursor of the next page of
    that set, None at its end. ``jobs`` holds a snapshot of each child of the page that still
    exists, by key; ``missing`` the keys (sorted) of those that no longer do (removed by
    retention or by hand: a completed child's value stays in ``processed``)."""

    processed: dict[str, Any]
    unprocessed: list[str]
    failed: dict[str, str]
    ignored: dict[str, str]
    next_processed_cursor: int | None = None
    next_unprocessed_cursor: int | None = None
    next_failed_cursor: int | None = None
    next_ignored_cursor: int | None = None
    # (snapshots are read objects: two reads of one page compare equal without them)
    jobs: dict[str, Job] = field(default_factory=dict, compare=False)
    missing: list[str] = field(default_factory=list)

    def keys(self) -> list[str]:
        """The child keys of the page, in every set."""
        return [*self.processed, *self.unprocessed, *self.failed, *self.ignored]


#: The sets `get_dependencies_count` counts, in its order: ``missing`` counts the children
#: (of any set) whose job no longer exists.
DEPENDENCY_BUCKETS = ("processed", "unprocessed", "failed", "ignored", "missing")


@dataclass(frozen=True, slots=True)
class ParentRef:
    """The parent an added job becomes a child of (`JobQueue.add`'s ``parent``, BullMQ's
    ``opts.parent``): the job ``id`` of the queue ``queue`` (None: the queue the job is added
    to; else a queue of the same backend, as `FlowJob.queue`)."""

    id: str
    queue: str | None = None


def parent_ref(value: ParentRef | dict[str, Any]) -> ParentRef:
    """A ``parent`` option as `ParentRef`: one, or a dict ``{"id": ..., "queue": ...}``
    (``queue`` optional); anything else is refused naming it."""
    if isinstance(value, dict):
        unknown = sorted(set(value) - {"id", "queue"})
        if unknown or "id" not in value:
            raise ConfigError(
                f"invalid parent: {value!r} (a dict with 'id' and optionally 'queue')"
            )
        value = ParentRef(value["id"], value.get("queue"))
    if not isinstance(value, ParentRef):
        raise ConfigError(f"invalid parent: {value!r} (a ParentRef or a dict with 'id')")
    if not isinstance(value.id, str) or not value.id:
        raise ConfigError(f"invalid parent id: {value.id!r} (a non-empty str)")
    if value.queue is not None and not isinstance(value.queue, str):
        raise ConfigError(f"invalid parent queue: {value.queue!r} (a str or None)")
    return value


def flow_args(
    flow: FlowJob, options: Callable[[Any], JobOptions | None], path: str = "root"
) -> _FlowNodeArgs:
    """A flow as the core takes it: ``(queue, name, data, options, children)``, encoded."""
    if not isinstance(flow, FlowJob):
        raise TypeError(f"flow node {path}: expected a FlowJob, got {flow!r}")
    job_name(flow.name, f"name of flow node {path}")
    data = _json.dumps(flow.data, f"data of flow node {path} ({flow.name!r})")
    children = [
        flow_args(child, options, f"{path}.children[{i}]") for i, child in enumerate(flow.children)
    ]
    return (flow.queue, flow.name, data, options(flow.options), children)


__all__ = ["Dependencies", "FlowJob", "JobNode", "ParentRef"]
