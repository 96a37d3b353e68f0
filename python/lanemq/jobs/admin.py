"""Editing jobs and managing the queue: promote, retry, logs, pause, drain, limits."""

from __future__ import annotations

from typing import Any

from .. import _json
from ..exceptions import ConfigError
from ..job import Job, LogEntry
from ._base import QueueBase


class QueueAdmin(QueueBase):
    """The part of `JobQueue` that edits jobs and sets the queue's state."""

    async def promote(self, job_id: str, *, now: int | None = None) -> None:
        """Makes a delayed job waiting now."""
        await self._core.promote(job_id, now)

    async def promote_due(self, *, now: int | None = None) -> int:
        """Makes waiting only the delayed jobs that are due (their delay or retry backoff
        over), earliest first, as a worker's every claim does first. Returns how many; each
        emits ``waiting``. For a queue no worker claims from for a while (paused, or with its
        workers stopped), so that its counts and listings show due jobs as waiting."""
        return await self._core.promote_due(now)

    async def promote_jobs(self, count: int | None = None, *, now: int | None = None) -> int:
        """Makes delayed jobs waiting now, due or not, earliest first (BullMQ's
        ``promoteJobs``): at most ``count`` of them (None: all; BullMQ's ``count`` is the size
        of the batches in which it promotes them all). Returns how many were promoted; each
        emits ``waiting``, as `promote` does."""
        return await self._core.promote_jobs(count, now)

    async def reschedule(self, job_id: str, delay: float, *, now: int | None = None) -> None:
        """Moves a delayed job's due time to ``delay`` seconds from now (BullMQ's
        ``changeDelay``); a job in another state raises `JobStateError`, changing nothing
        (`delay_job` delays a waiting job)."""
        await self._core.reschedule(job_id, delay, now)

    async def delay_job(self, job_id: str, delay: float, *, now: int | None = None) -> None:
        """Delays a waiting (or delayed) job to ``delay`` seconds from now; it keeps its place
        in its priority when it is due."""
        await self._core.delay_job(job_id, delay, now)

    async def retry_job(
        self, job_id: str, *, reset_attempts: bool = False, now: int | None = None
    ) -> None:
        """Moves a failed (or completed) job back to waiting, as BullMQ's ``job.retry()``: its
        attempts made and stalled count stay, so a job that used all its attempts gets one
        more run, whose failure is final. ``reset_attempts=True`` (BullMQ's
        ``resetAttemptsMade``) gives it its full set of attempts again."""
        if type(reset_attempts) is not bool:
            raise ConfigError(f"invalid reset_attempts: {reset_attempts!r} (must be True or False)")
        await self._core.retry_job(job_id, reset_attempts, now)

    async def update_priority(self, job_id: str, priority: int, lifo: bool = False) -> None:
        """Changes a job's priority (and LIFO placement); a waiting job moves in the order."""
        await self._core.update_priority(job_id, priority, lifo)

    async def update_data(self, job_id: str, data: Any) -> None:
        """Replaces a job's data (JSON; `TypeError` for anything JSON cannot hold)."""
        await self._core.update_data(job_id, _json.dumps(data, f"data of job {job_id!r}"))

    async def update_progress(self, job_id: str, value: Any, *, now: int | None = None) -> None:
        """Records a job's progress, any JSON value (a percentage, a dict)."""
        await self._core.update_progress(job_id, _json.dumps(value, "progress"), now)

    async def _write_progress(self, job: Job, value: Any) -> None:
        await job.ensure_lease()
        await self.update_progress(job.id, value)

    async def add_log(
        self, job_id: str, line: str, keep: int = 0, *, now: int | None = None
    ) -> int:
        """Appends a log line to a job (keeping the newest ``keep`` when > 0), recorded as
        written at ``now`` (ms since the epoch; None: the clock), and returns the count;
        `ConfigError` for a negative ``keep``."""
        if keep < 0:
            raise ConfigError(f"invalid keep: {keep} (must be >= 0)")
        return await self._core.add_log(job_id, str(line), keep, now)

    async def get_logs(
        self, job_id: str, start: int = 0, end: int = -1, ascending: bool = True
    ) -> tuple[list[str], int]:
        """Log lines ``start..=end`` and the total count."""
        return await self._core.get_logs(job_id, start, end, ascending)

    async def get_log_entries(
        self, job_id: str, start: int = 0, end: int = -1, ascending: bool = True
    ) -> tuple[list[LogEntry], int]:
        """Log lines ``start..=end`` as `LogEntry` (each line's text and when it was written:
        ms since the epoch, None for a line an older version stored), and the total count."""
        rows, total = await self._core.get_log_entries(job_id, start, end, ascending)
        return [LogEntry(time, text) for time, text in rows], total

    async def clear_logs(self, job_id: str, keep: int = 0) -> None:
        """Deletes a job's log lines, keeping the newest ``keep``; `ConfigError` for a negative
        ``keep``."""
        if keep < 0:
            raise ConfigError(f"invalid keep: {keep} (must be >= 0)")
        await self._core.clear_logs(job_id, keep)

    async def save_stacktrace(
        self, job_id: str, lines: list[str], reason: str | None = None
    ) -> None:
        """Adds the stack trace ``lines`` of a failed attempt to a job (and its ``failed_reason``
        when given), as a worker does."""
        await self._core.save_stacktrace(job_id, list(lines), reason)

    async def remove(self, job_id: str, *, now: int | None = None) -> None:
        """Removes a job with its whole tree of children, in every queue (as BullMQ does);
        refused with `JobStateError`, changing nothing, while a worker holds the lock of a job
        of the tree, and for a job scheduler's pending occurrence (as in BullMQ;
        `remove_scheduler` removes it). A child still pending leaves its parent (released if it
        was the last)."""
        await self._core.remove(job_id, now)

    async def pause(self, *, now: int | None = None) -> None:
        """Stops handing out jobs (adds are still accepted)."""
        await self._core.pause(now)

    async def resume(self, *, now: int | None = None) -> None:
        """Hands out jobs again after `pause`, waking idle workers."""
        await self._core.resume(now)

    async def is_paused(self) -> bool:
        """Whether the queue is paused (`pause`)."""
        return await self._core.is_paused()

    async def drain(self, delayed: bool = False, *, now: int | None = None) -> int:
        """Removes all waiting jobs (and delayed ones with ``delayed``), except the pending
        occurrences of job schedulers, as BullMQ does; returns how many. Schedulers and their
        pending occurrences stay."""
        return await self._core.drain(delayed, now)

    async def clean(
        self, grace: float, limit: int = 0, state: str = "completed", *, now: int | None = None
    ) -> list[str]:
        """Removes up to ``limit`` (0 = all) jobs in ``state`` older than ``grace`` seconds,
        except the pending occurrences of job schedulers (as BullMQ does); returns their ids."""
        if not 0 <= limit < 2**63:
            raise ConfigError(f"invalid limit: {limit} (must be >= 0 and below 2**63)")
        return await self._core.clean(grace, limit, state, now)

    async def obliterate(self, force: bool = False, *, now: int | None = None) -> None:
        """Deletes the queue's jobs, job schedulers, events and settings. Pauses first; with
        active jobs it is refused (`JobStateError`) and the queue stays paused, unless
        ``force``. Counters go too, as in BullMQ: the next automatic id is ``"1"`` and the next
        event id 1 (so an `events` iterator started before should be started again)."""
        await self._core.obliterate(force, now)

    async def set_rate_limit(self, max_jobs: int, duration: float) -> None:
        """At most ``max_jobs`` claims per ``duration`` seconds, across all workers."""
        await self._core.set_rate_limit(max_jobs, duration)

    async def get_rate_limit(self) -> tuple[int, float] | None:
        """The windowed limit `set_rate_limit` set, ``(max_jobs, duration)``, or None."""
        return await self._core.get_rate_limit()

    async def clear_rate_limit(self) -> None:
        """Removes the windowed limit `set_rate_limit` set."""
        await self._core.clear_rate_limit()

    async def rate_limit(self, seconds: float, *, now: int | None = None) -> None:
        """Holds the whole queue back for ``seconds`` (BullMQ's ``rateLimit``): until then no
        claim returns a job, for any worker in any process, and idle workers wake when the
        wait ends. For a processor told by an API to back off: ``await
        job.queue.rate_limit(30)``, then ``raise RateLimitError()`` to give its job back
        without using an attempt. A later call replaces the wait; the windowed limit
        (`set_rate_limit`) still applies, so the later of the two ends wins."""
        await self._core.rate_limit(seconds, now)

    async def get_rate_limit_ttl(self, *, now: int | None = None) -> float:
        """Seconds until the rate limits let claims go on (BullMQ's ``getRateLimitTtl``): the
        rest of a `rate_limit` wait, or of the window of `set_rate_limit` once its claims are
        used up, whichever ends later; 0.0 when claims may go on now."""
        return await self._core.get_rate_limit_ttl(now)

    async def remove_rate_limit_key(self) -> None:
        """Ends the `rate_limit` wait and the current window of the windowed limit (BullMQ's
        ``removeRateLimitKey``), so claims go on at once: the next claim opens a new window.
        Idle workers wake. The windowed limit itself stays set."""
        await self._core.remove_rate_limit_key()

    async def remove_orphaned_jobs(self) -> int:
        """Removes the data of jobs that no state references, left by a crash or a bug
        (BullMQ's ``removeOrphanedJobs``), and returns how many. On Redis it scans the
        queue's job fields in batches, one short script call each, so a big queue does not
        hold the server; jobs in any state are untouched. In-memory and local queues write a
        job and its state in one transaction and cannot hold such data: they return 0."""
        return await self._core.remove_orphaned_jobs()

    async def set_max_active(self, max_active: int | None) -> None:
        """At most ``max_active`` jobs active at once across all workers (None: no limit)."""
        await self._core.set_max_active(max_active)

    async def get_max_active(self) -> int | None:
        """The limit on active jobs `set_max_active` set, or None."""
        return await self._core.get_max_active()

    async def is_maxed(self) -> bool:
        """Whether as many jobs are active as `set_max_active` allows, so claims return nothing."""
        return await self._core.is_maxed()
