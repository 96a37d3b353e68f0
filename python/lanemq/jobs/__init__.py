"""Job queues. `JobQueue` is the job contract as Python sees it, over any Rust backend
(`JobQueueCore`); `InMemoryJobQueue` is the in-process one. Every method is a coroutine; with an
in-process backend the awaited call is already resolved, so it costs no event-loop round trip.

Times: ``delay``, ``lease``, ``timeout`` and ``grace`` are seconds; timestamps are milliseconds
since the Unix epoch (UTC). Methods that depend on the clock take ``now`` (milliseconds) so
tests can drive time; it defaults to the wall clock.

`JobQueue` is made of one part per concern, a module each: `lifecycle` (add, claim, finish),
`flows`, `reads`, `search` (jobs by criteria), `admin` (editing jobs, the queue's state),
`dedup`, `schedulers`, `events`, `observe` (metrics, workers), `groups` and `cancels`; one
module per backend: `memory` (with `MemoryGroup`), `local` and `redis`."""

from __future__ import annotations

from ._common import STATES, BulkItem
from .events import QueueEvent
from .groups import GroupInfo, GroupLimits
from .local import LocalJobQueue, LocalSync
from .memory import InMemoryJobQueue, MemoryGroup
from .queue import JobQueue
from .reads import JobResult, QueueStats
from .redis import RedisJobQueue
from .search import JobPage

__all__ = [
    "STATES",
    "BulkItem",
    "GroupInfo",
    "GroupLimits",
    "InMemoryJobQueue",
    "JobPage",
    "JobQueue",
    "JobResult",
    "LocalJobQueue",
    "LocalSync",
    "MemoryGroup",
    "QueueEvent",
    "QueueStats",
    "RedisJobQueue",
]
