"""Batch processors (`JobWorker.batch_processor`): ``async def f(jobs) -> list`` called with
up to ``size`` jobs of one name at once.

Each job of a batch is a running job of the book like any other, with a task of its own that
waits for its slot of the batch's outcome: leases, renewals, outcomes (encoding, retries,
hooks, counters), timeouts and close's releases are the single-job machinery's, per job, with
nothing added to that path. What is the batches' own is here: the `Gate` (``concurrency``
counts batches and single jobs alike, one slot each, while the worker has a batch processor),
the `Batcher` of a name (gathers claimed jobs until ``min_size`` are there or ``timeout``
passed, then waits for a slot) and the run of one batch (its processor's result or error
spread over its jobs)."""

from __future__ import annotations

import asyncio
import contextvars
import functools
import logging
import math
from collections import deque
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..exceptions import ConfigError
from ..job import Job
from . import _log as _worker_log
from ._calls import AsyncProcessor, in_executor, is_async_callable
from ._state import log

if TYPE_CHECKING:
    from ._state import WorkerState

BatchProcessor = Callable[[list[Job]], Any]
"""``async def f(jobs) -> list`` (one result per job, in order), or a plain ``def`` (run in a
worker thread)."""
AsyncBatchProcessor = Callable[[list[Job]], Any]


def check_batch_options(size: object, min_size: object, timeout: object) -> None:
    """Raises `ConfigError` naming the first bad value."""
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ConfigError(f"invalid batch size: {size!r} (must be an integer >= 1)")
    if isinstance(min_size, bool) or not isinstance(min_size, int) or not 1 <= min_size <= size:
        raise ConfigError(f"invalid batch min_size: {min_size!r} (must be an integer in 1..{size})")
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout >= 0:
        raise ConfigError(f"invalid batch timeout: {timeout!r} (must be >= 0 seconds)")


def as_async_batch(processor: BatchProcessor) -> AsyncBatchProcessor:
    """``processor`` itself when it is async, else an async function that runs it in the
    loop's default executor with the caller's context (as `in_thread` does for one job: each
    job is bound to the loop first, for its `Job.sync` calls from the thread)."""
    if is_async_callable(processor):
        return processor

    @functools.wraps(processor)
    async def run_in_thread(jobs: list[Job]) -> Any:
        for job in jobs:
            job.sync  # noqa: B018 - read on the loop, it binds the job to it for the thread
        return await in_executor(processor, jobs)

    return run_in_thread


class Gate:
    """The worker's concurrency slots while it has a batch processor: a batch and a single job
    take one each (the book then counts jobs, and holds room for full batches). First come,
    first served, so neither starves the other."""

    def __init__(self, limit: Callable[[], int]) -> None:
        self._limit = limit
        self._busy = 0
        self._waiters: deque[asyncio.Future[None]] = deque()

    async def acquire(self) -> None:
        if self._busy < self._limit() and not self._waiters:
            self._busy += 1
            return
        turn = asyncio.get_running_loop().create_future()
        self._waiters.append(turn)
        try:
            await turn
        except asyncio.CancelledError:
            if turn.done() and not turn.cancelled():
                self.release()  # handed a slot, then cancelled before it resumed
            raise

    def release(self) -> None:
        self._busy -= 1
        while self._waiters and self._busy < self._limit():
            turn = self._waiters.popleft()
            if not turn.done():  # (a waiter cancelled meanwhile)
                self._busy += 1
                turn.set_result(None)


def gated(call: AsyncProcessor, gate: Gate) -> AsyncProcessor:
    """A single job's processor that runs once it has a slot of ``gate``."""

    async def run(job: Job) -> Any:
        await gate.acquire()
        try:
            return await call(job)
        finally:
            gate.release()

    return run


