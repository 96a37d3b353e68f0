"""Flows: jobs with children, possibly in other queues of the same backend."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from .. import _checks, _json, _tracing
from .._core import JobOptions
from ..exceptions import ConfigError
from ..flows import DEPENDENCY_BUCKETS, Dependencies, FlowJob, JobNode, flow_args
from ..job import Job
from ._base import QueueBase, new_job
from ._common import _flow_texts, _options

if TYPE_CHECKING:
    from .._core import _AddedRow


class QueueFlows(QueueBase):
    """The part of `JobQueue` for flows and their dependencies."""

    def _flow_options(self, options: Any) -> JobOptions | None:
        return _options(options, {})

    def _nodes(self, rows: list[_AddedRow]) -> list[JobNode]:
        nodes: list[JobNode] = []
        roots: list[JobNode] = []
        for queue_name, record, parent in rows:
            node = JobNode(new_job(self.sibling(queue_name), record))
            nodes.append(node)
            (roots if parent is None else nodes[parent].children).append(node)
        return roots

    async def add_flow(self, flow: FlowJob, *, now: int | None = None) -> JobNode:
        """Adds a flow: the root on this queue (unless it names another), each child on its
        ``queue`` (default: its parent's) of the same backend. All or nothing: every node is
        checked first (options, queue, payload, existing jobs), then all are written in one
        step. A node with children is created in ``waiting_children``. A flow of one job (no
        children) is added as `add` adds it (dedup options included). A node whose custom
        ``job_id`` a job of its queue has is that job: it becomes its parent's child (unless
        it is already; another parent is refused with `JobStateError`) and gains the node's
        children it does not have; so a flow whose root exists returns that job (a
        ``duplicated`` event) with all its children, the new ones added. Dedup options work
        on every node, in its own queue's dedup space: a node deduplicated into the job
        holding its key is that
        job, which becomes the parent's child (README, "Differences from BullMQ")."""
        args = flow_args(flow, self._flow_options)
        try:
            rows = await _tracing.producer.add_flow(self, args, now)
        except UnicodeEncodeError as error:
            raise _checks.not_unicode(error, _flow_texts(flow)) from None
        return self._nodes(rows)[0]

    async def _add_children(
        self, job: Job, children: Iterable[FlowJob], now: int | None
    ) -> list[JobNode]:
        token = job.lock_token
        if token is None:
            raise ConfigError(f"job {job.id!r} is not held by a worker (add_children needs it)")
        args = [
            flow_args(child, self._flow_options, f"children[{i}]")
            for i, child in enumerate(children)
        ]
        try:
            rows = await _tracing.producer.add_children(self, job.id, token, args, now)
        except UnicodeEncodeError as error:
            texts = [text for child in children for text in _flow_texts(child)]
            raise _checks.not_unicode(error, texts) from None
        return self._nodes(rows)

    async def get_dependencies(
        self,
        parent_id: str,
        *,
        processed_cursor: int = 0,
        unprocessed_cursor: int = 0,
        failed_cursor: int = 0,
        ignored_cursor: int = 0,
        count: int | None = None,
    ) -> Dependencies:
        """A page of the children of ``parent_id``: each set from its cursor, at most
        ``count`` of each (None: all)."""
        cursors = (processed_cursor, unprocessed_cursor, failed_cursor, ignored_cursor)
        if min(cursors) < 0 or (count is not None and count < 1):
            raise ConfigError(f"invalid dependency page: cursors {cursors}, count {count}")
        processed, unprocessed, failed, ignored, nxt = await self._core.get_dependencies(
            parent_id, cursors, count
        )
        page = Dependencies(
            {k: _json.loads(v) for k, v in processed},
            unprocessed,
            dict(failed),
            dict(ignored),
            next_processed_cursor=nxt[0],
            next_unprocessed_cursor=nxt[1],
            next_failed_cursor=nxt[2],
            next_ignored_cursor=nxt[3],
        )
        for child_key, job in zip(page.keys(), await self._children(page.keys()), strict=True):
            if job is None:
                page.missing.append(child_key)
            else:
                page.jobs[child_key] = job
        page.missing.sort()
        return page

    async def get_dependencies_count(self, parent_id: str, *buckets: str) -> dict[str, int]:
        """How many children of ``parent_id`` are in each of ``buckets`` (``processed``,
        ``unprocessed``, ``failed``, ``ignored``, ``missing``: those whose job no longer
        exists), in the order asked, repeats dropped; all five when none. An unknown bucket
        raises `ConfigError` naming it."""
        for bucket in buckets:
            if bucket not in DEPENDENCY_BUCKETS:
                known = ", ".join(DEPENDENCY_BUCKETS)
                raise ConfigError(f"unknown dependency bucket: {bucket!r} (one of {known})")
        asked = list(dict.fromkeys(buckets or DEPENDENCY_BUCKETS))
        counts: dict[str, int] = dict(await self._core.get_dependencies_count(parent_id))
        if "missing" in asked:
            children = (await self.get_dependencies(parent_id)).keys()
            states = await asyncio.gather(
                *(self.sibling(q).get_state(i) for q, i in map(self._child_ref, children))
            )
            counts["missing"] = sum(1 for s in states if s == "unknown")
        return {bucket: counts[bucket] for bucket in asked}

    def _child_ref(self, child_key: str) -> tuple[str, str]:
        """A child key's queue name and job id. A queue name has no ``:`` (but this queue's,
        if it is a Redis queue kept by an older name: tried first)."""
        own = f"{self.name}:"
        if child_key.startswith(own):
            return self.name, child_key[len(own) :]
        queue, _, job_id = child_key.partition(":")
        return queue, job_id

    async def _children(self, keys: list[str]) -> list[Job | None]:
        """The children of these keys as they are now (None: no longer there)."""
        refs = [self._child_ref(k) for k in keys]
        return await asyncio.gather(*(self.sibling(q).get_job(i) for q, i in refs))

    async def get_children_values(self, parent_id: str) -> dict[str, Any]:
        """The return values of the completed children of ``parent_id``, by child key."""
        return (await self.get_dependencies(parent_id)).processed

    async def get_ignored_children_failures(self, parent_id: str) -> dict[str, str]:
        """The failure reasons of the children of ``parent_id`` whose failure was ignored."""
        return (await self.get_dependencies(parent_id)).ignored

    async def remove_child_dependency(self, child_id: str, *, now: int | None = None) -> bool:
        """Detaches the child ``child_id`` from its parent: True if it was a pending
        dependency (the parent is released if it was the last)."""
        return await self._core.remove_child_dependency(child_id, now)

    async def remove_unprocessed_children(self, parent_id: str, *, now: int | None = None) -> int:
        """Removes every unprocessed child of ``parent_id`` with its tree, unless a worker
        holds a job of that tree (the parent is released once none is left); returns how many
        children were removed."""
        return await self._core.remove_unprocessed_children(parent_id, now)
