"""lanemq: a job queue and lane scheduler for asyncio services, with a Rust core."""

from __future__ import annotations

import logging

from . import _tracing
from ._core import (
    AlertConfig,
    Backoff,
    DeadLetter,
    Dedup,
    JobOptions,
    KeepJobs,
    LaneConfig,
    PriorityBoost,
    RateLimit,
    RetryPolicy,
    __version__,
)
from .events import Event, Subscription
from .exceptions import (
    BackendAuthenticationError,
    BackendConnectionError,
    CancelRequestedError,
    CommandFailedError,
    CommandNotFoundError,
    CommandStateError,
    CommandTimeoutError,
    ConfigError,
    DelayedError,
    DrainTimeoutError,
    GroupMaxSizeExceededError,
    JobCancelledError,
    JobError,
    JobFailedError,
    JobNotFoundError,
    JobStateError,
    LaneError,
    LanemqError,
    LockMismatchError,
    PendingDependenciesError,
    RateLimitError,
    ShutdownError,
    StorageError,
    UnknownLaneError,
    UnrecoverableError,
)
from .flows import Dependencies, FlowJob, JobNode, ParentRef
from .job import Job, LogEntry
from .jobs import GroupInfo, GroupLimits, JobPage
from .lanes import DEFAULT_LANES, Alert, CommandHandle, QueueManager
from .observability.observe import MetricsTime, QueueMetrics, WorkerInfo
from .queue import (
    InMemoryJobQueue,
    JobQueue,
    JobResult,
    LocalJobQueue,
    MemoryGroup,
    QueueEvent,
    QueueStats,
    RedisJobQueue,
)
from .schedulers import JobScheduler, Repeat
from .storage import LocalStorage
from .urls import from_url, list_queue_names
from .worker import JobWorker, LockLostWarning, UnknownJobNameWarning

# A library does not configure logging: without a handler of the application's, nothing is
# printed (not even Python's "last resort" warnings).
logging.getLogger("lanemq").addHandler(logging.NullHandler())

# OpenTelemetry tracing turns on by itself when a real tracer provider is set, now or later
# (`_tracing.Watch`); without the API installed this costs one look for it.
_tracing.start()

__all__ = [
    "DEFAULT_LANES",
    "Alert",
    "AlertConfig",
    "BackendAuthenticationError",
    "BackendConnectionError",
    "Backoff",
    "CancelRequestedError",
    "CommandFailedError",
    "CommandHandle",
    "CommandNotFoundError",
    "CommandStateError",
    "CommandTimeoutError",
    "ConfigError",
    "DeadLetter",
    "Dedup",
    "DelayedError",
    "Dependencies",
    "DrainTimeoutError",
    "Event",
    "FlowJob",
    "GroupInfo",
    "GroupLimits",
    "GroupMaxSizeExceededError",
    "InMemoryJobQueue",
    "Job",
    "JobCancelledError",
    "JobError",
    "JobFailedError",
    "JobNode",
    "JobNotFoundError",
    "JobOptions",
    "JobPage",
    "JobQueue",
    "JobResult",
    "JobScheduler",
    "JobStateError",
    "JobWorker",
    "KeepJobs",
    "LaneConfig",
    "LaneError",
    "LanemqError",
    "LocalJobQueue",
    "LocalStorage",
    "LockLostWarning",
    "LockMismatchError",
    "LogEntry",
    "MemoryGroup",
    "MetricsTime",
    "ParentRef",
    "PendingDependenciesError",
    "PriorityBoost",
    "QueueEvent",
    "QueueManager",
    "QueueMetrics",
    "QueueStats",
    "RateLimit",
    "RateLimitError",
    "RedisJobQueue",
    "Repeat",
    "RetryPolicy",
    "ShutdownError",
    "StorageError",
    "Subscription",
    "UnknownJobNameWarning",
    "UnknownLaneError",
    "UnrecoverableError",
    "WorkerInfo",
    "__version__",
    "from_url",
    "list_queue_names",
]
