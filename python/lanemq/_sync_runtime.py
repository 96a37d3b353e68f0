"""The hand-written machinery of `lanemq.sync` (which scripts/gen-sync generates from
`JobQueue`'s signatures): the private event loop thread a `SyncQueue` runs its calls on, `SyncJob`,
and the part of `SyncQueue` that is not a blocking copy of a queue call."""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import threading
import weakref
from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar

from ._core import JobOptions
from .exceptions import JobNotFoundError
from .job import DataT, Job, LogEntry, ResultT
from .queue import JobQueue

Q = TypeVar("Q", bound=JobQueue)
T = TypeVar("T")
_S = TypeVar("_S", bound="SyncQueueBase[Any]")


class _LoopThread:
    """An event loop running in a daemon thread, and the blocking call into it."""

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self.pid = os.getpid()
        self.closed = False
        # Held while a call is handed to the loop and while `stop` marks it closed: no call
        # can slip in after the shutdown was scheduled (it would never run).
        self._lock = threading.Lock()
        self._calls: set[asyncio.Task[Any]] = set()  # on the loop's thread only
        self._waits: set[asyncio.Task[Any]] = set()  # the calls close() may interrupt
        self._thread = threading.Thread(target=self._serve, name=f"lanemq-sync-{name}", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        loop = self.loop
        asyncio.set_event_loop(loop)
        try:
            loop.run_forever()
        finally:
            left = asyncio.all_tasks(loop)
            for task in left:
                task.cancel()
            loop.run_until_complete(asyncio.gather(*left, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    def _check_caller(self) -> None:
        if os.getpid() != self.pid:
            raise RuntimeError(
                f"this SyncQueue was made in process {self.pid}, before a fork; make it in "
                "the process that uses it (e.g. in a post-fork hook)"
            )
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return  # no loop runs in this thread: blocking is fine
        raise RuntimeError(
            "a lanemq.sync call blocks its thread, and this thread runs an event loop: "
            "use the async API here (await queue.add(...), await job.wait(...))"
        )

    async def _track(self, interruptible: bool, work: Callable[[], Awaitable[T]]) -> T:
        task = asyncio.current_task()
        assert task is not None
        tracked = self._waits if interruptible else self._calls
        tracked.add(task)
        try:
            return await work()
        finally:
            tracked.discard(task)

    def call(self, work: Callable[[], Awaitable[T]], *, interruptible: bool = False) -> T:
        """Runs ``work()`` on the loop and returns its result (or raises its error).
        ``interruptible`` calls (waits) are cancelled by `stop`; others are let finish."""
        self._check_caller()
        with self._lock:
            if self.closed:
                raise RuntimeError("this SyncQueue is closed")
            future = asyncio.run_coroutine_threadsafe(self._track(interruptible, work), self.loop)
        try:
            return future.result()
        except concurrent.futures.CancelledError:
            raise RuntimeError("this SyncQueue was closed while the call waited") from None
        except BaseException:
            future.cancel()  # interrupted (KeyboardInterrupt): stop the call on the loop too
            raise

    def stop(self, close_queue: Callable[[], Awaitable[None]], cancel_all: bool) -> None:
        """Interrupts the waits (and, with ``cancel_all``, every call in flight), lets the
        other calls finish, closes the queue, and stops the loop and its thread."""
        with self._lock:
            if self.closed:
                return
            self.closed = True
        if os.getpid() != self.pid or not self._thread.is_alive():
            return  # a forked child has no loop thread; nothing of it to stop here
        if threading.current_thread() is self._thread:
            self.loop.stop()  # (called back from the loop: the thread winds down on return)
            return
        shutdown = asyncio.run_coroutine_threadsafe(
            self._shutdown(close_queue, cancel_all), self.loop
        )
        try:
            shutdown.result()
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join()

    async def _shutdown(self, close_queue: Callable[[], Awaitable[None]], cancel_all: bool) -> None:
        for task in self._waits | (self._calls if cancel_all else set()):
            task.cancel()
        await asyncio.gather(*self._waits, *self._calls, return_exceptions=True)
        await close_queue()


class SyncJob(Generic[DataT, ResultT]):
    """A job as a `SyncQueue` returned it: the fields of a `Job` as read at that moment
    (`refresh` reads them again), and blocking versions of its calls. It keeps its queue
    open: a job outliving every other reference to its `SyncQueue` still works. Generic in
    its data and result as `Job` is (a bare ``SyncJob`` is ``SyncJob[Any, Any]``)."""

    __slots__ = ("_job", "_owner")

    def __init__(self, owner: SyncQueueBase[Any], job: Job[DataT, ResultT]) -> None:
        self._owner = owner
        self._job = job

    @property
    def id(self) -> str:
        """The job's id."""
        return self._job.id

    @property
    def name(self) -> str:
        """The job's name: which processor runs it."""
        return self._job.name

    @property
    def queue_name(self) -> str:
        """The name of the queue the job is in."""
        return self._job.queue.name

    @property
    def data(self) -> DataT:
        """The payload, decoded from JSON."""
        return self._job.data

    @property
    def options(self) -> JobOptions:
        """The job's options (`JobOptions`), as it was added with."""
        return self._job.options

    @property
    def state(self) -> str:
        """The state when the job was read (`get_state` asks again)."""
        return self._job.state

    @property
    def priority(self) -> int:
        """The job's priority: 0 (none, first) or 1 to 2,097,151, lower first."""
        return self._job.priority

    @property
    def attempts_made(self) -> int:
        """Attempts that ended (failed, or completed), as `Job.attempts_made`."""
        return self._job.attempts_made

    @property
    def stalled_count(self) -> int:
        """How many times the job stalled (its lease ran out while it ran)."""
        return self._job.stalled_count

    @property
    def created_at(self) -> int:
        """Milliseconds since the Unix epoch (UTC), as every timestamp here."""
        return self._job.created_at

    @property
    def delay_until(self) -> int:
        """When a delayed job becomes ready, in ms since the Unix epoch (0: not delayed)."""
        return self._job.delay_until

    @property
    def processed_on(self) -> int | None:
        """When the latest attempt started, in milliseconds since the Unix epoch, or None."""
        return self._job.processed_on

    @property
    def finished_on(self) -> int | None:
        """When the job completed or failed for good, in milliseconds since the Unix epoch, or
        None."""
        return self._job.finished_on

    @property
    def progress(self) -> Any:
        """The progress the processor reported (`update_progress`): any JSON value, 0 by default."""
        return self._job.progress

    @property
    def return_value(self) -> Any:
        """The processor's return value once the job completed, else None."""
        return self._job.return_value

    @property
    def failed_reason(self) -> str | None:
        """Why the job's latest attempt failed, or None."""
        return self._job.failed_reason

    @property
    def stacktrace(self) -> list[str]:
        """The stack traces of failed attempts, newest last (at most the job's
        `stack_trace_limit`)."""
        return self._job.stacktrace

    @property
    def dedup_id(self) -> str | None:
        """The id of the dedup key the job was added under (`Dedup.id`), if any."""
        return self._job.dedup_id

    @property
    def scheduler_key(self) -> str | None:
        """The key of the job scheduler that produced this job (an occurrence), if any."""
        return self._job.scheduler_key

    @property
    def parent_key(self) -> str | None:
        """The key of this job's parent in a flow (``<queue>:<id>``), if it has one."""
        return self._job.parent_key

    def refresh(self) -> SyncJob[DataT, ResultT]:
        """Reads the job again; returns itself."""
        self._owner._runner.call(self._job.refresh)
        return self

    def get_state(self) -> str:
        """The job's state now (read again, not the snapshot's), or ``unknown`` if it is gone."""
        return self._owner._runner.call(self._job.get_state)

    def wait(self, timeout: float | None = None) -> ResultT:
        """Blocks until the job finishes: its return value, or `JobFailedError` if it failed
        for good, `TimeoutError` after ``timeout`` seconds (None: no limit)."""
        job = self._job
        return self._owner._runner.call(lambda: job.wait(timeout), interruptible=True)

    def get_logs(
        self, start: int = 0, end: int = -1, ascending: bool = True
    ) -> tuple[list[str], int]:
        """Log lines ``start..=end`` (negative indexes count from the end) and the total count."""
        job = self._job
        return self._owner._runner.call(lambda: job.get_logs(start, end, ascending))

    def get_log_entries(
        self, start: int = 0, end: int = -1, ascending: bool = True
    ) -> tuple[list[LogEntry], int]:
        """`get_logs` with each line's time (`Job.get_log_entries`)."""
        job = self._job
        return self._owner._runner.call(lambda: job.get_log_entries(start, end, ascending))

    def remove(self) -> None:
        """Removes the job with its children (`JobQueue.remove`); refused with `JobStateError`
        while a worker holds it."""
        self._owner._runner.call(self._job.remove)

    def retry(self) -> None:
        """Runs this failed (or completed) job again (`JobQueue.retry_job`)."""
        self._owner._runner.call(self._job.retry)

    def promote(self) -> None:
        """Makes this delayed job ready now (`JobQueue.promote`)."""
        self._owner._runner.call(self._job.promote)

    def __repr__(self) -> str:
        return f"<SyncJob id={self.id!r} name={self.name!r} state={self.state}>"


class SyncQueueBase(Generic[Q]):
    """The hand-written part of `lanemq.sync.SyncQueue` (its constructor, closing, `call`
    and `wait`); scripts/gen-sync writes the blocking versions of the queue's calls on it."""

    def __init__(self, queue: Q) -> None:
        if not isinstance(queue, JobQueue):
            raise TypeError(f"SyncQueue wraps a lanemq JobQueue, got {queue!r}")
        #: The wrapped async queue. It is used on the private loop: reach it through `call`.
        self.queue: Q = queue
        self.name = queue.name
        self._runner = _LoopThread(queue.name)
        self._finalizer = weakref.finalize(self, self._runner.stop, queue.close, True)

    def close(self) -> None:
        """Interrupts the `wait` calls in flight (they raise `RuntimeError`), lets the other
        calls finish, closes the queue, and stops the loop thread. Later calls raise
        `RuntimeError`. Closing again does nothing."""
        self._finalizer.detach()
        self._runner.stop(self.queue.close, cancel_all=False)

    @property
    def closed(self) -> bool:
        """Whether `close` was called: calls then raise `RuntimeError`."""
        return self._runner.closed

    def __enter__(self: _S) -> _S:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"<SyncQueue {type(self.queue).__name__} {self.name!r} {state}>"

    def call(self, fn: Callable[[Q], Awaitable[T]]) -> T:
        """Runs ``fn(queue)`` on the private loop and returns its result: the rest of the
        async API, e.g. ``sync_queue.call(lambda q: q.upsert_scheduler("report", every=60,
        template=("report", {})))``. A `Job` in the result is the async one: read its fields,
        or await its methods inside another `call`."""
        queue = self.queue
        return self._runner.call(lambda: fn(queue))

    def _view(self, job: Job[DataT, ResultT]) -> SyncJob[DataT, ResultT]:
        return SyncJob(self, job)

    def wait(self, job: SyncJob | str, timeout: float | None = None) -> Any:
        """Blocks until the job (a `SyncJob` or an id) finishes: its return value, or
        `JobFailedError` if it failed for good, `TimeoutError` after ``timeout`` seconds
        (None: no limit), `JobNotFoundError` if there is no such job."""
        if isinstance(job, SyncJob):
            return job.wait(timeout)
        queue = self.queue
        job_id = job

        async def wait_for() -> Any:
            found = await queue.get_job(job_id)
            if found is None:
                raise JobNotFoundError(f"job {job_id!r} not found")
            return await found.wait(timeout)

        return self._runner.call(wait_for, interruptible=True)
