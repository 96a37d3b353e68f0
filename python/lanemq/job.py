"""`Job`: a job as a queue returned it, with the calls a processor makes on it; `JobSync`:
blocking versions of those calls for a plain ``def`` processor's thread; `LogEntry`: a line of
a job's log with its time."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Callable, Coroutine, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic

if sys.version_info >= (3, 13):
    from typing import TypeVar
else:  # (a TypeVar with a default, PEP 696)
    from typing_extensions import TypeVar

from . import _json
from ._core import JobOptions, JobRecord
from .exceptions import LockMismatchError

if TYPE_CHECKING:
    from .flows import Dependencies, FlowJob, JobNode
    from .queue import JobQueue

_UNSET: Any = object()
T = TypeVar("T")
#: The type of a job's data (what `JobQueue.add` was given, as JSON gives it back: a
#: TypedDict, a dict, a list, a str...). Unsaid, it is Any, so a bare `Job` is `Job[Any, Any]`.
DataT = TypeVar("DataT", default=Any)
#: The type of a job's result (what its processor returns, as JSON gives it back).
ResultT = TypeVar("ResultT", default=Any)


@dataclass(frozen=True, slots=True)
class LogEntry:
    """A line of a job's log (`JobQueue.get_log_entries`): ``text`` exactly as written, and
    ``time``, when it was written, in ms since the epoch (the clock of the call that wrote it,
    as the job's other times). ``time`` is None for a line stored by a version of lanemq that
    kept no times."""

    time: int | None
    text: str


class Job(Generic[DataT, ResultT]):
    """A snapshot of one job. Fields reflect the moment it was read (`refresh()` reads it
    again); a job claimed by a worker also carries its ``lock_token``.

    Generic in its data and result for a type checker: ``Job[EmailData, SendResult]`` types
    ``job.data`` as ``EmailData`` and ``await job.wait()`` as ``SendResult``. `JobQueue.add`
    gives ``Job[<the data's type>, Any]`` for data of a type of its own (a TypedDict), and
    ``Job[Any, Any]`` for a plain dict or list; a processor annotates its parameter
    (``async def send(job: Job[EmailData, SendResult]) -> SendResult``). A bare ``Job`` is
    ``Job[Any, Any]``. Nothing is checked at run time: the data is whatever JSON decoded."""

    __slots__ = (
        "_data",
        "_failure",
        "_loop",
        "_parked",
        "_queue",
        "_record",
        "cancelled",
        "lease_lost",
    )

    #: What `set_as_failed` gave, set to None when the job's batch starts (unset outside a
    #: batch: no cost for the jobs of single processors).
    _failure: BaseException | None

    #: The event loop the job's calls run on, for `sync`: set by a worker that runs the job's
    #: processor in a thread, or when `sync` is first read on a loop. (Unset until then: no
    #: cost for jobs that never need it.)
    _loop: asyncio.AbstractEventLoop

    def __init__(self, queue: JobQueue, record: JobRecord) -> None:
        self._queue = queue
        self._record = record
        self._data: Any = _UNSET
        self.lease_lost = False
        """Set by the worker when a renewal found the lease gone: stop, another worker may
        own the job now."""
        self.cancelled = False
        """Set by the worker when the job's cancellation was requested (`JobQueue.cancel`):
        a plain ``def`` processor, running in a thread the worker cannot stop, checks it and
        returns early; an ``async def`` one is cancelled (`asyncio.CancelledError`)."""
        #: Set by `add_children`: the job waits for its children and the worker does not
        #: report it when its processor returns.
        self._parked = False

    # ------------------------------------------------------------------ fields

    @property
    def id(self) -> str:
        """The job's id: an automatic one (``"1"``, ``"2"``, ...) or the ``job_id`` it was added
        with."""
        return self._record.id

    @property
    def name(self) -> str:
        """The job's name: which processor runs it."""
        return self._record.name

    @property
    def data(self) -> DataT:
        """The payload, decoded from JSON on first access."""
        if self._data is _UNSET:
            self._data = _json.loads(self._record.data)
        data: DataT = self._data
        return data

    @property
    def options(self) -> JobOptions:
        """The options the job was added with (`JobOptions`)."""
        return self._record.options

    @property
    def group(self) -> str | None:
        """The job's group (`JobQueue.add(..., group=...)`), or None."""
        return self._record.options.group

    @property
    def state(self) -> str:
        """The job's state when this snapshot was read (``waiting``, ``delayed``, ``active``,
        ``waiting_children``, ``completed`` or ``failed``); `get_state` reads it now."""
        return self._record.state

    @property
    def priority(self) -> int:
        """The job's priority: 0 (none, first) or 1 to 2,097,151, lower first."""
        return self._record.priority

    @property
    def attempts_made(self) -> int:
        """Attempts that ended (failed, or completed), as BullMQ's ``attemptsMade``: 0 while
        the first attempt runs. An attempt given back (stalled, released, moved to delayed
        with `DelayedError`) does not count."""
        made = self._record.attempts_made
        return made - 1 if made and self._record.state == "active" else made

    @property
    def attempts_started(self) -> int:
        """Attempts started, the running one included: 1 while the first attempt runs (the
        number of the current attempt, for a processor). Attempts given back do not count."""
        return self._record.attempts_made

    @property
    def stalled_count(self) -> int:
        """How many times the job stalled (its lease ran out while it ran); past the job's
        ``max_stalled_count`` it fails."""
        return self._record.stalled_count

    @property
    def created_at(self) -> int:
        """Milliseconds since the Unix epoch (UTC), as every timestamp here."""
        return self._record.created_at

    @property
    def delay_until(self) -> int:
        """When a delayed job becomes ready, in ms since the Unix epoch (0: not delayed)."""
        return self._record.delay_until

    @property
    def processed_on(self) -> int | None:
        """When the latest attempt started, in milliseconds since the Unix epoch, or None."""
        return self._record.processed_on

    @property
    def finished_on(self) -> int | None:
        """When the job completed or failed for good, in milliseconds since the Unix epoch, or
        None."""
        return self._record.finished_on

    @property
    def progress(self) -> Any:
        """The progress the processor reported (`update_progress`): any JSON value, 0 by default."""
        return _json.loads(self._record.progress)

    @property
    def return_value(self) -> Any:
        """The processor's return value once the job completed, else None."""
        value = self._record.return_value
        return None if value is None else _json.loads(value)

    @property
    def failed_reason(self) -> str | None:
        """Why the job's latest attempt failed (``"ValueError: bad input"``), or None."""
        return self._record.failed_reason

    @property
    def stacktrace(self) -> list[str]:
        """The stack traces of failed attempts, newest last (at most the job's
        ``stack_trace_limit``)."""
        return self._record.stacktrace

    @property
    def dedup_id(self) -> str | None:
        """The id of the dedup key the job was added under (``Dedup.id``), if any."""
        return self._record.dedup_id

    @property
    def scheduler_key(self) -> str | None:
        """The key of the job scheduler that produced this job (an occurrence), if any."""
        return self._record.options.scheduler

    @property
    def parent_key(self) -> str | None:
        """The key of this job's parent in a flow (``<queue>:<id>``), if it has one."""
        return self._record.parent_key

    @property
    def parent_id(self) -> str | None:
        """The id of this job's parent in a flow, if it has one."""
        return self._record.parent_id

    @property
    def parent_queue(self) -> str | None:
        """The queue of this job's parent in a flow, if it has one."""
        return self._record.parent_queue

    @property
    def lock_token(self) -> str | None:
        """The token of the worker's lease on this job, while a worker holds it (a claimed
        snapshot); None otherwise."""
        return self._record.lock_token

    @property
    def timeout(self) -> float | None:
        """Seconds an attempt may run (``JobOptions.timeout``), if it is limited."""
        return self._record.timeout

    @property
    def parked(self) -> bool:
        """Whether `add_children` parked the job (lock released, waiting for its children): a
        worker then does not report it when its processor returns."""
        return self._parked

    def set_as_failed(self, error: BaseException | str) -> None:
        """In a batch processor (`JobWorker.batch_processor`): fails this job alone with
        ``error`` (an exception, or a reason as a string), retried by its options as if a
        single processor had raised it; its slot in the returned list is ignored. Outside a
        batch it raises `RuntimeError`: a single processor raises the error instead."""
        try:
            self._failure  # noqa: B018 - set while the job's batch runs
        except AttributeError:
            raise RuntimeError(
                f"job {self.id}: set_as_failed is for jobs of a batch processor "
                "(a single processor raises the error)"
            ) from None
        if isinstance(error, str):
            error = Exception(error)
        elif not isinstance(error, BaseException):
            raise TypeError(f"set_as_failed takes an exception or a str, got {error!r}")
        self._failure = error

    @property
    def queue(self) -> JobQueue:
        """The `JobQueue` this job is in (from a processor: ``await job.queue.rate_limit(30)``)."""
        return self._queue

    @property
    def sync(self) -> JobSync:
        """Blocking versions of this job's calls, for a thread: a plain ``def`` processor
        (which `JobWorker` runs in a worker thread) calls ``job.sync.update_progress(50)`` or
        ``job.sync.log("...")``; each runs the call on the worker's event loop and waits for
        it. Read it on the loop to hand it to a thread of your own. Calling it from the loop's
        own thread raises `RuntimeError` (it would deadlock): await the async method there."""
        loop = getattr(self, "_loop", None)
        if loop is None:
            try:
                loop = self._loop = asyncio.get_running_loop()
            except RuntimeError:
                raise RuntimeError(
                    f"job {self.id!r}: job.sync does not know this job's event loop: read "
                    "job.sync once on the loop (or use it in a plain def processor, which "
                    "JobWorker runs in a thread)"
                ) from None
        return JobSync(self, loop)

    # ---------------------------------------------------------------- actions

    async def refresh(self) -> Job[DataT, ResultT]:
        """Reads the job again (keeping this snapshot's lock token)."""
        fresh = await self._queue._record(self.id)
        self._record = fresh
        self._data = _UNSET
        return self

    async def get_state(self) -> str:
        """The job's state now, read from the queue (``unknown`` if it is gone)."""
        return await self._queue.get_state(self.id)

    async def wait(self, timeout: float | None = None) -> ResultT:
        """The job's return value once it completes; raises `JobFailedError` if it fails for
        good, `TimeoutError` after ``timeout`` seconds. Does not poll."""
        result: ResultT = await self._queue._wait_finished(self.id, timeout)
        return result

    def _check_lease(self) -> None:
        if self.lease_lost:
            raise LockMismatchError(f"job {self.id!r}: the lease was lost; the write is refused")

    async def update_progress(self, value: Any) -> None:
        """Records the job's progress, any JSON value (a percentage, a dict); raises
        `LockMismatchError` from a processor whose lease was lost."""
        self._check_lease()
        await self._queue._write_progress(self, value)

    async def log(self, line: str, keep: int = 0) -> int:
        """Appends a log line (keeping the newest ``keep`` when > 0); returns the count."""
        self._check_lease()
        await self.ensure_lease()
        return await self._queue.add_log(self.id, line, keep)

    async def update_data(self, data: DataT) -> None:
        """Replaces the job's data (JSON) and this snapshot's; raises `LockMismatchError` from a
        processor whose lease was lost."""
        self._check_lease()
        await self.ensure_lease()
        await self._queue.update_data(self.id, data)
        self._data = data

    async def ensure_lease(self) -> None:
        """Raises `LockMismatchError` if this job's lease is no longer held."""
        self._check_lease()
        token = self.lock_token
        if token is not None and not await self._queue._holds_lock(self.id, token):
            self.lease_lost = True
            self._check_lease()

    async def move_to_delayed(self, delay: float) -> None:
        """From a processor: park the job for ``delay`` seconds without using an attempt, then
        raise `DelayedError` so the worker lets go of it."""
        self._check_lease()
        token = self.lock_token
        if token is None:
            raise LockMismatchError(f"job {self.id!r} is not held by a worker")
        until = int(time.time() * 1000 + delay * 1000)
        await self._queue.move_to_delayed(self.id, token, delay_until=until)

    async def add_children(
        self, children: Iterable[FlowJob], *, now: int | None = None
    ) -> list[JobNode]:
        """From a processor: adds children (each may have its own) to this active job and
        parks it in ``waiting_children`` (lock released, no attempt used). The worker then does
        not report the job when the processor returns; once the children are done the job is
        waiting again and runs again (where `get_children_values` reads their results). A
        child whose custom ``job_id`` exists is that job (as in `JobQueue.add_flow`); when
        every child given is this job's own already and done, the job is waiting again at
        once."""
        self._check_lease()
        nodes = await self._queue._add_children(self, list(children), now)
        self._parked = True
        return nodes

    async def get_children_values(self) -> dict[str, Any]:
        """The results of this flow parent's completed children, keyed by ``<queue>:<id>``."""
        return await self._queue.get_children_values(self.id)

    async def get_ignored_children_failures(self) -> dict[str, str]:
        """The failure reasons of the children whose failure this parent ignored
        (``parent_policy``), keyed by ``<queue>:<id>``."""
        return await self._queue.get_ignored_children_failures(self.id)

    async def get_dependencies(self, **page: Any) -> Dependencies:
        """A page of this parent's children by bucket (`Dependencies`); ``page`` as
        `JobQueue.get_dependencies` takes it."""
        return await self._queue.get_dependencies(self.id, **page)

    async def get_dependencies_count(self, *buckets: str) -> dict[str, int]:
        """How many children this parent has in each bucket (``processed``, ``unprocessed``,
        ``failed``, ``ignored``, ``missing``): all, or those named."""
        return await self._queue.get_dependencies_count(self.id, *buckets)

    async def remove_child_dependency(self) -> bool:
        """Detaches this job from its flow parent (which no longer waits for it); True if it had
        one."""
        return await self._queue.remove_child_dependency(self.id)

    async def remove_unprocessed_children(self) -> int:
        """Removes this parent's pending children, each with its tree; returns how many were
        removed."""
        return await self._queue.remove_unprocessed_children(self.id)

    async def get_logs(
        self, start: int = 0, end: int = -1, ascending: bool = True
    ) -> tuple[list[str], int]:
        """Log lines ``start..=end`` (negative indexes count from the end) and the total count."""
        return await self._queue.get_logs(self.id, start, end, ascending)

    async def get_log_entries(
        self, start: int = 0, end: int = -1, ascending: bool = True
    ) -> tuple[list[LogEntry], int]:
        """`get_logs` with each line's time (`JobQueue.get_log_entries`)."""
        return await self._queue.get_log_entries(self.id, start, end, ascending)

    async def remove(self) -> None:
        """Removes the job with its children (`JobQueue.remove`); refused with `JobStateError`
        while a worker holds it."""
        await self._queue.remove(self.id)

    async def retry(self, *, reset_attempts: bool = False) -> None:
        """Runs this failed (or completed) job again (`JobQueue.retry_job`)."""
        await self._queue.retry_job(self.id, reset_attempts=reset_attempts)

    async def promote(self) -> None:
        """Makes this delayed job ready now (`JobQueue.promote`)."""
        await self._queue.promote(self.id)

    def to_dict(self) -> dict[str, Any]:
        """The job as JSON-safe values (BullMQ's ``toJSON``/``asJSON``): its fields as this
        object read them, the options as stored (only those set), times in epoch ms. No
        ``queue`` key: ``queue_name`` names the queue."""
        return {
            "id": self.id,
            "name": self.name,
            "data": self.data,
            "opts": json.loads(self.options.to_json()),
            "queue_name": self._queue.name,
            "state": self.state,
            "priority": self.priority,
            "group": self.group,
            "progress": self.progress,
            "return_value": self.return_value,
            "failed_reason": self.failed_reason,
            "stacktrace": self.stacktrace,
            "attempts_made": self.attempts_made,
            "attempts_started": self.attempts_started,
            "stalled_count": self.stalled_count,
            "created_at": self.created_at,
            "delay_until": self.delay_until,
            "processed_on": self.processed_on,
            "finished_on": self.finished_on,
            "parent_key": self.parent_key,
            "scheduler_key": self.scheduler_key,
            "dedup_id": self.dedup_id,
        }

    def __repr__(self) -> str:
        return f"<Job id={self.id!r} name={self.name!r} state={self.state}>"


class JobSync:
    """`Job`'s calls as blocking functions for a thread other than the event loop's (see
    `Job.sync`). Each call runs the async method on the job's loop
    (`asyncio.run_coroutine_threadsafe`) and returns its result or raises its exception."""

    __slots__ = ("_job", "_loop")

    def __init__(self, job: Job, loop: asyncio.AbstractEventLoop) -> None:
        self._job = job
        self._loop = loop

    def _call(self, method: Callable[..., Coroutine[Any, Any, T]], *args: Any) -> T:
        loop = self._loop
        try:
            running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        name = getattr(method, "__name__", "call")
        if running is loop:
            raise RuntimeError(
                f"job.sync.{name}() was called on the event loop's own thread, where it "
                f"would wait for itself: use `await job.{name}(...)` there"
            )
        if loop.is_closed() or not loop.is_running():
            raise RuntimeError(f"job.sync.{name}(): the job's event loop is not running")
        return asyncio.run_coroutine_threadsafe(method(*args), loop).result()

    def update_progress(self, value: Any) -> None:
        """Records the job's progress (`Job.update_progress`), blocking until it is written."""
        self._call(self._job.update_progress, value)

    def log(self, line: str, keep: int = 0) -> int:
        """Appends a log line (keeping the newest ``keep`` when > 0); returns the count."""
        return self._call(self._job.log, line, keep)

    def update_data(self, data: Any) -> None:
        """Replaces the job's data (`Job.update_data`), blocking until it is written."""
        self._call(self._job.update_data, data)

    def ensure_lease(self) -> None:
        """Raises `LockMismatchError` if the job's lease is no longer held."""
        self._call(self._job.ensure_lease)

    def move_to_delayed(self, delay: float) -> None:
        """Parks the job for ``delay`` seconds without using an attempt; then raise
        `DelayedError` from the processor."""
        self._call(self._job.move_to_delayed, delay)

    def add_children(self, children: Iterable[FlowJob]) -> list[JobNode]:
        """Adds children and parks the job until they are done (see `Job.add_children`)."""
        return self._call(self._job.add_children, list(children))

    def get_children_values(self) -> dict[str, Any]:
        """The results of this flow parent's completed children (`Job.get_children_values`)."""
        return self._call(self._job.get_children_values)

    def get_logs(
        self, start: int = 0, end: int = -1, ascending: bool = True
    ) -> tuple[list[str], int]:
        """Log lines ``start..=end`` and the total count (`Job.get_logs`)."""
        return self._call(self._job.get_logs, start, end, ascending)

    def get_log_entries(
        self, start: int = 0, end: int = -1, ascending: bool = True
    ) -> tuple[list[LogEntry], int]:
        """`get_logs` with each line's time (`Job.get_log_entries`)."""
        return self._call(self._job.get_log_entries, start, end, ascending)

    def get_state(self) -> str:
        """The job's state now (`Job.get_state`)."""
        return self._call(self._job.get_state)

    def refresh(self) -> Job:
        """Reads the job again (keeping its lock token)."""
        return self._call(self._job.refresh)
