"""The queues a dashboard shows, by name."""

from __future__ import annotations

from collections.abc import Sequence

from starlette.exceptions import HTTPException

from ..exceptions import ConfigError
from ..queue import JobQueue


class QueueSource:
    """The queues given to `lanemq.dashboard.app`, in the order given."""

    def __init__(self, queues: Sequence[JobQueue]) -> None:
        if isinstance(queues, JobQueue) or not isinstance(queues, Sequence):
            raise TypeError(f"queues must be a sequence of JobQueue, got {queues!r}")
        found: dict[str, JobQueue] = {}
        for queue in queues:
            if not isinstance(queue, JobQueue):
                raise TypeError(f"queues must be JobQueue objects, got {queue!r}")
            if queue.name in found:
                raise ConfigError(f"queue {queue.name!r} is given twice")
            found[queue.name] = queue
        if not found:
            raise ConfigError("no queues to show: give at least one queue")
        self._queues = found

    async def names(self) -> list[str]:
        return list(self._queues)

    async def get(self, name: str) -> JobQueue:
        """The queue ``name``; an unknown one is a 404 naming the known ones."""
        queue = self._queues.get(name)
        if queue is None:
            known = ", ".join(repr(n) for n in await self.names())
            raise HTTPException(404, f"no queue {name!r} here (queues: {known})")
        return queue

    async def known(self, name: str) -> bool:
        return name in self._queues
