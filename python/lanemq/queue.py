"""Job queues. `JobQueue` runs the job contract on an in-process store (`InMemoryJobQueue`
uses the Rust `MemoryJobStore`); every method is a coroutine, as on every backend.

Times: ``delay``, ``lease``, ``timeout`` and ``grace`` are seconds; timestamps are milliseconds
since the Unix epoch (UTC). Methods that depend on the clock take ``now`` (milliseconds) so
tests can drive time; it defaults to the wall clock."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from . import _json
from ._core import JobOptions, JobRecord, MemoryJobStore
from .exceptions import ConfigError, JobFailedError, JobNotFoundError
from .job import Job

STATES = ("waiting", "delayed", "active", "waiting_children", "completed", "failed")


def _now(now: int | None) -> int:
    return int(time.time() * 1000) if now is None else now


def _ms(field: str, seconds: float) -> int:
    if not seconds >= 0:  # also refuses NaN
        raise ConfigError(f"invalid {field}: {seconds} (must be >= 0 seconds)")
    return round(seconds * 1000)


def _options(
    options: JobOptions | dict[str, Any] | None, extra: dict[str, Any]
) -> JobOptions | None:
    if options is None:
        return JobOptions(**extra) if extra else None
    if isinstance(options, JobOptions):
        if extra:
            raise TypeError("pass options either as JobOptions or as keywords, not both")
        return options
    if isinstance(options, dict):
        return JobOptions(**options, **extra)
    raise TypeError(f"options must be JobOptions, a dict or None, got {options!r}")


def _error_text(error: str | BaseException) -> str:
    if isinstance(error, BaseException):
        return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    return error


@dataclass(frozen=True, slots=True)
class QueueEvent:
    """One entry of a queue's event stream."""

    id: int
    timestamp: int
    event: str
    job_id: str | None
    fields: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class JobResult:
    """What `finished_result` knows: ``status`` is ``missing``, ``pending`` (``state`` says
    where it is), ``completed`` (``value``) or ``failed`` (``reason``)."""

    status: str
    value: Any = None
    reason: str | None = None
    state: str | None = None


