"""`JobWorker`: runs processors for a queue's jobs: ``async def`` ones on the caller's event
loop, plain ``def`` ones in worker threads.

The loop claims jobs in batches up to its free capacity, starts one asyncio task per job, and
reports outcomes in batches (`complete_many` / `fail_many`), so no job costs an awaited round
trip of its own. One call per renewal period renews every held lease, and stalled recovery runs
every ``stalled_interval``.

The bookkeeping (running jobs, outcomes waiting, calls in flight, pause, back-off, counters) is
the Rust `WorkerBook`, which also decides each turn of the loop in one synchronous call; the
package keeps what is asyncio's: tasks, timers, hooks, signals and close, one concern per
module (`_state` lists them). This module is the public class: set-up, run and close."""

from __future__ import annotations

import asyncio
import functools
import logging
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, overload

from .. import _tracing
from .._core import WorkerBook
from .._results import encoded_result
from ..exceptions import BackendConnectionError, ConfigError
from ..queue import JobQueue
from . import _log as _worker_log
from ._batches import (
    Batcher,
    BatchProcessor,
    Gate,
    GroupedBatcher,
    as_async_batch,
    check_batch_options,
    gated,
)
from ._calls import (
    AsyncProcessor,
    Middleware,
    Processor,
    as_async,
    is_async_callable,
    with_middleware,
)
from ._close import check_seconds, wind_down
from ._controls import Controls, check_block_timeout, checked_limiter
from ._observe import WorkerObserver, check_observe
from ._retries import (
    BackoffStrategy,
    ExceptionTypes,
    RetryTypes,
    checked_exception_types,
    checked_strategies,
)
from ._signals import SignalHandlers
from ._state import HOOKS, checked_concurrency, checked_prefetch
from ._stepping import step

if TYPE_CHECKING:
    from ..observability.otel import WorkerTracing

log = logging.getLogger("lanemq.worker")

P = TypeVar("P", bound=Processor)
B = TypeVar("B", bound=BatchProcessor)
M = TypeVar("M", bound=Middleware)