class Batcher:
    """The claimed jobs of one batch processor's name waiting for their batch."""

    def __init__(
        self,
        worker: WorkerState,
        name: str,
        call: AsyncBatchProcessor,
        size: int,
        min_size: int,
        timeout: float,
    ) -> None:
        self.worker = worker
        self.name = name
        self.call = call
        self.size = size
        self.min_size = min_size
        self.timeout = timeout
        # Each job with the future its task waits on (set with its slot of the outcome).
        self._pending: list[tuple[Job, asyncio.Future[Any]]] = []
        self._timer: asyncio.TimerHandle | None = None
        self._queued = False

    def add(self, job: Job, slot: asyncio.Future[Any]) -> None:
        self._pending.append((job, slot))
        self._check()

    @property
    def idle(self) -> bool:
        """Nothing gathered, no batch queued."""
        return not self._pending and not self._queued

    def _check(self) -> None:
        """Queues a batch for a slot once ``min_size`` jobs wait, or starts the wait of
        ``timeout`` for the first of fewer."""
        if self._queued or not self._pending:
            return
        if len(self._pending) >= self.min_size:
            self._queue()
        elif self._timer is None and not math.isinf(self.timeout):
            loop = asyncio.get_running_loop()
            self._timer = loop.call_later(self.timeout, self._expire)

    def _expire(self) -> None:
        self._timer = None
        if self._pending and not self._queued:
            self._queue()

    def _queue(self) -> None:
        self._queued = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        task = asyncio.get_running_loop().create_task(self._run())
        runs = self.worker._batch_runs
        runs.add(task)
        task.add_done_callback(runs.discard)

    async def _run(self) -> None:
        """Takes a slot, then up to ``size`` of the jobs waiting then (more may have come
        meanwhile) and runs them; the rest wait for the next batch."""
        gate = self.worker._gate
        await gate.acquire()
        try:
            self._queued = False
            live = [member for member in self._pending if not member[1].done()]
            batch, self._pending = live[: self.size], live[self.size :]
            self._check()
            if batch:  # (never an empty batch: its jobs may have timed out or been released)
                await run_batch(self.worker, self.name, self.call, batch)
        finally:
            gate.release()


class GroupedBatcher:
    """A batch processor's `Batcher` per group (``group_affinity=True``): a batch holds the
    jobs of one group only (ungrouped jobs are a group of their own), each group gathering to
    ``min_size`` or its ``timeout`` on its own. Claims take groups in turns, so one claim's
    jobs spread over groups: each group's batch fills from the claims that follow."""

    #: Past this many groups seen, the batchers with nothing gathered are forgotten at the
    #: next add, so a worker that meets many groups keeps only the live ones.
    KEEP_IDLE = 1000

    def __init__(self, make: Callable[[], Batcher]) -> None:
        """``make``: a new `Batcher` of the processor, for a group met for the first time."""
        self._make = make
        self._by_group: dict[str | None, Batcher] = {}

    def add(self, job: Job, slot: asyncio.Future[Any]) -> None:
        batchers = self._by_group
        batcher = batchers.get(job.group)
        if batcher is None:
            if len(batchers) >= self.KEEP_IDLE:
                for group in [g for g, b in batchers.items() if b.idle]:
                    del batchers[group]
            batcher = batchers[job.group] = self._make()
        batcher.add(job, slot)


async def wait_for_slot(slot: asyncio.Future[Any]) -> Any:
    """A batch job's task: its slot of the batch's outcome."""
    return await slot


def start_batched(worker: WorkerState, jobs: Sequence[Job]) -> list[Job]:
    """Starts the jobs of ``jobs`` whose name has a batch processor (each in the book, with a
    task that waits for its slot of its batch) and returns the others, to start one by one."""
    batchers = worker._batchers
    loop = asyncio.get_running_loop()
    book = worker._book
    done = book.task_done
    context = contextvars.copy_context()
    debug = log.isEnabledFor(logging.DEBUG)
    singles: list[Job] = []
    for job in jobs:
        batcher = batchers.get(job.name)
        if batcher is None:
            singles.append(job)
            continue
        if debug:
            _worker_log.started(worker.id, job)
        slot: asyncio.Future[Any] = loop.create_future()
        task = loop.create_task(wait_for_slot(slot))
        book.start(task, job)  # (a timeout applies to the batch, when it runs: `run_batch`)
        task.add_done_callback(done, context=context)
        # A task cancelled before its first step never awaited its slot: end the slot too.
        task.add_done_callback(functools.partial(_end_slot, slot), context=context)
        batcher.add(job, slot)
    return singles


