"""`JobWorker`: runs processors for a queue's jobs: ``async def`` ones on the caller's event
loop, plain ``def`` ones in worker threads. See `JobWorker` for how it claims, runs and
reports jobs; `LockLostWarning` and `UnknownJobNameWarning` are what its ``error`` hooks may
be given."""

from __future__ import annotations

from ._reporting import LockLostWarning
from ._unknown import UnknownJobNameWarning
from ._worker import JobWorker

__all__ = ["JobWorker", "LockLostWarning", "UnknownJobNameWarning"]
