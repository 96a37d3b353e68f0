"""The in-process backend: `InMemoryJobQueue` and `MemoryGroup`."""

from __future__ import annotations

import weakref
from typing import Any

from .._core import JobQueueCore, MemoryGroupCore
from ._common import _check_name_type, _open, _register
from .queue import JobQueue


class MemoryGroup:
    """In-memory queues that share one lock, so that a flow spanning them is one atomic step
    (like the queues of one Redis server). Queues built with the same group and name share one
    store (like two clients of one Redis); the first one's limits apply."""

    def __init__(self) -> None:
        self._core = MemoryGroupCore()
        self._queues: weakref.WeakValueDictionary[str, InMemoryJobQueue] = (
            weakref.WeakValueDictionary()
        )

    def queue(self, name: str = "default", **options: Any) -> InMemoryJobQueue:
        """The queue ``name`` of this group (`InMemoryJobQueue` keywords accepted)."""
        return InMemoryJobQueue(name, group=self, **options)

    @property
    def queue_names(self) -> list[str]:
        """The names of the queues this group holds."""
        return self._core.queue_names()


class InMemoryJobQueue(JobQueue):
    """The job contract in process memory: for tests and embedded use. Nothing survives the
    process; use `LocalJobQueue` or `RedisJobQueue` for durability. Queues of one ``group``
    (`MemoryGroup`) can share flows and, under the same name, one store; without a group the
    queue has a private one."""

    _remote = False

    def __init__(
        self,
        name: str = "default",
        *,
        group: MemoryGroup | None = None,
        max_payload_bytes: int = 16 * 1024 * 1024,
        max_events: int = 10_000,
    ) -> None:
        _check_name_type(name)
        self.group = MemoryGroup() if group is None else group
        core = JobQueueCore.memory(name, self.group._core, max_payload_bytes, max_events)
        super().__init__(name, core)
        _register(self.group._queues, name, self)

    def sibling(self, name: str) -> JobQueue:
        if name == self.name:
            return self
        found = _open(self.group._queues, name)
        return found if found is not None else InMemoryJobQueue(name, group=self.group)
