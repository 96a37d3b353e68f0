"""A blocking API over any job queue, for Flask, Django, scripts and other code without an
event loop: producers and management (add, read, wait for results, retry, pause).

```python no-run
from lanemq.sync import LocalJobQueue

queue = LocalJobQueue("email", "./lanemq-data")   # a SyncQueue over lanemq.LocalJobQueue
job = queue.add("send", {"to": "ops@example.com"}, priority=10)
print(job.id, job.state, queue.get_job_counts("waiting"))
print(job.wait(timeout=30))   # the result once a worker (another process) has run it
queue.close()
```

How it runs: each `SyncQueue` owns a private event loop in a daemon thread. A call hands the
queue's coroutine to that loop and blocks the calling thread until it is done, so any number of
threads may call at once; their calls run concurrently on the loop (a local queue commits
calls issued together in one transaction). One loop per `SyncQueue` rather than one per
process: `close()` stops exactly the thread it started, nothing is shared between libraries
that each made one, and an idle loop costs only its thread.

A thread that runs an event loop must not block on another one: a call from an ``async def``
(or from the private loop itself) raises `RuntimeError` instead of stalling or deadlocking;
there, use the async queue (``await queue.add(...)``). Jobs come back as `SyncJob`, a snapshot
whose calls (``wait``, ``refresh``, ...) block the same way. Workers stay async: run a
`JobWorker` in its own process (or thread, with its own loop)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import inspect
import os
import threading
import weakref
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar

from . import queue as _queue
from ._core import JobOptions
from .exceptions import JobNotFoundError
from .job import Job
from .observe import QueueMetrics, WorkerInfo
from .queue import BulkItem, JobQueue, JobResult, QueueStats

Q = TypeVar("Q", bound=JobQueue)
T = TypeVar("T")
P = ParamSpec("P")


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


class SyncJob:
    """A job as a `SyncQueue` returned it: the fields of a `Job` as read at that moment
    (`refresh` reads them again), and blocking versions of its calls. It keeps its queue
    open: a job outliving every other reference to its `SyncQueue` still works."""

    __slots__ = ("_job", "_owner")

    def __init__(self, owner: SyncQueue[Any], job: Job) -> None:
        self._owner = owner
        self._job = job

    @property
    def id(self) -> str:
        return self._job.id

    @property
    def name(self) -> str:
        return self._job.name

    @property
    def queue_name(self) -> str:
        return self._job.queue.name

    @property
    def data(self) -> Any:
        return self._job.data

    @property
    def options(self) -> JobOptions:
        return self._job.options

    @property
    def state(self) -> str:
        """The state when the job was read (`get_state` asks again)."""
        return self._job.state

    @property
    def priority(self) -> int:
        return self._job.priority

    @property
    def attempts_made(self) -> int:
        return self._job.attempts_made

    @property
    def stalled_count(self) -> int:
        return self._job.stalled_count

    @property
    def created_at(self) -> int:
        """Milliseconds since the Unix epoch (UTC), as every timestamp here."""
        return self._job.created_at

    @property
    def delay_until(self) -> int:
        return self._job.delay_until

    @property
    def processed_on(self) -> int | None:
        return self._job.processed_on

    @property
    def finished_on(self) -> int | None:
        return self._job.finished_on

    @property
    def progress(self) -> Any:
        return self._job.progress

    @property
    def return_value(self) -> Any:
        return self._job.return_value

    @property
    def failed_reason(self) -> str | None:
        return self._job.failed_reason

    @property
    def stacktrace(self) -> list[str]:
        return self._job.stacktrace

    @property
    def dedup_id(self) -> str | None:
        return self._job.dedup_id

    @property
    def scheduler_key(self) -> str | None:
        return self._job.scheduler_key

    @property
    def parent_key(self) -> str | None:
        return self._job.parent_key

    def refresh(self) -> SyncJob:
        """Reads the job again; returns itself."""
        self._owner._runner.call(self._job.refresh)
        return self

    def get_state(self) -> str:
        return self._owner._runner.call(self._job.get_state)

    def wait(self, timeout: float | None = None) -> Any:
        """Blocks until the job finishes: its return value, or `JobFailedError` if it failed
        for good, `TimeoutError` after ``timeout`` seconds (None: no limit)."""
        job = self._job
        return self._owner._runner.call(lambda: job.wait(timeout), interruptible=True)

    def get_logs(
        self, start: int = 0, end: int = -1, ascending: bool = True
    ) -> tuple[list[str], int]:
        job = self._job
        return self._owner._runner.call(lambda: job.get_logs(start, end, ascending))

    def remove(self) -> None:
        self._owner._runner.call(self._job.remove)

    def retry(self) -> None:
        self._owner._runner.call(self._job.retry)

    def promote(self) -> None:
        self._owner._runner.call(self._job.promote)

    def __repr__(self) -> str:
        return f"<SyncJob id={self.id!r} name={self.name!r} state={self.state}>"


def _blocking_add(
    add: Callable[Concatenate[JobQueue, P], Awaitable[Job]],
) -> Callable[Concatenate[SyncQueue[Any], P], SyncJob]:
    """`SyncQueue.add` made from `JobQueue.add`: the same typed options (spelled once, in
    queue.py, so the two cannot drift), run on the private loop."""

    def blocking(self: SyncQueue[Any], /, *args: P.args, **kwargs: P.kwargs) -> SyncJob:
        queue = self.queue
        return self._view(self._runner.call(lambda: queue.add(*args, **kwargs)))

    blocking.__name__ = blocking.__qualname__ = "add"
    blocking.__doc__ = "`JobQueue.add`, blocking: the same options, returning a `SyncJob`."
    # What help(), pdoc and inspect show: the async add's parameters.
    signature = inspect.signature(add).replace(return_annotation="SyncJob")
    blocking.__signature__ = signature  # type: ignore[attr-defined]
    return blocking


class SyncQueue(Generic[Q]):
    """Blocking calls over ``queue`` (any `JobQueue`), run on a private event loop in a daemon
    thread; safe to call from many threads at once. The `SyncQueue` takes the queue over: use
    it only through this object (or `call`). `close()` (or ``with``) closes the queue and
    stops the thread; one that is never closed is closed when it is garbage-collected or
    when the interpreter exits (its calls in flight are then cancelled)."""

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
        return self._runner.closed

    def __enter__(self) -> SyncQueue[Q]:
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

    def _view(self, job: Job) -> SyncJob:
        return SyncJob(self, job)

    # -------------------------------------------------------------------- add

    add = _blocking_add(JobQueue.add)

    def add_bulk(self, jobs: Iterable[BulkItem], *, now: int | None = None) -> list[SyncJob]:
        """`JobQueue.add_bulk`: ``(name, data[, options])`` tuples, all or none."""
        queue = self.queue
        items = list(jobs)  # read in the caller's thread, not on the loop
        return [
            self._view(job) for job in self._runner.call(lambda: queue.add_bulk(items, now=now))
        ]

    # ---------------------------------------------------------------- reading

    def get_job(self, job_id: str) -> SyncJob | None:
        queue = self.queue
        job = self._runner.call(lambda: queue.get_job(job_id))
        return None if job is None else self._view(job)

    def get_state(self, job_id: str) -> str:
        """The job's state, or ``unknown`` if there is no such job."""
        queue = self.queue
        return self._runner.call(lambda: queue.get_state(job_id))

    def get_job_counts(self, *states: str) -> dict[str, int]:
        """Counts per state, in the order asked; all six when none."""
        queue = self.queue
        return self._runner.call(lambda: queue.get_job_counts(*states))

    def count_pending(self) -> int:
        """Jobs that will still run: waiting + delayed + waiting for children."""
        return self._runner.call(self.queue.count_pending)

    def get_job_count(self, *states: str) -> int:
        """`JobQueue.get_job_count`: the jobs in ``states`` (all when none), in one number."""
        queue = self.queue
        return self._runner.call(lambda: queue.get_job_count(*states))

    def get_stats(self) -> QueueStats:
        """`JobQueue.get_stats`: counts, pause, caps and rate limit, in one read."""
        return self._runner.call(self.queue.get_stats)

    def list_jobs(
        self,
        states: Iterable[str] | str | None = None,
        start: int = 0,
        end: int = -1,
        ascending: bool = True,
    ) -> list[SyncJob]:
        """Jobs in ``states`` (all when None), from index ``start`` to ``end`` inclusive."""
        queue = self.queue
        names = states if states is None or isinstance(states, str) else list(states)
        jobs = self._runner.call(lambda: queue.list_jobs(names, start, end, ascending))
        return [self._view(job) for job in jobs]

    def list_jobs_with_total(
        self,
        states: Iterable[str] | str | None = None,
        start: int = 0,
        end: int = -1,
        ascending: bool = True,
    ) -> tuple[list[SyncJob], int]:
        """`list_jobs`, with the total number of jobs in ``states`` the page was cut from."""
        queue = self.queue
        names = states if states is None or isinstance(states, str) else list(states)
        jobs, total = self._runner.call(
            lambda: queue.list_jobs_with_total(names, start, end, ascending)
        )
        return [self._view(job) for job in jobs], total

    def get_deduplication_ttl(self, dedup_id: str) -> float | None:
        """`JobQueue.get_deduplication_ttl`: seconds the dedup key is still held."""
        queue = self.queue
        return self._runner.call(lambda: queue.get_deduplication_ttl(dedup_id))

    def finished_result(self, job_id: str) -> JobResult:
        queue = self.queue
        return self._runner.call(lambda: queue.finished_result(job_id))

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

    # --------------------------------------------------------------- managing

    def remove(self, job_id: str) -> None:
        """Removes a job with its tree of children (`JobQueue.remove`; refused with
        `JobStateError`, changing nothing, while a worker holds a job of the tree)."""
        queue = self.queue
        self._runner.call(lambda: queue.remove(job_id))

    def retry_job(self, job_id: str, *, reset_attempts: bool = False) -> None:
        """Moves a failed (or completed) job back to waiting, its attempts kept unless
        ``reset_attempts`` (`JobQueue.retry_job`)."""
        queue = self.queue
        self._runner.call(lambda: queue.retry_job(job_id, reset_attempts=reset_attempts))

    def promote(self, job_id: str) -> None:
        """Makes a delayed job waiting now."""
        queue = self.queue
        self._runner.call(lambda: queue.promote(job_id))

    def promote_jobs(self, count: int | None = None) -> int:
        """`JobQueue.promote_jobs`: delayed jobs made waiting now; returns how many."""
        queue = self.queue
        return self._runner.call(lambda: queue.promote_jobs(count))

    def rate_limit(self, seconds: float) -> None:
        """`JobQueue.rate_limit`: holds every claim back for ``seconds``, on every worker."""
        queue = self.queue
        self._runner.call(lambda: queue.rate_limit(seconds))

    def get_rate_limit_ttl(self) -> float:
        """Seconds the rate limits still hold claims back (0: they do not)."""
        return self._runner.call(self.queue.get_rate_limit_ttl)

    def remove_rate_limit_key(self) -> None:
        """Ends the rate-limit wait and the current window, so claims go on at once."""
        self._runner.call(self.queue.remove_rate_limit_key)

    def pause(self) -> None:
        """Stops workers from claiming jobs (adds are still accepted)."""
        self._runner.call(self.queue.pause)

    def resume(self) -> None:
        self._runner.call(self.queue.resume)

    def is_paused(self) -> bool:
        return self._runner.call(self.queue.is_paused)

    def drain(self, delayed: bool = False) -> int:
        """Removes all waiting jobs (and delayed ones with ``delayed``); returns how many."""
        queue = self.queue
        return self._runner.call(lambda: queue.drain(delayed))

    def clean(self, grace: float, limit: int = 0, state: str = "completed") -> list[str]:
        """Removes up to ``limit`` (0 = all) jobs in ``state`` older than ``grace`` seconds;
        returns their ids."""
        queue = self.queue
        return self._runner.call(lambda: queue.clean(grace, limit, state))

    def publish_event(
        self, event: str, data: dict[str, Any] | None = None, *, job_id: str | None = None
    ) -> int:
        """Appends a custom event (`JobQueue.publish_event`); returns its id."""
        queue = self.queue
        return self._runner.call(lambda: queue.publish_event(event, data, job_id=job_id))

    def list_queues(self) -> list[str]:
        """The names of the queues this queue's backend holds (`JobQueue.list_queues`)."""
        return self._runner.call(self.queue.list_queues)

    # ------------------------------------------------------------- observation

    def get_metrics(self, kind: str, start: int = 0, end: int = -1) -> QueueMetrics:
        """`JobQueue.get_metrics`: the ``kind`` ("completed" or "failed") per-minute metrics."""
        queue = self.queue
        return self._runner.call(lambda: queue.get_metrics(kind, start, end))

    def get_workers(self) -> list[WorkerInfo]:
        """`JobQueue.get_workers`: the workers of the queue heard from within their ttl."""
        return self._runner.call(self.queue.get_workers)


def _sync_factory(factory: Callable[P, Q]) -> Callable[P, SyncQueue[Q]]:
    """``factory``'s signature, returning a `SyncQueue` over what it builds."""

    @functools.wraps(factory)
    def make(*args: P.args, **kwargs: P.kwargs) -> SyncQueue[Q]:
        return SyncQueue(factory(*args, **kwargs))

    make.__doc__ = (
        f"A `SyncQueue` over `lanemq.{factory.__name__}` (same arguments): blocking calls "
        "for code without an event loop."
    )
    return make


#: `SyncQueue` over a `lanemq.LocalJobQueue`: ``LocalJobQueue("email", "./lanemq-data")``.
LocalJobQueue = _sync_factory(_queue.LocalJobQueue)
#: `SyncQueue` over a `lanemq.RedisJobQueue`: ``RedisJobQueue("email", url="redis://...")``.
RedisJobQueue = _sync_factory(_queue.RedisJobQueue)
#: `SyncQueue` over a `lanemq.InMemoryJobQueue` (process-local; for tests).
InMemoryJobQueue = _sync_factory(_queue.InMemoryJobQueue)


__all__ = ["InMemoryJobQueue", "LocalJobQueue", "RedisJobQueue", "SyncJob", "SyncQueue"]
