"""Reading a queue: jobs, states, counts, results."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .. import _json
from .._core import JobRecord
from ..exceptions import JobCancelledError, JobFailedError, JobNotFoundError
from ..job import Job
from ._base import QueueBase, new_job
from ._failures import failed_error

#: How the stack trace entry of a cancelled job begins (then the reason).
_CANCELLED_TRACE = "JobCancelledError: "


@dataclass(frozen=True, slots=True)
class JobResult:
    """What `finished_result` knows: ``status`` is ``missing``, ``pending`` (``state`` says
    where it is), ``completed`` (``value``) or ``failed`` (``reason``)."""

    status: str
    value: Any = None
    reason: str | None = None
    state: str | None = None


@dataclass(frozen=True, slots=True)
class QueueStats:
    """What `JobQueue.get_stats` read, at one moment: ``counts`` per state (every state),
    whether the queue is ``paused``, ``max_active`` (`set_max_active`, None: no cap),
    ``rate_limit`` (`set_rate_limit`: ``(max_jobs, duration seconds)`` or None) and
    ``rate_limit_ttl``, the seconds the rate limits still hold claims back (as
    `get_rate_limit_ttl`)."""

    counts: dict[str, int]
    paused: bool
    max_active: int | None
    rate_limit: tuple[int, float] | None
    rate_limit_ttl: float


class QueueReads(QueueBase):
    """The part of `JobQueue` that reads jobs and counts."""

    async def _record(self, job_id: str) -> JobRecord:
        record = await self._core.get_job(job_id)
        if record is None:
            raise JobNotFoundError(f"job {job_id!r} not found")
        return record

    async def get_job(self, job_id: str) -> Job | None:
        """The job ``job_id``, or None if there is none."""
        record = await self._core.get_job(job_id)
        return None if record is None else new_job(self, record)

    async def get_state(self, job_id: str) -> str:
        """The job's state, or ``unknown`` if there is no such job."""
        return await self._core.get_state(job_id)

    async def get_job_counts(self, *states: str) -> dict[str, int]:
        """Counts per state, in the order asked (repeats dropped); all six when none."""
        return await self._core.get_job_counts(list(states))

    async def get_job_count(self, *states: str) -> int:
        """How many jobs are in ``states`` together (BullMQ's ``getJobCountByTypes``): the
        sum of `get_job_counts` for them, each state counted once; all jobs when none."""
        return await self._core.get_job_count(list(states))

    async def get_stats(self, *, now: int | None = None) -> QueueStats:
        """The queue at a glance, in one read (one round trip on Redis, where BullMQ users
        ask ``getJobCounts``, ``isPaused``, ``getGlobalConcurrency``, ``getRateLimitTtl``...
        one by one): counts per state, pause, the cap on active jobs, the rate limit and how
        long it still holds claims back."""
        return QueueStats(*await self._core.get_stats(now))

    async def count_pending(self) -> int:
        """Jobs that will still run: waiting + delayed + waiting for children."""
        return await self._core.count_pending()

    async def get_counts_per_priority(self, *priorities: int) -> dict[int, int]:
        """How many waiting jobs each of ``priorities`` has."""
        return await self._core.get_counts_per_priority(list(priorities))

    async def list_jobs(
        self,
        states: Iterable[str] | str | None = None,
        start: int = 0,
        end: int = -1,
        ascending: bool = True,
    ) -> list[Job]:
        """Jobs in ``states`` (all when None), from index ``start`` to ``end`` inclusive."""
        names = [states] if isinstance(states, str) else list(states or ())
        records = await self._core.list_jobs(names, start, end, ascending)
        return [new_job(self, record) for record in records]

    async def list_jobs_with_total(
        self,
        states: Iterable[str] | str | None = None,
        start: int = 0,
        end: int = -1,
        ascending: bool = True,
    ) -> tuple[list[Job], int]:
        """`list_jobs`, and the number of jobs in ``states`` that the page was cut from (for a
        pager: BullMQ users call ``getJobs`` and ``getJobCountByTypes``, two reads that can
        disagree), from one read: the total is the one the page's indexes refer to."""
        names = [states] if isinstance(states, str) else list(states or ())
        records, total = await self._core.list_jobs_with_total(names, start, end, ascending)
        return [new_job(self, record) for record in records], total

    @staticmethod
    def _result(status: str, value: str | None) -> JobResult:
        if status == "completed":
            return JobResult("completed", value=None if value is None else _json.loads(value))
        if status == "failed":
            return JobResult("failed", reason=value)
        if status == "pending":
            return JobResult("pending", state=value)
        return JobResult("missing")

    async def finished_result(self, job_id: str) -> JobResult:
        """Whether the job finished, and how, without waiting (`JobResult`: ``completed`` with its
        value, ``failed`` with its reason, ``pending`` with its state, or ``missing``)."""
        return self._result(*await self._core.finished_result(job_id))

    async def _wait_finished(self, job_id: str, timeout: float | None) -> Any:
        result = self._result(*await self._core.wait_finished(job_id, timeout))
        if result.status == "completed":
            return result.value
        if result.status == "failed":
            raise await self._failure(job_id, result.reason or "")
        if result.status == "pending":
            raise TimeoutError(f"job {job_id!r} did not finish within {timeout}s")
        raise JobNotFoundError(f"job {job_id!r} not found (it may have been removed)")

    async def _failure(self, job_id: str, reason: str) -> JobFailedError:
        """What `wait` raises for a job that failed for good: `JobCancelledError` when it was
        cancelled (its last stack trace entry says so: every backend writes
        ``JobCancelledError: <reason>`` there), else `JobFailedError`, an instance of the
        raised class too where that can be made (`_failures`). A job its retention removed
        at once can no longer tell but by its reason."""
        record = await self._core.get_job(job_id)
        trace = record.stacktrace if record is not None else []
        if trace and trace[-1].startswith(_CANCELLED_TRACE):
            return JobCancelledError(job_id, reason)
        return failed_error(job_id, reason, trace)

    async def list_queues(self) -> list[str]:
        """The names of the queues this queue's backend holds, sorted: those of its
        `MemoryGroup`; the queue files beside a local queue's file (``<name>.sqlite3`` in its
        directory; a queue given a file of its own lists itself); the queues under a Redis
        queue's prefix (a SCAN, a page at a time). A Redis or local queue is listed once it
        holds anything (a job, a setting)."""
        return await self._core.queue_names()