async def run_batch(
    worker: WorkerState,
    name: str,
    call: AsyncBatchProcessor,
    batch: list[tuple[Job, asyncio.Future[Any]]],
) -> None:
    """Calls the processor with the batch's jobs and gives each job its outcome: its result,
    the error `Job.set_as_failed` gave it, or the error of the whole batch."""
    loop = asyncio.get_running_loop()
    jobs = [job for job, _ in batch]
    for job in jobs:
        job._failure = None  # (set: the job is in a batch, `set_as_failed` may be called)
    processing = loop.create_task(call(jobs))
    # The jobs may all end before the processor (timed out, released at close): it is
    # cancelled then, and its slot is free.
    all_ended = loop.create_future()
    left = len(batch)

    def slot_ended(_: asyncio.Future[Any]) -> None:
        nonlocal left
        left -= 1
        if left == 0 and not all_ended.done():
            all_ended.set_result(None)

    for _, slot in batch:
        slot.add_done_callback(slot_ended)
    timeouts = [job.timeout for job in jobs if job.timeout is not None]
    timer = (
        loop.call_later(min(timeouts), _time_out, worker, batch, min(timeouts))
        if timeouts
        else None
    )
    try:
        await asyncio.wait((processing, all_ended), return_when=asyncio.FIRST_COMPLETED)
    finally:
        if timer is not None:
            timer.cancel()
    if not processing.done():
        processing.cancel()
        processing.add_done_callback(_retrieve)
        # Counted as a stray until it ends, as a timed-out single job's task is: a processor
        # that swallows the cancellation runs on, its jobs already ended and its slot free.
        worker._strays.add(processing)
        processing.add_done_callback(worker._strays.discard)
        return
    _spread(name, processing, batch)


def _spread(
    name: str, processing: asyncio.Task[Any], batch: list[tuple[Job, asyncio.Future[Any]]]
) -> None:
    if processing.cancelled():
        for _, slot in batch:
            slot.cancel()
        return
    error = processing.exception()
    results: Any = None
    if error is None:
        results = processing.result()
        if not isinstance(results, list | tuple) or len(results) != len(batch):
            got = (
                f"{len(results)} results"
                if isinstance(results, list | tuple)
                else f"{type(results).__name__}, not a list"
            )
            error = ValueError(
                f"batch processor {name!r} returned {got} for a batch of {len(batch)} jobs "
                "(one result per job, in order)"
            )
    for index, (job, slot) in enumerate(batch):
        if slot.done():
            continue
        failure: BaseException | None = job._failure
        if failure is not None:
            slot.set_exception(failure)
        elif error is not None:
            slot.set_exception(error)
        else:
            slot.set_result(results[index])


def _time_out(
    worker: WorkerState, batch: list[tuple[Job, asyncio.Future[Any]]], seconds: float
) -> None:
    """The batch's timeout (its jobs' smallest) passed: each job still waiting fails with
    `TimeoutError` now; its task ends, and the processor is cancelled once all have."""
    for job, slot in batch:
        if slot.done():
            continue
        slot.set_exception(
            TimeoutError(f"job {job.id} timed out after {seconds}s (the timeout of its batch)")
        )
        job.lease_lost = True  # its writes from now on are refused
    worker._poke()


def _end_slot(slot: asyncio.Future[Any], _: asyncio.Task[Any]) -> None:
    slot.cancel()


def _retrieve(task: asyncio.Task[Any]) -> None:
    if not task.cancelled():
        task.exception()
