"""`JobWorker`'s jobs as asyncio tasks: a claim's batch started (the per-job hot path),
a timeout, and a task's end turned into the job's outcome for the book."""

from __future__ import annotations

import asyncio
import contextvars
import functools
import logging
import time
import traceback
from collections.abc import Callable, Sequence
from typing import Any

from ..exceptions import DelayedError, RateLimitError, UnrecoverableError
from ..job import Job
from . import _log as _worker_log
from ._batches import start_batched
from ._calls import AsyncProcessor
from ._reporting import Reporting
from ._state import log
from ._unknown import postpone_unknown

_BASE_CREATE_TASK = asyncio.BaseEventLoop.create_task


class Tasks(Reporting):
    """The part of `JobWorker` that starts jobs' tasks and turns their ends into outcomes."""

    def _start(self, job: Job) -> None:
        self._start_all((job,))

    def _start_all(self, jobs: Sequence[Job]) -> None:
        """Starts a task for each of ``jobs`` (a claim's batch). What is the same for every job
        of the batch is looked up once: this is the per-job hot path."""
        loop = self._loop
        assert loop is not None
        processors = self._processors
        default = self._default
        start = self._book.start
        done = self._book.task_done
        timers = self._timers
        debug = log.isEnabledFor(logging.DEBUG)  # (the only per-job cost of logging)
        # The context `_done` runs in, one for the batch rather than a copy per job (what
        # `add_done_callback` makes by default): it reads no context variable, and a copy per
        # job is one more young object per job for the collector to count.
        context = contextvars.copy_context()
        # `loop.create_task` without a task factory is this call behind a Python-level frame
        # of its own (asyncio's base loop): a visible part of a job's cost. A loop that brings
        # its own create_task (uvloop) or a factory keeps it.
        task_type = asyncio.Task
        direct = type(loop).create_task is _BASE_CREATE_TASK and loop.get_task_factory() is None
        # One claim's jobs share one lease expiry. One whose lease ran out before it starts (a
        # processor blocked the loop meanwhile) is given back unstarted: run, it could run
        # twice, once stalled recovery took it, and a stall it never had would count.
        expires = jobs[0]._record.lock_expires_at if jobs else None
        if expires is not None and time.time() * 1000 >= expires:
            for job in jobs:
                self._give_back_unstarted(job)
            return
        if self._awaited_cancels:  # (one look per claim: a cancel heard before the start)
            loop.call_soon(self._cancel_awaited, jobs)
        if self._batchers:  # (one look per claim: the jobs of batch processors wait for theirs)
            jobs = start_batched(self, jobs)
        # The jobs after the first start after its first step, which may block the loop: each
        # checks its lease then (`_if_held`), as the first was checked here.
        guard: int | None = None
        for job in jobs:
            processor = processors.get(job.name, default) if processors else default
            if processor is None:
                if not self.unknown_name_retries:
                    error = UnrecoverableError(f"no processor for job name {job.name!r}")
                    self._book.fail(job, error, None, False)
                    continue
                processor = functools.partial(postpone_unknown, self)
            if debug:
                _worker_log.started(self.id, job)
            coroutine: Any = processor(job) if guard is None else _if_held(processor, job, guard)
            guard = expires
            # Named after its job: asyncio would otherwise format a "Task-<n>" name per task,
            # a visible part of a job's cost (and the job's id says more in a task dump).
            name = job._record.id
            if direct:
                task: asyncio.Task[Any] = task_type(coroutine, loop=loop, name=name)
            else:
                task = loop.create_task(coroutine, name=name)
            timeout = start(task, job)  # (the job's timeout, read by the book)
            if timeout is not None:
                timers[task] = loop.call_later(timeout, self._time_out, task)
            task.add_done_callback(done, context=context)

    def _cancel_awaited(self, jobs: Sequence[Job]) -> None:
        """Overridden by the cancel road (`Cancels`)."""

    def _give_back_unstarted(self, job: Job) -> None:
        job.lease_lost = True
        self._book.release(job)
        log.warning(
            "worker %s: job %s: its lease ran out before it started (was the event loop "
            "blocked?): released unstarted",
            self.id,
            job.id,
        )

    def _time_out(self, task: asyncio.Task[Any]) -> None:
        """The job's timeout passed: its task is cancelled, and the job fails with
        `TimeoutError` now, not when the task ends (`_end_early`)."""
        self._end_early(task, _timed_out, "timed out")

    def _end_early(
        self,
        task: asyncio.Task[Any],
        failure: Callable[[Job], tuple[BaseException | str, str | None, bool]],
        why: str,
    ) -> None:
        """Ends a running job before its task does (a timeout, a cancellation): the task is
        cancelled and the job fails with ``failure(job)`` (error, stack trace, retry) now, not
        when the task ends: a processor that catches `CancelledError` would otherwise hold its
        slot and lease and complete late. The slot is free at once, and the failure, reported
        with the next outcomes, lets go of the lease. The task is then a stray, counted until
        it ends; what it returns is ignored."""
        timer = self._timers.pop(task, None)
        if timer is not None:
            timer.cancel()
        self._releasing.discard(task)
        if task.done():
            return
        task.cancel()
        job = self._book.finish(task)
        if job is None:
            return  # add_children parked it: nothing to report
        job.lease_lost = True  # its writes from now on are refused
        self._book.fail(job, *failure(job))
        self._strays.add(task)
        task.add_done_callback(self._strays.discard)
        loop = self._loop
        assert loop is not None
        # After the task's turn to take the cancellation: a task that ended then is no stray.
        loop.call_soon(self._warn_if_stray, task, job.id, why)
        self._poke()

    def _warn_if_stray(self, task: asyncio.Task[Any], job_id: str, why: str) -> None:
        if not task.done():
            log.warning(
                "worker %s: job %s %s but its task did not end when cancelled (does it "
                "catch CancelledError?): the job failed, the task runs on as a stray and its "
                "result will be ignored (%d stray task(s))",
                self.id,
                job_id,
                why,
                len(self._strays),
            )

    def _done(self, task: asyncio.Task[Any]) -> None:
        if self._timers:
            timer = self._timers.pop(task, None)
            if timer is not None:
                timer.cancel()
        released_at_close = False
        if self._releasing:
            released_at_close = task in self._releasing
            self._releasing.discard(task)
        book = self._book
        try:
            raised = task.exception()  # (retrieved: asyncio does not log it)
        except asyncio.CancelledError:
            cancelled, raised = True, None
        else:
            if raised is None:
                book.completed(task, task.result())  # (nothing to report of a parked job)
                wake = self._wake  # (`_poke`, inline: this runs once per job)
                if wake is not None:
                    # Let go of it once woken: the batch's other jobs skip the check.
                    self._wake = None
                    if not wake.done():
                        wake.set_result(None)
                return
            cancelled = False
        job = book.finish(task)
        if job is None:
            # add_children parked it (lock released): nothing to report, whatever followed.
            self._poke()
            return
        if cancelled:
            # The worker lets go of the job: writes still to come from it (a plain def
            # processor's thread runs on) are refused.
            job.lease_lost = True
            if released_at_close:
                book.release(job)  # close()'s grace ran out: back to waiting
            elif not self._force:
                book.fail(job, asyncio.CancelledError("the job was cancelled"), None, True)
            # Under close(force=True) the job is abandoned to stalled recovery.
        elif raised.__class__ is _LeaseLapsed:
            self._give_back_unstarted(job)
        elif isinstance(raised, DelayedError):
            pass  # the processor already moved the job to delayed
        elif isinstance(raised, RateLimitError):
            # As BullMQ's worker.rateLimit(): every consumer of the queue waits, not only this
            # worker (set by `_flush` before the job goes back), and this worker pauses too.
            self._hold_queue = max(self._hold_queue, raised.delay)
            # The jobs claimed ahead go back too (they must not start in the pause), before
            # it: each release goes to the front, so the queue keeps the claim order.
            for held in reversed(book.take_ahead()):
                book.release(held)
            book.release(job, raised.delay)  # and claims pause that long
            log.debug("worker %s: rate limited: claims paused for %ss", self.id, raised.delay)
        else:
            assert raised is not None  # (a task that returned was recorded above)
            retry = not isinstance(raised, UnrecoverableError) and self._retry_policy_for(
                job.name
            ).allows(raised)
            book.fail(job, raised, _trace(raised), retry)
        self._poke()


def _timed_out(job: Job) -> tuple[BaseException, None, bool]:
    return TimeoutError(f"job {job.id} timed out after {job.timeout}s"), None, True


class _LeaseLapsed(Exception):
    """Raised by `_if_held` in place of a processor whose job's lease ran out."""


async def _if_held(processor: AsyncProcessor, job: Job, expires: int | None) -> Any:
    """Calls ``processor`` if the job's lease (until ``expires``, ms) has not run out yet."""
    if expires is not None and time.time() * 1000 >= expires:
        raise _LeaseLapsed
    return await processor(job)


def _trace(error: BaseException) -> str | None:
    if error.__traceback__ is None:
        return None
    return "".join(traceback.format_exception(type(error), error, error.__traceback__))
