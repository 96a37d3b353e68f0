"""Cancelling jobs: one that has not started never runs; a running one is stopped on
whichever worker, process or host runs it."""

from __future__ import annotations

from ..exceptions import JobNotFoundError
from ._base import QueueBase

#: The states whose jobs `cancel_group` cancels: every one a job can still run from.
_UNFINISHED = ["waiting", "prioritized", "delayed", "waiting-children", "active"]


class QueueCancels(QueueBase):
    """The part of `JobQueue` that cancels jobs."""

    async def cancel(
        self, job_id: str, reason: str = "cancelled", *, now: int | None = None
    ) -> str:
        """Cancels a job. A waiting, prioritized, delayed or waiting-for-children job fails
        for good at once with ``reason`` and never runs (``"failed"``); an active one is
        stopped on whichever worker runs it, which fails it for good with ``reason``, no
        retry (``"requested"``); a finished one is left as it is (``"finished"``). Either way
        it acts, a ``cancelled`` event follows. `JobNotFoundError` if there is no such job."""
        return await self._core.cancel(job_id, reason, now)

    async def cancel_group(
        self, group: str, reason: str = "cancelled", *, now: int | None = None
    ) -> int:
        """`cancel` for each unfinished job of ``group`` (waiting, prioritized, delayed,
        waiting for children or active when called); returns how many it cancelled."""
        cancelled = 0
        for job_id in await self._core.group_job_ids(group, _UNFINISHED):
            try:
                outcome = await self._core.cancel(job_id, reason, now)
            except JobNotFoundError:
                continue  # removed meanwhile
            cancelled += outcome != "finished"
        return cancelled
