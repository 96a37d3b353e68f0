"""`JobWorker`'s reports to the backend: the outcomes gathered (completions, failures,
releases) in one call per kind, and the chores that run every period (stalled recovery; the
lease renewal is the cancel road's, `_cancels`)."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable

from .._core import OutcomeBatch
from .._results import result_value
from ..exceptions import (
    JobCancelledError,
    JobNotFoundError,
    JobStateError,
    LockMismatchError,
    PendingDependenciesError,
)
from ..job import Job
from . import _log as _worker_log
from ._retries import with_custom_delays
from ._state import WorkerState, log


class LockLostWarning(Exception):
    """Passed to ``error`` hooks when a job's outcome could not be reported because its lease
    was lost (another worker may have run it)."""

    def __init__(self, job_id: str, detail: str) -> None:
        super().__init__(f"job {job_id!r}: outcome not recorded: {detail}")
        self.job_id = job_id


# The text of a completion refused because the job is a parent with an unfinished child (the
# core's `PendingDependencies`): the job is still held, and its attempt fails instead.
_PENDING = " has pending dependencies"


class Reporting(WorkerState):
    """The part of `JobWorker` that reports outcomes and runs the periodic chores."""

    # -------------------------------------------------------------- reporting

    async def _flush(self) -> None:
        """Reports the outcomes gathered since the last flush, one call per kind."""
        book = self._book
        done = book.take_completions()
        if done:
            await self._report(done, 0)
        failed = book.take_failures()
        if failed:
            # A custom backoff's delay is the worker's to compute (its strategy is a function
            # here, a name in the job): it goes with the failure, so every backend retries
            # after it as after any explicit delay.
            items = await with_custom_delays(self._backoff_strategies, failed.jobs, failed.items)
            try:
                outcomes = await self._outcomes.fail_many(items)
            except Exception:
                book.put_back(failed)  # reported on the next try
                raise
            for job, item, (_, retried, problem) in zip(failed.jobs, items, outcomes, strict=True):
                error = item[2]
                if error.__class__ is str:  # a cancellation's reason (`_cancel_running`)
                    error = JobCancelledError(job.id, error)
                if problem is not None:
                    _worker_log.not_recorded(self.id, job.id, "failure", problem)
                    await self._hook("error", LockLostWarning(job.id, problem))
                    continue
                _worker_log.failed(self.id, job, error, retried)
                book.count_failed(retried)
                await self._hook("failed", job, error)
                if not retried:
                    await self._hook("dead", job, error)
        if self._hold_queue > 0:
            # Before the job given back is released, so no other worker claims it meanwhile.
            await self.queue.rate_limit(self._hold_queue)
            self._hold_queue = 0.0
        released = book.take_releases()
        if released:
            # All at once (a local queue commits calls issued together once; close() may
            # release a whole batch).
            answers = await asyncio.gather(
                *(self.queue.release(job_id, token) for job_id, token in released.items),
                return_exceptions=True,
            )
            broken: BaseException | None = None
            for job, answer in zip(released.jobs, answers, strict=True):
                # Not ours any more (stalled recovery took it, or it was removed): a release
                # tried again would be refused again.
                if isinstance(answer, (LockMismatchError, JobStateError, JobNotFoundError)):
                    _worker_log.not_recorded(self.id, job.id, "release", answer)
                    await self._hook("error", answer)
                elif isinstance(answer, BaseException):
                    book.release(job)  # released on the next try
                    broken = broken or answer
            if broken is not None:
                raise broken

    async def _report(self, done: OutcomeBatch, claim: int) -> list[Job]:
        """Reports the completions ``done`` and claims up to ``claim`` jobs."""
        items = done.items
        if not items:
            return await self.queue.claim(self.id, self.lease, claim)
        try:
            if claim:
                errors, jobs = await self._outcomes.complete_and_claim(
                    items, self.id, self.lease, claim
                )
            else:
                errors, jobs = await self._outcomes.complete_many(items), []
        except Exception:
            self._book.put_back(done)  # reported on the next try
            raise
        if errors:
            self._fail_pending(done.jobs, errors)
        self._book.count_completed(len(items) - len(errors))
        lost = dict(errors)
        _worker_log.completed(self.id, done, lost)
        for lost_id, detail in errors:
            if _PENDING not in detail:
                await self._hook("error", LockLostWarning(lost_id, detail))
        hooks = self._hooks["completed"]
        if hooks:
            # `_hook`, inline: no coroutine per job, and a hook that returns None (not
            # awaitable) is not asked whether it is.
            for job, item in zip(done.jobs, items, strict=True):
                if lost and job.id in lost:
                    continue
                # `result_value`, inline: a None result (most) is no call of its own.
                value = item[2]
                if value is not None:
                    value = result_value(value)
                for callback in hooks:
                    try:
                        outcome = callback(job, value)
                        if outcome is not None and inspect.isawaitable(outcome):
                            await outcome
                    except Exception:
                        log.exception("worker %s: completed hook %r raised", self.id, callback)
        done.clear()  # (reported: its jobs go now, before the claimed ones start)
        return jobs

    def _fail_pending(self, jobs: list[Job], errors: list[tuple[str, str]]) -> None:
        """The completions refused for pending dependencies fail their attempts instead (their
        jobs are still held; reported with the next failures), as BullMQ's worker fails a
        parent that moveToFinished refuses with "pending dependencies"."""
        pending = {job_id: detail for job_id, detail in errors if _PENDING in detail}
        for job in jobs:
            detail = pending.pop(job.id, None)
            if detail is not None:
                self._book.fail(job, PendingDependenciesError(detail), None, True)

    # ----------------------------------------------------------------- chores

    async def _every(self, period: float, chore: Callable[[], Awaitable[None]]) -> None:
        """Runs ``chore`` every ``period`` seconds until the worker has stopped."""
        while True:
            try:
                await asyncio.wait_for(self._stopped.wait(), period)
                return
            except asyncio.TimeoutError:
                pass
            await self._run_chore(chore)

    async def _run_chore(self, chore: Callable[[], Awaitable[None]]) -> None:
        """Runs ``chore`` once: a failure is logged (`_worker_log.Outage`) and goes to the
        ``error`` hooks, never further."""
        name = chore.__name__.lstrip("_")
        try:
            await chore()
        except Exception as error:
            self._outage.failed(name, error)
            await self._hook("error", error)
        else:
            self._outage.succeeded(name)

    async def _recover(self) -> None:
        recovered, failed = await self.queue.recover_stalled()
        _worker_log.stalled(self.id, recovered, failed)
        for job_id in recovered + failed:
            await self._hook("stalled", job_id)
        for job_id in failed:
            job = await self.queue.get_job(job_id)
            if job is not None:
                await self._hook("dead", job, RuntimeError(job.failed_reason or "stalled"))
