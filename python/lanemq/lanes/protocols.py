"""The lanes' storage interfaces as protocols, and the distributed queue over shared lanes.

- `LaneStorage`: what ``QueueManager(storage=...)`` needs to keep one process's named commands
  and dead letters across restarts. `lanemq.LocalStorage` implements it (a journal file).
- `LaneStore`: the store lanes shared by processes keep their commands and slots in
  (``QueueManager(backend=...)``); the local (SQLite) and Redis stores implement it, with the
  semantics its module (`lanemq.lanes._store`) writes down.
- `DistributedQueue`: commands spread over workers by partition (a lane): enqueue, dequeue,
  complete, with a worker id. `SharedLaneQueue` implements it over any backend
  ``QueueManager(backend=...)`` takes, under the same caps, priorities and rate limits, for
  code that takes commands itself instead of registering handlers.

Pick ``storage=LocalStorage(dir)`` for one process whose named commands must survive its
restart; pick ``backend=`` when several processes (or hosts) share the lanes: it is durable by
itself, so the two are never combined.
"""

from __future__ import annotations

import json
import os
import socket
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from .._core import DeadLetter, LaneConfig
from ..exceptions import UnknownLaneError
from ._shared_config import checked_backend, checked_lease, checked_name
from ._store import LaneStore


class LaneStorage(Protocol):
    """Durable state of one `QueueManager` (``storage=``): its named commands until they
    finish, and its dead letters."""

    async def open(self) -> None:
        """Opens the storage (once) and loads what it holds."""
        ...

    def pending_commands(self) -> list[tuple[str, str, str, Any]]:
        """Stored commands not yet finished, oldest first: (key, lane_id, name, payload)."""
        ...

    def dead_letters(self) -> list[DeadLetter]:
        """Stored dead letters, oldest first."""
        ...

    async def store_command(self, lane_id: str, name: str, payload: Any) -> str:
        """Stores a command durably; returns its key."""
        ...

    async def forget(self, key: str) -> None:
        """Removes a finished command."""
        ...

    async def bury(self, key: str | None, letter: DeadLetter | None) -> None:
        """Replaces a command (or, with ``key`` None, nothing) by its dead letter."""
        ...

    async def clear_all(self) -> None:
        """Deletes every stored command and dead letter."""
        ...

    def close(self) -> None:
        """Releases the storage."""
        ...


@dataclass(frozen=True)
class QueuedCommand:
    """A command `DistributedQueue.dequeue` handed to this worker."""

    id: int
    partition: str
    name: str
    payload: Any
    attempt: int


class DistributedQueue(Protocol):
    """Commands spread over workers: each goes to one worker that dequeues it, which then
    completes it."""

    @property
    def worker_id(self) -> str:
        """This worker's id, unique among the workers sharing the queue."""
        ...

    @property
    def partitions(self) -> list[str]:
        """The partitions commands are enqueued to (lanes), in priority order."""
        ...

    async def enqueue(self, partition: str, name: str, payload: Any = None) -> int:
        """Adds a command; returns its id."""
        ...

    async def dequeue(self, max_items: int = 1) -> list[QueuedCommand]:
        """Takes at most ``max_items`` commands this worker may start now (maybe none)."""
        ...

    async def complete(self, command_id: int, result: Any = None) -> bool:
        """Ends a dequeued command with its result; False if this worker no longer holds it."""
        ...


class SharedLaneQueue:
    """A `DistributedQueue` over lanes shared through a backend (``"local:DIR"`` or a Redis
    URL): `dequeue` takes the commands named in ``names`` that the shared lanes let start,
    by priority, caps and rate limits, exactly as ``QueueManager(backend=...)`` does, and the
    worker's slots are leased: call `renew` at least every ``lease`` seconds while holding
    commands, or they go to another worker."""

    def __init__(
        self,
        store: LaneStore,
        worker_id: str,
        partitions: list[str],
        names: list[str],
        lease: float,
    ) -> None:
        self._store = store
        self._worker_id = worker_id
        self._partitions = partitions
        self._names = names
        self._lease_ms = max(1, round(lease * 1000))

    @classmethod
    async def open(
        cls,
        backend: str,
        lanes: Iterable[LaneConfig],
        *,
        name: str = "agents",
        names: Iterable[str] = (),
        max_concurrency: int | None = None,
        lease: float = 10.0,
    ) -> SharedLaneQueue:
        """Joins the lanes ``name`` of ``backend`` as a worker that runs ``names``."""
        from .._core import LocalLaneStore, RedisLaneStore
        from ._shared_config import lane_settings, lane_specs, local_directory, settings_text

        backend = checked_backend(backend)
        name = checked_name(name)
        lease = checked_lease(lease)
        lane_list = list(lanes)
        directory = local_directory(backend)
        store: LaneStore
        if directory is not None:
            store = await LocalLaneStore.open(directory, name)
        else:
            store = await RedisLaneStore.open(backend, name)
        settings = lane_settings(lane_list, max_concurrency)
        await store.setup(settings_text(settings), lane_specs(lane_list), max_concurrency)
        worker_id = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        queue = cls(store, worker_id, [lane.lane_id for lane in lane_list], list(names), lease)
        await store.join(worker_id, queue._names, queue._lease_ms)
        return queue

    @property
    def worker_id(self) -> str:
        """This worker's id in the shared lanes (``host:pid:random``)."""
        return self._worker_id

    @property
    def partitions(self) -> list[str]:
        """The lane ids, which `enqueue` takes as partitions."""
        return list(self._partitions)

    async def enqueue(self, partition: str, name: str, payload: Any = None) -> int:
        """Submits the named command ``name`` with its JSON ``payload`` to the lane ``partition``
        and returns its id; `UnknownLaneError` for an unknown lane."""
        if partition not in self._partitions:
            raise UnknownLaneError(f"unknown partition: {partition!r} ({self._partitions})")
        text = json.dumps(payload, allow_nan=False)
        lane = self._partitions.index(partition)
        return await self._store.enqueue(self._worker_id, lane, name, None, text)

    async def dequeue(self, max_items: int = 1) -> list[QueuedCommand]:
        """Takes up to ``max_items`` commands the shared lanes let this worker start now (by
        priority, caps and rate limits); an empty list when none may."""
        claimed, _ = await self._store.claim(self._worker_id, max_items)
        return [
            QueuedCommand(
                command_id,
                self._partitions[lane],
                command_name or "",
                None if payload is None else json.loads(payload),
                attempt,
            )
            for command_id, lane, command_name, payload, attempt, _ in claimed
        ]

    async def complete(self, command_id: int, result: Any = None) -> bool:
        """Records a command's result (JSON) and frees its slot; False if this worker no longer
        held it (its lease lapsed)."""
        text = json.dumps(result, allow_nan=False)
        return await self._store.complete(self._worker_id, command_id, text)

    async def renew(self) -> list[int]:
        """Extends this worker's lease; returns the ids of commands it lost meanwhile."""
        return await self._store.renew(self._worker_id, self._names, self._lease_ms)

    async def close(self) -> None:
        """Leaves the lanes (complete or give back what you hold first)."""
        await self._store.leave(self._worker_id)
        self._store.close()