class JobWorker(Controls):
    """Processes jobs of ``queue``: ``processors`` maps job names to ``async def f(job)``
    (a single callable handles every name). At most ``concurrency`` jobs run at once; each
    claim holds a job for ``lease`` seconds, renewed every ``renew_every`` (default: half the
    lease) while it runs.

    An idle worker waits for a job in one blocking call to the backend (woken by adds,
    retries, resumes and delayed jobs coming due), which lasts at most ``block_timeout``
    seconds (BullMQ's ``drainDelay``; default: ``stalled_interval``) before the loop turns
    again. ``limiter=(max_jobs, per_seconds)`` limits this worker alone (the seed's
    worker-local limiter): it starts at most ``max_jobs`` jobs per window of ``per_seconds``
    (opened by the first start after the last window closed), whatever the queue's own rate
    limit (`JobQueue.set_rate_limit`) allows; the jobs it leaves stay waiting for other
    workers. `pause` / `resume` stop and restart this worker's claims alone.

    On a remote backend (Redis, local) the worker claims ahead: up to ``prefetch`` jobs beyond
    its concurrency (None, the default: as many as the concurrency, up to 10; 0: none) are
    claimed and held active and leased, but not started; they start in claim order as slots
    free, so at low concurrency each call to the backend claims twice the jobs and costs a
    quarter less CPU per job on both sides (benches/history/18.md). Their leases are renewed
    with the running jobs' (stalled recovery does not take them while the worker lives); a
    cancel drops one; close (graceful or forced) gives them back to waiting at once, their
    attempt unused; a paused worker still starts them. The trade: a held job waits for this
    worker's slots though another worker may be idle, and a job of higher priority added
    meanwhile starts after the ones held (at most ``prefetch`` of them): set ``prefetch=0``
    where that matters more than the throughput. A held job that waited longer than its lease
    (as written at its claim) is given back unstarted, as any job whose lease ran out before it
    started. In memory a call returns at once and nothing is claimed ahead.

    A plain ``def f(job)`` processor (one that is not an ``async def`` function, a
    `functools.partial` of one, or an object with an ``async def __call__``) runs in the
    loop's default executor, so at most that executor's threads run at once (``min(32, CPUs +
    4)`` by default; `loop.set_default_executor` sets more). Its result or exception counts as
    a coroutine's would. It calls the job's methods through `Job.sync` (``job.sync.log("x")``,
    ``job.sync.update_progress(50)``), which run them on the worker's loop. A thread cannot be
    stopped: when the job times out it fails with `TimeoutError` at once, the thread runs on,
    its result is ignored and its later writes through `Job.sync` raise `LockMismatchError`
    (the process still waits for the thread at exit: `asyncio.run` joins the executor).
    If such a function returns an awaitable, that is awaited on the loop. At close, a
    thread is waited for within the grace; only past it is its job released (and may run
    twice). An ``async def`` processor that catches the cancellation of its timeout cannot be
    stopped either: its job fails at the deadline all the same, and its task runs on as a
    stray (``stray_tasks``), its result ignored.

    A job's return value is encoded as JSON when the job ends, once: one that JSON cannot hold
    fails that job as if its processor had raised `TypeError`, one over the queue's
    ``max_payload_bytes`` as if it had raised `ValueError` (each retried by the job's policy);
    the other jobs reported with it are not affected.

    Counters (of this worker object, since it was made): ``processed``, the jobs it completed;
    ``failed``, the jobs it failed for good (no retry left, `UnrecoverableError`, no processor;
    as BullMQ's failed metric and the queue's ``failed`` state count them); ``attempts_failed``,
    every failed attempt it recorded, retried or not (as the ``failed`` hook fires). Jobs that
    stalled recovery fails are not counted here: this worker did not run them.

    A job whose name has no processor is failed at once (BullMQ's behaviour), unless
    ``unknown_name_retries`` is N > 0 (for rolling deploys, where a newer worker knows the
    name): then it is moved back to delayed for ``unknown_name_delay`` seconds, at most N
    times in all (counted across workers, by a log line on the job each time), then failed;
    each postponement calls the ``error`` hooks with an `UnknownJobNameWarning`.

    Retries by exception type (celery's ``autoretry_for``): with ``retry_on`` (an exception
    class or a tuple of them) only those exceptions are retried, and an exception in
    ``no_retry_on`` never is; any other fails its job for good at once, as `UnrecoverableError`
    does (the attempts left are not used). ``@worker.processor(name, retry_on=...,
    no_retry_on=...)`` sets either for one processor's jobs, in place of the worker's (a batch
    processor's jobs follow the worker's). They apply to what a processor raises (not to
    timeouts or cancellations).

    Custom backoff (BullMQ's ``backoffStrategy``): ``backoff_strategies={"name": fn}``
    registers ``fn(attempts_made, error, job) -> seconds`` (an int or float >= 0; it may be
    ``async def``; ``attempts_made`` is 1 at the first retry), used by the jobs added with
    ``backoff=Backoff.custom("name")``: at each retry the worker computes the delay and the
    job is delayed that long. A name this worker does not know, a strategy that raises or one
    that returns anything else fails the job for good with a `ConfigError` saying so.

    Observation (`lanemq.observe`): while ``run()`` runs, the worker heartbeats its
    `WorkerInfo` every ``heartbeat_interval`` seconds (at least 1; its entry lives three
    intervals), so `JobQueue.get_workers` lists it, and it leaves the registry at close. With
    ``metrics_max_data_points`` (None: off, as BullMQ's ``metrics`` option; `MetricsTime` has
    usual values) it records the jobs it completed and failed for good per minute
    (`JobQueue.get_metrics`), at most once a second and at close: nothing is added to the calls
    that claim or finish jobs. `run_once` and `run_until_idle` record the metrics too (as they
    return), but do not heartbeat."""

    def __init__(
        self,
        queue: JobQueue,
        processors: dict[str, Processor] | Processor | None = None,
        concurrency: int = 1,
        lease: float = 30.0,
        renew_every: float | None = None,
        stalled_interval: float = 30.0,
        name: str | None = None,
        unknown_name_retries: int = 0,
        unknown_name_delay: float = 5.0,
        metrics_max_data_points: int | None = None,
        heartbeat_interval: float = 5.0,
        block_timeout: float | None = None,
        limiter: tuple[int, float] | None = None,
        retry_on: ExceptionTypes | None = None,
        no_retry_on: ExceptionTypes | None = None,
        backoff_strategies: dict[str, BackoffStrategy] | None = None,
        prefetch: int | None = None,
    ) -> None:
        if concurrency < 1:
            raise ConfigError(f"invalid concurrency: {concurrency} (must be >= 1)")
        if not lease > 0:
            raise ConfigError(f"invalid lease: {lease} (must be > 0 seconds)")
        renew_every = lease / 2 if renew_every is None else renew_every
        if not 0 < renew_every < lease:
            raise ConfigError(f"invalid renew_every: {renew_every} (must be > 0 and < lease)")
        if not stalled_interval > 0:
            raise ConfigError(f"invalid stalled_interval: {stalled_interval} (must be > 0)")
        retries = unknown_name_retries
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise ConfigError(f"invalid unknown_name_retries: {retries!r} (must be an int >= 0)")
        check_seconds("unknown_name_delay", unknown_name_delay, optional=False)
        check_observe(heartbeat_interval, metrics_max_data_points)
        block_timeout = stalled_interval if block_timeout is None else block_timeout
        check_block_timeout(block_timeout)
        limit = checked_limiter(limiter)
        prefetch = checked_prefetch(prefetch)
        # Which exceptions a failed attempt is retried for: the worker's, and the processors'
        # own (keyed by their job name, None for the default one), each keyword in place of
        # the worker's.
        self._retry_policy = RetryTypes(
            checked_exception_types("retry_on", retry_on),
            checked_exception_types("no_retry_on", no_retry_on),
        )
        self._retry_policies: dict[str | None, RetryTypes] = {}
        self._backoff_strategies = checked_strategies(backoff_strategies)
        self.queue = queue
        self._remote = queue.remote
        # The running jobs, the outcomes waiting to be reported, the calls in flight, pause,
        # back-off and counters, and the decision of each turn of the loop (`_step`): Rust
        # (lanemq_core::worker). Python keeps the tasks, timers, hooks and close.
        self._book = WorkerBook(checked_concurrency(concurrency), self._remote, prefetch)
        self._book.set_limit(limit)
        # Who waits for this worker's loop: `pause` until nothing runs, `run_until_idle` /
        # `run_once` (called while it runs) until nothing is ready either; `_recheck`: a
        # claim is due first (`Loop._tell_idle`).
        self._looping = False
        self._drain_waiters: list[asyncio.Future[None]] = []
        self._idle_waiters: list[asyncio.Future[None]] = []
        self._recheck = False
        # Batch processors (`batch_processor`): their options and the batcher of each name.
        # With one, ``concurrency`` slots (`_gate`) hold batches and single jobs alike, and
        # the book, which counts jobs, has room for that many full batches.
        self._slots = concurrency
        self._batch_handlers: dict[str, tuple[BatchProcessor, int, int, float]] = {}
        self._batchers: dict[str, Batcher | GroupedBatcher] = {}
        self._gate = Gate(lambda: self._slots)
        self._batch_runs: set[asyncio.Task[None]] = set()
        self.lease = lease
        self.renew_every = renew_every
        self.stalled_interval = stalled_interval
        self.block_timeout = block_timeout
        self.limiter = limit
        self.unknown_name_retries = unknown_name_retries
        self.unknown_name_delay = unknown_name_delay
        self.metrics_max_data_points = metrics_max_data_points
        self.heartbeat_interval = heartbeat_interval
        self.id = name or f"worker-{uuid.uuid4().hex[:12]}"
        # The processors as registered, and as called (`_rebuild` makes the second from the
        # first: plain functions go to a thread).
        self._handlers: dict[str, Processor] = {}
        self._default_handler: Processor | None = None
        self._middleware: list[Middleware] = []
        self._processors: dict[str, AsyncProcessor] = {}
        self._default: AsyncProcessor | None = None
        if callable(processors):
            self._default_handler = processors
        elif processors is not None:
            self._handlers.update(processors)
        self._rebuild()
        self._hooks: dict[str, list[Callable[..., Any]]] = {hook: [] for hook in HOOKS}
        self._timers: dict[asyncio.Task[Any], asyncio.TimerHandle] = {}
        # Tasks of timed-out jobs that had not ended when their job was failed: a processor
        # that catches `CancelledError` runs on, and nothing can stop it (`stray_tasks`).
        self._strays: set[asyncio.Task[Any]] = set()
        # Cancel requests heard for jobs claimed by this worker but not started yet (the claim
        # was in flight): job id -> (lock token, reason, when heard), matched at the start.
        self._awaited_cancels: dict[str, tuple[str, str, float]] = {}
        # The queue-wide wait that a RateLimitError(delay) asked for, set by `_flush` before
        # the job goes back (0.0: none).
        self._hold_queue = 0.0
        self._wake_future: asyncio.Future[None] | None = None
        # The tasks of the calls that report completions and claim on a remote backend (at
        # most two in flight).
        self._exchanges: set[asyncio.Task[bool]] = set()
        # The last of them that claimed: the next one admits its jobs after this one's (`_call`).
        self._last_claim: asyncio.Task[bool] | None = None
        self._closing = False
        self._force = False
        # When close()'s grace ends (loop time), and the tasks it cancelled then: their jobs
        # go back to waiting.
        self._deadline: float | None = None
        self._releasing: set[asyncio.Task[Any]] = set()
        # Jobs' tasks end in `WorkerBook.task_done`, which hands `_done` what it does not
        # handle itself (it looks at the timers and the releases).
        # (results are encoded and checked against the queue's limit as each job ends)
        encode = functools.partial(encoded_result, max_payload_bytes=queue.max_payload_bytes)
        self._book.watch(self._done, self._timers, self._releasing, encode)
        self._running: asyncio.Task[None] | None = None
        self._run_done: asyncio.Future[None] | None = None
        self._stopped = asyncio.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        # What reports outcomes (the queue, or its traced calls) and the tracing installed on
        # this worker: lanemq.otel sets both at the start of a run while tracing is on.
        self._outcomes: _tracing.Outcomes = queue
        self._traced_by: WorkerTracing | None = None
        # How the chores' failures are logged: an unreachable backend once, not every round.
        self._outage = _worker_log.Outage(self.id)

    # --------------------------------------------------------------- set-up

    @overload
    def processor(self, name: P, /) -> P: ...

    @overload
    def processor(
        self,
        name: str | None = None,
        *,
        retry_on: ExceptionTypes | None = None,
        no_retry_on: ExceptionTypes | None = None,
    ) -> Callable[[P], P]: ...

    def processor(
        self,
        name: str | P | None = None,
        *,
        retry_on: ExceptionTypes | None = None,
        no_retry_on: ExceptionTypes | None = None,
    ) -> Callable[[P], P] | P:
        """Registers ``async def f(job)`` (or a plain ``def``, run in a thread) for jobs
        called ``name`` (every name when None): ``@worker.processor("send")``. Used bare,
        ``@worker.processor`` registers the function under its own ``__name__``, as
        ``@worker.processor("<its name>")`` would. A ``name`` that is neither a str, None nor
        a function raises `TypeError`. ``retry_on`` / ``no_retry_on`` (an exception class or a
        tuple of them) replace the worker's same keyword for this processor's jobs; either
        that is not raises `ConfigError`."""
        policy = self._retry_policy.overridden(retry_on, no_retry_on)
        own = retry_on is not None or no_retry_on is not None
        if callable(name):
            fn = name
            label = getattr(fn, "__name__", None)
            if not isinstance(label, str):
                raise TypeError(
                    f"@worker.processor used bare needs a function with a __name__, got {fn!r}"
                    " (use @worker.processor('<job name>'))"
                )
            return self.processor(label)(fn)
        if name is not None and not isinstance(name, str):
            raise TypeError(f"processor name must be a str or None, got {name!r}")

        def register(fn: P) -> P:
            if not callable(fn):
                raise TypeError(f"processor must be callable, got {fn!r}")
            if name in self._batch_handlers:
                raise ConfigError(f"job name {name!r} already has a batch processor")
            if name is None:
                self._default_handler = fn
            else:
                self._handlers[name] = fn
            if own:
                self._retry_policies[name] = policy
            else:
                self._retry_policies.pop(name, None)  # (a processor registered again)
            self._rebuild()
            return fn

        return register

    def batch_processor(
        self,
        name: str,
        size: int = 100,
        min_size: int | None = None,
        timeout: float = 1.0,
        *,
        group_affinity: bool = False,
    ) -> Callable[[B], B]:
        """Registers ``async def f(jobs: list[Job]) -> list`` (or a plain ``def``, run in a
        thread) for jobs called ``name``, run with up to ``size`` of them at once:
        ``@worker.batch_processor("resize", size=50)``. It returns one result per job, in
        order (a list of another length fails every job of the batch). Claimed jobs of the
        name wait for their batch until ``min_size`` (default ``min(10, size)``) are there, or
        ``timeout`` seconds at most, then run with what there is (never an empty batch).

        A batch takes one of the ``concurrency`` slots, as a single job does: with a batch
        processor, ``concurrency`` counts batches and single jobs, and the worker claims up to
        ``concurrency * size`` jobs. Each job keeps its own lease (renewed while the batch
        runs), retries, events, hooks and counters. ``job.set_as_failed(error)`` in the
        processor fails that job alone (its slot of the result is ignored); a processor that
        raises fails every job of the batch; a result that cannot be encoded fails its job
        alone. A timeout of the jobs applies to the batch: the smallest of them. Middleware
        (`use`) wraps single processors only. A name has a batch or a single processor, not
        both (`ConfigError`). With ``group_affinity=True`` a batch holds the jobs of one
        group only (`JobQueue.add(..., group=...)`; ungrouped jobs are a group of their own),
        each group gathering its own batch."""
        if not isinstance(name, str):
            raise TypeError(f"batch processor name must be a str, got {name!r}")
        least = min(10, size) if min_size is None and isinstance(size, int) else min_size
        check_batch_options(size, least, timeout)
        assert least is not None  # (checked)
        if name in self._handlers:
            raise ConfigError(f"job name {name!r} already has a processor")

        def register(fn: B) -> B:
            if not callable(fn):
                raise TypeError(f"batch processor must be callable, got {fn!r}")
            self._batch_handlers[name] = (fn, size, least, float(timeout))
            make = functools.partial(Batcher, self, name, as_async_batch(fn), size, least, timeout)
            self._batchers[name] = GroupedBatcher(make) if group_affinity else make()
            self._rebuild()
            return fn

        return register

    def use(self, middleware: M) -> M:
        """Adds ``async def middleware(job, call_next)`` around every processor call:
        ``await call_next()`` runs the next middleware (or the processor) and returns its
        result, which the middleware may change; exceptions pass through it, to catch or
        let go. The first one added is outermost. Middleware runs on the event loop, also
        around a plain ``def`` processor (only that goes to a thread), so context variables
        it sets are seen by the processor. (A job with no processor is failed without it.)
        Returns ``middleware``, so it works as a decorator. Without middleware the processor
        is called directly: nothing to pay for."""
        if not is_async_callable(middleware):
            raise TypeError(
                f"middleware must be an async def (job, call_next) callable, got {middleware!r}"
            )
        self._middleware.append(middleware)
        self._rebuild()
        return middleware

    def _rebuild(self) -> None:
        """Makes the callables `_start` calls from the registered processors and middleware."""
        self._processors = {name: self._callable(fn) for name, fn in self._handlers.items()}
        handler = self._default_handler
        self._default = None if handler is None else self._callable(handler)
        self._size_book()

    def _size_book(self) -> None:
        """The book counts jobs: with batch processors, room for a full batch per slot."""
        sizes = [size for _, size, _, _ in self._batch_handlers.values()]
        self._book.concurrency = self._slots * max(sizes, default=1)

    def _callable(self, processor: Processor) -> AsyncProcessor:
        call = as_async(processor)
        call = with_middleware(call, self._middleware) if self._middleware else call
        # (with a batch processor, a single job takes a slot as a batch does)
        return gated(call, self._gate) if self._batch_handlers else call

    def on(self, event: str, callback: Callable[..., Any]) -> None:
        """Hooks: ``completed(job, result)``, ``failed(job, error)`` (every failed attempt),
        ``dead(job, error)`` (once, when a job fails for good), ``stalled(job_id)``,
        ``error(error)``. A hook that raises is logged; it never fails a job."""
        if event not in self._hooks:
            raise ValueError(f"unknown worker event: {event!r} (events: {', '.join(HOOKS)})")
        self._hooks[event].append(callback)

    @property
    def concurrency(self) -> int:
        """At most this many jobs run at once (with a batch processor, batches and single
        jobs: one slot each). It may be set before `run()` (as ``lanemq worker
        --concurrency`` does); each claim then asks for up to half of it."""
        return self._slots

    @concurrency.setter
    def concurrency(self, value: int) -> None:
        self._slots = checked_concurrency(value)
        self._size_book()

    @property
    def processed(self) -> int:
        """Jobs this worker completed."""
        return self._book.processed

    @property
    def failed(self) -> int:
        """Jobs this worker failed for good."""
        return self._book.failed

    @property
    def attempts_failed(self) -> int:
        """Failed attempts this worker recorded, retried or not."""
        return self._book.attempts_failed

    @property
    def stray_tasks(self) -> int:
        """Tasks of timed-out jobs still running: their processor caught the cancellation
        (`CancelledError`) and went on. Their jobs failed with `TimeoutError` at the deadline
        and their slots are free; Python cannot kill a task, so each runs until it returns by
        itself, and what it returns is ignored."""
        return len(self._strays)

    # ------------------------------------------------------------------ run

    async def run(
        self, *, install_signal_handlers: bool = False, grace: float | None = 8.0
    ) -> None:
        """Processes jobs until `close()`. Called while the worker runs already (inside
        ``async with worker``, say), it returns at once: there is one loop per worker.

        With ``install_signal_handlers`` (Unix, main thread; `RuntimeError` otherwise), SIGTERM
        or SIGINT starts ``close(grace=grace)`` (default 8 s, below Docker's 10 s stop timeout)
        and a second one ``close(force=True)``; run() then returns normally, and the handlers
        there before (the loop's or Python's) are back."""
        check_seconds("grace", grace)
        if self._running is not None and self._running is not asyncio.current_task():
            if self._looping:
                log.debug("worker %s: run() called while it runs: nothing to start", self.id)
                return
            raise RuntimeError(f"worker {self.id} is already running (run_once or run_until_idle)")
        loop = asyncio.get_running_loop()
        _tracing.prepare_worker(self)
        signals = SignalHandlers(self, loop, grace) if install_signal_handlers else None
        if signals is not None:
            signals.install()
        self._running = asyncio.current_task()
        self._looping = True
        self._loop = loop
        if not self._closing:
            # A fresh run: a grace or force left by an earlier close() or run_until_idle()
            # timeout must not cut this run's close() short.
            self._deadline = None
            self._force = False
        log.info(
            "worker %s: running on queue %s (concurrency %d)",
            self.id,
            self.queue.name,
            self.concurrency,
        )
        self._stopped = asyncio.Event()
        run_done = self._run_done = loop.create_future()
        observer = WorkerObserver(self)
        chores = [
            loop.create_task(self._every(self.renew_every, self._renew)),
            loop.create_task(self._every(self.stalled_interval, self._recover)),
            loop.create_task(observer.run(self._stopped)),
            loop.create_task(self._listen_cancels()),
        ]
        try:
            while not self._closing:
                try:
                    await self._step(loop)
                except Exception as error:
                    # The backend failed (say, Redis went away): keep the outcomes, wait, retry;
                    # the worker resumes by itself once the backend is back. An unreachable
                    # server is asked every 0.1 s meanwhile and the wait ends when it answers:
                    # the leases of finished jobs run out while their outcomes wait.
                    backoff = self._book.back_off()  # 0.1 s, doubling up to 5 s
                    log.warning("worker %s: %s; retrying in %.1fs", self.id, error, backoff)
                    await self._hook("error", error)
                    if isinstance(error, BackendConnectionError):
                        await self._pause_until_reachable(backoff, loop)
                    else:
                        await self._pause(backoff, loop)
        finally:
            # Renewals go on while running jobs finish; a chore in progress completes (its
            # hooks included) before run() returns.
            try:
                await self._wind_down()
            finally:
                self._stopped.set()
                await asyncio.gather(*chores, return_exceptions=True)
                await observer.finish()  # the last metrics, then out of the registry
                self._running = self._run_done = None
                self._looping = False
                self._end_waits()
                run_done.set_result(None)
                log.info(
                    "worker %s: stopped (%d completed, %d failed for good, %d failed attempts)",
                    self.id,
                    self.processed,
                    self.failed,
                    self.attempts_failed,
                )
                if signals is not None:
                    signals.restore()
                    await signals.finish()

    async def run_once(self, *, block: bool = False, timeout: float | None = None) -> int:
        """Claims one batch (up to ``concurrency`` jobs that are ready: waiting, or delayed and
        due), runs it to its end, reports the outcomes and returns how many it processed: the
        completions and failed attempts recorded (a job moved to delayed, released after a
        `RateLimitError` or whose lease was lost is not counted). For tests and scripts; it
        renews leases meanwhile, but runs no stalled recovery (`JobQueue.recover_stalled`).

        With ``block`` (the seed's ``run_once_blocking``), it first waits for a job to be
        ready, in the backend's blocking wait as an idle `run()` does (no polling), at most
        ``timeout`` seconds (None: as long as it takes), and returns 0 if none came. A paused
        worker, or one whose ``limiter`` window is full, claims nothing and returns 0.

        On a worker that runs (inside ``async with worker``), it does what `run_until_idle`
        does there (waits until nothing is ready and nothing runs, and returns the number
        processed since the call), for at most ``timeout`` seconds, then returns the count so
        far. While another `run_once` or `run_until_idle` is in progress, `RuntimeError`."""
        check_seconds("timeout", timeout)
        if self._running is not None and self._looping:
            return await self._until_idle(raise_on_timeout=False, timeout=timeout)
        return await step(self, until_idle=False, timeout=None, block=block, wait=timeout)

    async def run_until_idle(self, timeout: float | None = None) -> int:
        """Processes what is ready until nothing is (no waiting job, no delayed job due; a
        retry whose backoff has not passed is not ready) and nothing runs, then returns the
        number processed, counted as `run_once` counts. A job that a finished one made ready
        (a retry without backoff, a flow's parent) is processed too. After ``timeout``
        seconds it stops: the jobs still running are cancelled and released back to waiting
        (as `close` does when its grace runs out) and `TimeoutError` is raised. Nothing is left
        running when it returns or raises. A paused worker, or one whose ``limiter`` window is
        full, has nothing ready: what it took until then is its count.

        On a worker that runs (inside ``async with worker``), it starts nothing of its own:
        it waits until the running loop has nothing ready and nothing running (a claim made
        since the call found nothing), and returns the number the loop processed since the
        call; past ``timeout`` it raises `TimeoutError` and the loop goes on with its jobs.
        While another `run_once` or `run_until_idle` is in progress, `RuntimeError`."""
        check_seconds("timeout", timeout)
        if self._running is not None and self._looping:
            return await self._until_idle(raise_on_timeout=True, timeout=timeout)
        return await step(self, until_idle=True, timeout=timeout)

    # ------------------------------------------------------------------ close

    async def _wind_down(self) -> None:
        await wind_down(self)

    async def close(self, force: bool = False, grace: float | None = None) -> None:
        """Stops claiming at once and waits for running jobs to finish and be reported, at
        most ``grace`` seconds (None: as long as they take; 0: not at all). Jobs still running
        then are cancelled and released back to waiting at once (`JobQueue.release`: at the
        front of their priority, the attempt given back, so ``attempts_made`` is as before the
        claim; no lease wait, not reported as failed). A plain ``def`` processor's thread
        cannot be stopped: its job is released all the same and what the thread does later is
        ignored. With ``force``, cancels running jobs at once and leaves them to stalled
        recovery (their leases run out), as before; this also cuts a pending grace short.
        Returns once the worker has stopped. Calling it again may shorten the grace."""
        check_seconds("grace", grace)
        if grace is not None:
            deadline = asyncio.get_running_loop().time() + grace
            if self._deadline is None or deadline < self._deadline:
                self._deadline = deadline
        if not self._closing and self._running is not None:
            log.info(
                "worker %s: closing%s with %d job(s) running",
                self.id,
                " (force)" if force else "" if grace is None else f" (grace {grace}s)",
                self._book.running,
            )
        self._closing = True
        self._force = self._force or force
        self._poke()
        running = self._running
        if running is not None and running is not asyncio.current_task():
            run_done = self._run_done
            if run_done is not None:
                # Not the task: run() may be awaited by a task that goes on afterwards.
                await asyncio.shield(run_done)
            else:  # started by __aenter__, not yet running
                await asyncio.gather(running, return_exceptions=True)

    async def __aenter__(self) -> JobWorker:
        self._closing = self._force = False
        self._deadline = None
        self._running = asyncio.get_running_loop().create_task(self.run())
        await asyncio.sleep(0)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()
