"""Cancelling jobs: one that has not started never runs; a running one is stopped on
whichever worker, process or host runs it."""

from __future__ import annotations

from ..exceptions import JobNotFoundError
from ._base import QueueBase

#: The states whose jobs `cancel_group` cancels: every one a job can still run from.
_UNFINISHED = ["waiting", "delayed", "waiting_children", "active"]


class QueueCancels(QueueBase):
    """The part of `JobQueue` that cancels jobs."""

    async def cancel(
        self, job_id: str, reason: str = "cancelled", *, now: int | None = None
    ) -> str:
        """Cancels a job. A waiting, prioritized, delayed or waiting-for-children job fails
        for good at once with ``reason`` and never runs (``"failed"``); an active one is
        stopped on whichever worker runs it, which fails it for good with ``reason``, no
        retry (``"requested"``); a finished one is left as it is (``"finished"``). Either way
        it acts, a ``cancelled`` event follows. A flow's parent is cancelled first, then its
        unfinished descendants, wherever they are (they would otherwise run for nothing).
        `JobNotFoundError` if there is no such job."""
        outcome = await self._core.cancel(job_id, reason, now)
        if outcome != "finished":
            await self._cancel_descendants(job_id, reason, now)
        return outcome

    async def last_cancel_seq(self) -> int:
        """The seq of the newest cancel request of this queue (0: none yet): where a listener
        of `wait_cancels` starts. `JobWorker` listens by itself."""
        return await self._core.last_cancel_seq()

    async def wait_cancels(
        self, after: int, timeout: float | None = None
    ) -> list[tuple[int, str, str]]:
        """The cancel requests of running jobs past seq ``after``, oldest first, as
        ``(seq, job_id, reason)``; with none yet, waits up to ``timeout`` seconds for one
        (None: no wait). Pushed, never polled per job. Requests older than about a minute
        may be gone (a worker's lease renewal answers for those: `CancelRequestedError`)."""
        return await self._core.wait_cancels(after, timeout)

    async def _cancel_descendants(self, parent_id: str, reason: str, now: int | None) -> None:
        """Cancels the unprocessed children of ``parent_id`` (in this queue or its siblings),
        each before its own children."""
        _, unprocessed, _, _, _ = await self._core.get_dependencies(parent_id, (0, 0, 0, 0), None)
        for key in unprocessed:
            queue_name, _, child_id = key.partition(":")
            queue = self.sibling(queue_name)
            try:
                outcome = await queue._core.cancel(child_id, reason, now)
            except JobNotFoundError:
                continue  # removed meanwhile
            if outcome != "finished":
                await queue._cancel_descendants(child_id, reason, now)

    async def cancel_group(
        self, group: str, reason: str = "cancelled", *, now: int | None = None
    ) -> int:
        """`cancel` for each unfinished job of ``group`` (waiting, prioritized, delayed,
        waiting for children or active when called); returns how many it cancelled."""
        cancelled = 0
        for job_id in await self._core.group_job_ids(group, _UNFINISHED):
            try:
                outcome = await self.cancel(job_id, reason, now=now)
            except JobNotFoundError:
                continue  # removed meanwhile
            cancelled += outcome != "finished"
        return cancelled
