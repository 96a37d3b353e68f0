"""`JobWorker`'s cancel road: the queue's cancel requests (`JobQueue.cancel`) stop the running
jobs they name. Two ways in, one road: the listener hears each request as it is pushed
(`wait_cancels`: the queue's own wake-up, never a poll per job), and a lease renewal that
answers "cancellation requested" (`_renew`) covers a request the listener missed. Either way
`_cancel_running` sets ``job.cancelled``, cancels the job's task (the processor sees
`asyncio.CancelledError`; a plain ``def`` one in a thread sees ``job.cancelled``) and fails the
job for good now with the reason, as a timeout fails its job (`Tasks._end_early`)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Coroutine, Sequence
from typing import Any, TypeVar

from .. import _checks
from ..exceptions import JobCancelledError, JobStateError
from ..job import Job
from ._state import log, retrieve
from ._tasks import Tasks

T = TypeVar("T")

#: How long one wait for requests lasts (it ends at once when one is pushed).
LISTEN_SECONDS = 5.0
#: How long a request for a job claimed but not started yet is kept (`_await_start`).
AWAIT_START_SECONDS = 60.0
#: The first wait after the listener failed (a connection lost), doubling up to the last.
RETRY_SECONDS = (0.1, 5.0)


class _Stopped(Exception):
    """The worker stopped while the listener waited."""


async def _unless_stopped(call: Awaitable[T], stopped: asyncio.Future[Any]) -> T:
    """``call``'s value, or `_Stopped` once ``stopped`` is done first (``call`` dropped)."""
    pending = asyncio.ensure_future(call)
    await asyncio.wait((pending, stopped), return_when=asyncio.FIRST_COMPLETED)
    if not pending.done():
        pending.cancel()
        raise _Stopped
    return pending.result()


class Cancels(Tasks):
    """The part of `JobWorker` that stops the jobs whose cancellation was requested."""

    def _listen_cancels(self) -> Coroutine[Any, Any, None]:
        """The listener (`_listen`), its start asked for now: where it starts is read before
        the worker's first claim is sent, so a request for a job of that claim is past it
        (the in-process backends answer in call order)."""
        try:
            first: Awaitable[int] | None = self.queue._core.last_cancel_seq()
        except Exception:
            first = None  # (asked again by the listener, which handles the failure)
        return self._listen(first)

    async def _listen(self, first: Awaitable[int] | None) -> None:
        """Runs while the worker runs (its chores' lifetime): waits for the queue's cancel
        requests past the newest one when it started, and stops the running jobs they name.
        A failure (the backend unreachable) is logged once and retried with a back-off; it
        never ends the worker."""
        core = self.queue._core
        stopped = asyncio.ensure_future(self._stopped.wait())
        last: int | None = None
        retry = RETRY_SECONDS[0]
        failing = False
        try:
            while not stopped.done():
                try:
                    if last is None:
                        asked, first = first or core.last_cancel_seq(), None
                        last = await _unless_stopped(asked, stopped)
                        continue
                    requests = await _unless_stopped(
                        core.wait_cancels(last, LISTEN_SECONDS), stopped
                    )
                except _Stopped:
                    return
                except JobStateError as refused:
                    # A backend without cancellation: nothing will ever be pushed.
                    log.info("worker %s: no cancel requests to listen to: %s", self.id, refused)
                    return
                except Exception as error:
                    if not failing:
                        log.warning(
                            "worker %s: listening for cancel requests failed (%s); retrying "
                            "(renewals still answer for cancelled jobs)",
                            self.id,
                            error,
                        )
                        failing = True
                    await asyncio.wait((stopped,), timeout=retry)
                    retry = min(retry * 2, RETRY_SECONDS[1])
                    continue
                if failing:
                    log.info("worker %s: listening for cancel requests again", self.id)
                    failing, retry = False, RETRY_SECONDS[0]
                for seq, job_id, reason in requests:
                    last = max(last, seq)
                    self._cancel_running(job_id, reason)
        finally:
            stopped.cancel()

    async def _renew(self) -> None:
        """Renews the leases of the running jobs: a lost one is marked (its writes refused),
        one whose cancellation was requested is stopped (the road of a missed push)."""
        held = self._book.leases()
        if not held:
            return
        now = int(time.time() * 1000)
        lost, requested = await self.queue._core.renew_leases(
            held, _checks.lease_ms(self.lease), now
        )
        if lost:
            for job in self._book.holding(lost):
                job.lease_lost = True
        for job_id, reason in requested:
            self._cancel_running(job_id, reason)

    async def _await_start(self, job_id: str, reason: str) -> None:
        """Remembers a request for an active job this worker does not run yet, by the token
        of the job's lock now: should this worker start that claim of it (its answer was in
        flight), `_cancel_awaited` stops it at once. Kept a minute at most (the renewal
        answers for it after that); a claim by another worker never matches."""
        record = await self.queue._core.get_job(job_id)
        token = None if record is None or record.state != "active" else record.lock_token
        if token is None:
            return
        now = time.monotonic()
        awaited = self._awaited_cancels
        for stale in [k for k, (_, _, at) in awaited.items() if now - at > AWAIT_START_SECONDS]:
            del awaited[stale]
        awaited[job_id] = (token, reason, now)
        if self._book.running_job(job_id) is not None:
            self._cancel_running(job_id, reason)  # started meanwhile

    def _cancel_awaited(self, jobs: Sequence[Job]) -> None:
        """Stops the jobs just started whose cancellation was heard before they started."""
        awaited = self._awaited_cancels
        for job in jobs:
            heard = awaited.get(job.id)
            if heard is not None and heard[0] == job.lock_token:
                del awaited[job.id]
                self._cancel_running(job.id, heard[1])

    def _cancel_running(self, job_id: str, reason: str) -> None:
        """Stops the running job ``job_id``, if this worker runs it, and fails it for good
        with ``reason`` (failed reason ``reason``, stack trace ``JobCancelledError: <reason>``,
        no retry). A job of a batch is failed alone; once all of a batch's jobs ended, its
        processor is cancelled (`run_batch`)."""
        found = self._book.running_job(job_id)
        if found is None:
            held = self._book.drop_ahead(job_id)
            if held is not None:  # claimed ahead, not started: dropped, failed for good
                held.cancelled = True
                held.lease_lost = True
                log.info(
                    "worker %s: job %s cancelled before it started: %s", self.id, job_id, reason
                )
                self._book.fail(held, reason, f"JobCancelledError: {reason}", False)
                self._poke()
                return
            # Not here, or claimed by this worker and not started yet: the claim's answer may
            # still be on its way. Which one the job's lock says (`_await_start`).
            if self._loop is not None:
                task = self._loop.create_task(self._await_start(job_id, reason))
                task.add_done_callback(retrieve)
            return
        task, job = found
        if job.cancelled:
            return  # heard twice (the push and a renewal): stopped already
        job.cancelled = True
        try:
            job.set_as_failed(JobCancelledError(job.id, reason))
        except RuntimeError:
            pass  # not in a running batch
        log.info("worker %s: job %s cancelled: %s", self.id, job.id, reason)
        trace = f"JobCancelledError: {reason}"
        self._end_early(task, lambda _: (reason, trace, False), "was cancelled")
