"""lanemq: a job queue and lane scheduler for asyncio services, with a Rust core."""

from __future__ import annotations

from ._core import AlertConfig, DeadLetter, LaneConfig, PriorityBoost, RateLimit, RetryPolicy
from ._handle import CommandHandle
from .events import Event, Subscription
from .exceptions import (
    CommandNotFoundError,
    CommandStateError,
    CommandTimeoutError,
    ConfigError,
    DrainTimeoutError,
    LaneError,
    ShutdownError,
    StorageError,
    UnknownLaneError,
    UnrecoverableError,
)
from .lanes import DEFAULT_LANES, Alert, QueueManager
from .storage import LocalStorage

__all__ = [
    "DEFAULT_LANES",
    "Alert",
    "AlertConfig",
    "CommandHandle",
    "CommandNotFoundError",
    "CommandStateError",
    "CommandTimeoutError",
    "ConfigError",
    "DeadLetter",
    "DrainTimeoutError",
    "Event",
    "LaneConfig",
    "LaneError",
    "LocalStorage",
    "PriorityBoost",
    "QueueManager",
    "RateLimit",
    "RetryPolicy",
    "ShutdownError",
    "StorageError",
    "Subscription",
    "UnknownLaneError",
    "UnrecoverableError",
]
