"""`QueueManager`: named lanes of asyncio work, dispatched by priority by the Rust dispatcher
(how it runs: `lanemq.lanes._manager`). `CommandHandle` is what a submit returns; `Alert` is
what ``on_alert`` callbacks are given."""

from __future__ import annotations

from ._handle import CommandHandle
from ._manager import DEFAULT_LANES, Executable, QueueManager
from ._state import Alert

__all__ = ["DEFAULT_LANES", "Alert", "CommandHandle", "Executable", "QueueManager"]
