"""Job queues: the names `lanemq.queue` has always had, which now live in `lanemq.jobs` (one
module per concern of `JobQueue`, one per backend). Import them from `lanemq` (or from here,
which keeps working)."""

from __future__ import annotations

from .jobs import (
    STATES,
    InMemoryJobQueue,
    JobQueue,
    JobResult,
    LocalJobQueue,
    LocalSync,
    MemoryGroup,
    QueueEvent,
    QueueStats,
    RedisJobQueue,
)

# (not in __all__, but read here: the type `add_bulk` takes, the syncs `local:` URLs check, and
# the queues this process made)
from .jobs import BulkItem as BulkItem
from .jobs.local import _LOCAL_SYNCS as _LOCAL_SYNCS
from .jobs.local import _local_queues as _local_queues
from .jobs.redis import _redis_queues as _redis_queues

__all__ = [
    "STATES",
    "InMemoryJobQueue",
    "JobQueue",
    "JobResult",
    "LocalJobQueue",
    "LocalSync",
    "MemoryGroup",
    "QueueEvent",
    "QueueStats",
    "RedisJobQueue",
]