class JobQueue:
    """The job contract on a synchronous in-process store. Subclasses provide the store."""

    def __init__(self, name: str, store: MemoryJobStore) -> None:
        if not name or not isinstance(name, str):
            raise ConfigError(f"invalid queue name: {name!r}")
        self.name = name
        self._store = store
        # Futures woken by any change that may make a job claimable or add an event.
        self._watchers: list[asyncio.Future[None]] = []
        # Futures of `Job.wait()` callers, by job id.
        self._finish_waiters: dict[str, list[asyncio.Future[tuple[str, Any]]]] = {}

    # ------------------------------------------------------------ notification

    def _changed(self) -> None:
        watchers, self._watchers = self._watchers, []
        for watcher in watchers:
            if not watcher.done():
                watcher.set_result(None)

    async def _wait_change(self, timeout: float | None) -> bool:
        watcher = asyncio.get_running_loop().create_future()
        self._watchers.append(watcher)
        try:
            await asyncio.wait_for(watcher, timeout)
            return True
        except asyncio.TimeoutError:
            return False
        finally:
            if watcher in self._watchers:
                self._watchers.remove(watcher)

    def _finished(self, job_id: str, outcome: tuple[str, Any]) -> None:
        waiters = self._finish_waiters.pop(job_id, None)
        for waiter in waiters or ():
            if not waiter.done():
                waiter.set_result(outcome)

    def _finished_lookup(self, ids: Iterable[str]) -> None:
        """Resolves `Job.wait()` callers of jobs that may have finished or gone."""
        if not self._finish_waiters:
            return
        for job_id in ids:
            if job_id in self._finish_waiters:
                result = self._result_now(job_id)
                if result.status != "pending":
                    self._finished(job_id, (result.status, result.value or result.reason))

    # -------------------------------------------------------------------- add

    async def add(
        self,
        name: str,
        data: Any = None,
        options: JobOptions | dict[str, Any] | None = None,
        *,
        now: int | None = None,
        **option_keywords: Any,
    ) -> Job:
        """Adds a job. Options come as `JobOptions`, a dict or keywords (``job_id``,
        ``priority``, ``lifo``, ``delay``, ``attempts``, ``backoff``, ``timeout``,
        ``remove_on_complete``, ``remove_on_fail``, ``max_stalled_count``). A custom
        ``job_id`` that exists returns the existing job unchanged."""
        opts = _options(options, option_keywords)
        body = _json.dumps(data, f"data of job {name!r}")
        record, _ = self._store.add(name, body, opts, _now(now))
        self._changed()
        return Job(self, record)

    async def add_bulk(self, jobs: Iterable[Sequence[Any]], *, now: int | None = None) -> list[Job]:
        """Adds ``(name, data)`` or ``(name, data, options)`` tuples atomically: if any is
        invalid, none is added. The result keeps the input order."""
        items: list[tuple[str, str, JobOptions | None]] = []
        for index, item in enumerate(jobs):
            if len(item) == 2:
                name, data = item
                opts = None
            elif len(item) == 3:
                name, data, raw = item
                opts = _options(raw, {})
            else:
                raise TypeError(f"job #{index}: expected (name, data[, options]), got {item!r}")
            items.append((name, _json.dumps(data, f"data of job #{index} ({name!r})"), opts))
        added = self._store.add_bulk(items, _now(now))
        self._changed()
        return [Job(self, record) for record, _ in added]

    # ------------------------------------------------------------------ claim

    async def claim(
        self, worker_id: str, lease: float = 30.0, max_jobs: int = 1, *, now: int | None = None
    ) -> list[Job]:
        """Promotes due delayed jobs and returns up to ``max_jobs`` jobs, each active and
        locked for ``lease`` seconds under a fresh ``lock_token``. Respects pause, the rate
        limit and the global concurrency limit."""
        if max_jobs < 1:
            raise ConfigError(f"invalid max_jobs: {max_jobs} (must be >= 1)")
        records = self._store.claim(worker_id, _ms("lease", lease), max_jobs, _now(now))
        return [Job(self, record) for record in records]

    async def wait_for_job(self, timeout: float | None = None) -> bool:
        """Sleeps until a claim may return a job (True), or ``timeout`` seconds pass (False).
        Wakes on adds, releases, resumes and retries, and on time for delayed jobs."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while True:
            now = _now(None)
            ready_at = self._store.next_ready_at(now)
            if ready_at is not None and ready_at <= now:
                return True
            wait = None if ready_at is None else (ready_at - now) / 1000
            if deadline is not None:
                left = deadline - loop.time()
                if left <= 0:
                    return False
                wait = left if wait is None else min(wait, left)
            await self._wait_change(wait)

    # -------------------------------------------------------------- finishing

    async def complete(
        self, job_id: str, token: str, result: Any = None, *, now: int | None = None
    ) -> None:
        """Completes an active job held by ``token`` (`LockMismatchError` otherwise)."""
        body = _json.dumps(result, f"return value of job {job_id!r}")
        self._store.complete(job_id, token, body, _now(now))
        self._finished(job_id, ("completed", body))
        self._changed()

    async def complete_many(
        self, items: Iterable[tuple[str, str, Any]], *, now: int | None = None
    ) -> list[tuple[str, str]]:
        """Completes ``(job_id, token, result)`` items in one step; returns ``(job_id,
        error)`` for those that could not be completed."""
        encoded = [(i, t, _json.dumps(r, f"return value of job {i!r}")) for i, t, r in items]
        errors = self._store.complete_many(encoded, _now(now))
        if self._finish_waiters:
            failed = {job_id for job_id, _ in errors}
            for job_id, _, body in encoded:
                if job_id not in failed:
                    self._finished(job_id, ("completed", body))
        self._changed()
        return errors

    async def fail(
        self,
        job_id: str,
        token: str,
        error: str | BaseException,
        stacktrace: str | None = None,
        retry: bool = True,
        *,
        delay: float | None = None,
        now: int | None = None,
    ) -> bool:
        """Records a failed attempt. Retries (after the backoff, or ``delay`` seconds) while
        ``retry`` and attempts remain; otherwise the job fails for good. True if retried."""
        text = _error_text(error)
        delay_ms = None if delay is None else _ms("delay", delay)
        retried, _ = self._store.fail(job_id, token, text, stacktrace, retry, delay_ms, _now(now))
        if not retried:
            self._finished(job_id, ("failed", text))
        self._changed()
        return retried

    async def fail_many(
        self,
        items: Iterable[tuple[str, str, str | BaseException, str | None, bool]],
        *,
        now: int | None = None,
    ) -> list[tuple[str, bool, str | None]]:
        """Fails ``(job_id, token, error, stacktrace, retry)`` items in one step; returns
        ``(job_id, retried, error)`` per item (error set if it could not be failed)."""
        encoded = [(i, t, _error_text(e), s, r) for i, t, e, s, r in items]
        outcomes = self._store.fail_many(encoded, _now(now))
        if self._finish_waiters:
            reasons = {i: e for i, _, e, _, _ in encoded}
            for job_id, retried, problem in outcomes:
                if not retried and problem is None:
                    self._finished(job_id, ("failed", reasons[job_id]))
        self._changed()
        return outcomes

    async def renew(self, job_id: str, token: str, lease: float, *, now: int | None = None) -> None:
        """Extends the lease to now + ``lease`` seconds."""
        self._store.renew(job_id, token, _ms("lease", lease), _now(now))

    async def renew_many(
        self, items: Iterable[tuple[str, str]], lease: float, *, now: int | None = None
    ) -> list[str]:
        """Renews many leases in one step; returns the ids whose lease was lost."""
        return self._store.renew_many(list(items), _ms("lease", lease), _now(now))

    async def move_to_delayed(
        self,
        job_id: str,
        token: str,
        delay: float | None = None,
        *,
        delay_until: int | None = None,
        now: int | None = None,
    ) -> None:
        """Parks an active job in the delayed set (``delay`` seconds from now, or until the
        ``delay_until`` timestamp) without using an attempt."""
        at = _now(now)
        until = delay_until if delay_until is not None else at + _ms("delay", delay or 0.0)
        self._store.move_to_delayed(job_id, token, until, at)
        self._changed()

    async def release(self, job_id: str, token: str, *, now: int | None = None) -> None:
        """Gives an active job back: waiting, at the front of its priority, attempt unused."""
        self._store.release(job_id, token, _now(now))
        self._changed()

    async def recover_stalled(self, *, now: int | None = None) -> tuple[list[str], list[str]]:
        """Active jobs whose lease expired go back to waiting (stalled count + 1), or fail
        past ``max_stalled_count``. Returns (recovered ids, failed ids)."""
        recovered, failed = self._store.recover_stalled(_now(now))
        if recovered or failed:
            self._finished_lookup(failed)
            self._changed()
        return recovered, failed

    async def _holds_lock(self, job_id: str, token: str) -> bool:
        record = self._store.get_job(job_id)
        return (
            record is not None
            and record.lock_token == token
            and (record.lock_expires_at or 0) > _now(None)
        )

    # ----------------------------------------------------------------- reading

    async def _record(self, job_id: str) -> JobRecord:
        record = self._store.get_job(job_id)
        if record is None:
            raise JobNotFoundError(f"job {job_id!r} not found")
        return record

    async def get_job(self, job_id: str) -> Job | None:
        record = self._store.get_job(job_id)
        return None if record is None else Job(self, record)

    async def get_state(self, job_id: str) -> str:
        """The job's state, or ``unknown`` if there is no such job."""
        return self._store.get_state(job_id) or "unknown"

    async def get_job_counts(self, *states: str) -> dict[str, int]:
        """Counts per state, in the order asked (repeats dropped); all six when none."""
        return dict(self._store.get_job_counts(list(states)))

    async def count_pending(self) -> int:
        """Jobs that will still run: waiting + delayed + waiting for children."""
        return self._store.count_pending()

    async def get_counts_per_priority(self, *priorities: int) -> dict[int, int]:
        return dict(self._store.get_counts_per_priority(list(priorities)))

    async def list_jobs(
        self,
        states: Iterable[str] | str | None = None,
        start: int = 0,
        end: int = -1,
        ascending: bool = True,
    ) -> list[Job]:
        """Jobs in ``states`` (all when None), from index ``start`` to ``end`` inclusive."""
        names = [states] if isinstance(states, str) else list(states or ())
        records = self._store.list_jobs(names, start, end, ascending)
        return [Job(self, record) for record in records]

    def _result_now(self, job_id: str) -> JobResult:
        status, value = self._store.finished_result(job_id)
        if status == "completed":
            return JobResult("completed", value=None if value is None else _json.loads(value))
        if status == "failed":
            return JobResult("failed", reason=value)
        if status == "pending":
            return JobResult("pending", state=value)
        return JobResult("missing")

    async def finished_result(self, job_id: str) -> JobResult:
        return self._result_now(job_id)

    async def _wait_finished(self, job_id: str, timeout: float | None) -> Any:
        result = self._result_now(job_id)
        if result.status == "pending":
            waiter: asyncio.Future[tuple[str, Any]] = asyncio.get_running_loop().create_future()
            self._finish_waiters.setdefault(job_id, []).append(waiter)
            try:
                status, value = await asyncio.wait_for(waiter, timeout)
            finally:
                waiters = self._finish_waiters.get(job_id)
                if waiters and waiter in waiters:
                    waiters.remove(waiter)
                    if not waiters:
                        del self._finish_waiters[job_id]
            if status == "completed":
                return None if value is None else _json.loads(value)
            result = JobResult(status, reason=value if status == "failed" else None)
        if result.status == "completed":
            return result.value
        if result.status == "failed":
            raise JobFailedError(job_id, result.reason or "")
        raise JobNotFoundError(f"job {job_id!r} not found (it may have been removed)")

    # ----------------------------------------------------------------- editing

    async def promote(self, job_id: str, *, now: int | None = None) -> None:
        """Makes a delayed job waiting now."""
        self._store.promote(job_id, _now(now))
        self._changed()

    async def reschedule(self, job_id: str, delay: float, *, now: int | None = None) -> None:
        """Delays a waiting or delayed job to ``delay`` seconds from now."""
        at = _now(now)
        self._store.reschedule(job_id, at + _ms("delay", delay), at)
        self._changed()

    async def retry_job(self, job_id: str, *, now: int | None = None) -> None:
        """Moves a failed (or completed) job back to waiting, attempts reset."""
        self._store.retry_job(job_id, _now(now))
        self._changed()

    async def update_priority(self, job_id: str, priority: int, lifo: bool = False) -> None:
        self._store.update_priority(job_id, priority, lifo)
        self._changed()

    async def update_data(self, job_id: str, data: Any) -> None:
        self._store.update_data(job_id, _json.dumps(data, f"data of job {job_id!r}"))

    async def update_progress(self, job_id: str, value: Any, *, now: int | None = None) -> None:
        self._store.update_progress(job_id, _json.dumps(value, "progress"), _now(now))
        self._changed()

    async def _write_progress(self, job: Job, value: Any) -> None:
        await job.ensure_lease()
        await self.update_progress(job.id, value)

    async def add_log(self, job_id: str, line: str, keep: int = 0) -> int:
        if keep < 0:
            raise ConfigError(f"invalid keep: {keep} (must be >= 0)")
        return self._store.add_log(job_id, str(line), keep)

    async def get_logs(
        self, job_id: str, start: int = 0, end: int = -1, ascending: bool = True
    ) -> tuple[list[str], int]:
        """Log lines ``start..=end`` and the total count."""
        return self._store.get_logs(job_id, start, end, ascending)

    async def clear_logs(self, job_id: str, keep: int = 0) -> None:
        if keep < 0:
            raise ConfigError(f"invalid keep: {keep} (must be >= 0)")
        self._store.clear_logs(job_id, keep)

    async def save_stacktrace(
        self, job_id: str, lines: list[str], reason: str | None = None
    ) -> None:
        self._store.save_stacktrace(job_id, list(lines), reason)

    async def remove(self, job_id: str, *, now: int | None = None) -> None:
        """Removes a job (refused with `JobStateError` while a worker holds its lock)."""
        self._store.remove(job_id, _now(now))
        self._finished(job_id, ("missing", None))
        self._changed()

    # -------------------------------------------------------------- the queue

    async def pause(self, *, now: int | None = None) -> None:
        """Stops handing out jobs (adds are still accepted)."""
        self._store.pause(_now(now))
        self._changed()

    async def resume(self, *, now: int | None = None) -> None:
        self._store.resume(_now(now))
        self._changed()

    async def is_paused(self) -> bool:
        return self._store.is_paused()

    async def drain(self, delayed: bool = False, *, now: int | None = None) -> int:
        """Removes all waiting jobs (and delayed ones with ``delayed``); returns how many."""
        removed = self._store.drain(delayed, _now(now))
        self._changed()
        return removed

    async def clean(
        self, grace: float, limit: int = 0, state: str = "completed", *, now: int | None = None
    ) -> list[str]:
        """Removes up to ``limit`` (0 = all) jobs in ``state`` older than ``grace`` seconds;
        returns their ids."""
        if limit < 0:
            raise ConfigError(f"invalid limit: {limit} (must be >= 0)")
        removed = self._store.clean(_ms("grace", grace), limit, state, _now(now))
        self._finished_lookup(removed)
        self._changed()
        return removed

    async def obliterate(self, force: bool = False, *, now: int | None = None) -> None:
        """Deletes the queue's jobs, events and settings. Pauses first; with active jobs it is
        refused (`JobStateError`) and the queue stays paused, unless ``force``."""
        ids = list(self._finish_waiters)
        self._store.obliterate(force, _now(now))
        self._finished_lookup(ids)
        self._changed()

    async def set_rate_limit(self, max_jobs: int, duration: float) -> None:
        """At most ``max_jobs`` claims per ``duration`` seconds, across all workers."""
        self._store.set_rate_limit(max_jobs, _ms("duration", duration))
        self._changed()

    async def get_rate_limit(self) -> tuple[int, float] | None:
        limit = self._store.get_rate_limit()
        return None if limit is None else (limit[0], limit[1] / 1000)

    async def clear_rate_limit(self) -> None:
        self._store.clear_rate_limit()
        self._changed()

    async def set_max_active(self, max_active: int | None) -> None:
        """At most ``max_active`` jobs active at once across all workers (None: no limit)."""
        self._store.set_max_active(max_active)
        self._changed()

    async def get_max_active(self) -> int | None:
        return self._store.get_max_active()

    async def is_maxed(self) -> bool:
        return self._store.is_maxed()

    # ------------------------------------------------------------------ events

    async def read_events(
        self, start: int = 0, end: int | None = None, limit: int = 0
    ) -> list[QueueEvent]:
        """Stream entries with ``start <= id <= end``, at most ``limit`` (0: all)."""
        rows = self._store.read_events(start, 2**63 - 1 if end is None else end, limit)
        return [QueueEvent(*row) for row in rows]

    async def trim_events(self, max_len: int) -> int:
        """Keeps the newest ``max_len`` events; returns how many were dropped."""
        if max_len < 0:
            raise ConfigError(f"invalid max_len: {max_len} (must be >= 0)")
        return self._store.trim_events(max_len)

    async def events(self, after: int | None = None) -> AsyncIterator[QueueEvent]:
        """Follows the event stream: the events after id ``after`` (default: from now on),
        then new ones as they come."""
        last = self._store.last_event_id() if after is None else after
        while True:
            rows = self._store.read_events(last + 1, 2**63 - 1, 1000)
            if not rows:
                await self._wait_change(None)
                continue
            for row in rows:
                last = row[0]
                yield QueueEvent(*row)


class InMemoryJobQueue(JobQueue):
    """The job contract in process memory: for tests and embedded use. Nothing survives the
    process; use `LocalJobQueue` or `RedisJobQueue` for durability."""

    def __init__(
        self,
        name: str = "default",
        *,
        max_payload_bytes: int = 16 * 1024 * 1024,
        max_events: int = 10_000,
    ) -> None:
        super().__init__(name, MemoryJobStore(max_payload_bytes, max_events))


__all__ = ["STATES", "InMemoryJobQueue", "JobQueue", "JobResult", "QueueEvent"]
