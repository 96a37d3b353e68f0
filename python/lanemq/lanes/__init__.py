"""`QueueManager`: named lanes of asyncio work, dispatched by priority by the Rust dispatcher
(how it runs: `lanemq.lanes._manager`). `CommandHandle` is what a submit returns; `Alert` is
what ``on_alert`` callbacks are given. With ``backend=``, managers in many processes share
their lanes; `protocols` holds the storage and distributed-queue interfaces."""

from __future__ import annotations

from ._handle import CommandHandle
from ._manager import DEFAULT_LANES, Executable, QueueManager
from ._state import Alert
from ._store import LaneStore
from .protocols import DistributedQueue, LaneStorage, QueuedCommand, SharedLaneQueue

__all__ = [
    "DEFAULT_LANES",
    "Alert",
    "CommandHandle",
    "DistributedQueue",
    "Executable",
    "LaneStorage",
    "LaneStore",
    "QueueManager",
    "QueuedCommand",
    "SharedLaneQueue",
]
