"""`JobWorker.run_once` and `JobWorker.run_until_idle`: the worker's machinery (`_start`,
`_done`, `_flush`, `_wind_down`) driven one claim at a time, for tests and scripts."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from .. import _tracing
from ..job import Job
from ._observe import WorkerObserver
from ._state import retrieve

if TYPE_CHECKING:
    from ._worker import JobWorker


async def step(
    worker: JobWorker,
    *,
    until_idle: bool,
    timeout: float | None,
    block: bool = False,
    wait: float | None = None,
) -> int:
    """Claims up to the free capacity, runs what it got and reports it: once (``until_idle``
    False), or again and again until a claim finds nothing and nothing runs. Returns the
    number of completions and failed attempts recorded. Nothing is left running: past
    ``timeout`` (or when cancelled) the running jobs are cancelled and released to waiting,
    then `TimeoutError` is raised. With ``block`` the first claim waits for a job, at most
    ``wait`` seconds."""
    if worker._running is not None:
        raise RuntimeError(
            f"worker {worker.id} is already running (run_once or run_until_idle in progress)"
        )
    _tracing.prepare_worker(worker)
    loop = worker._loop = asyncio.get_running_loop()
    worker._running = asyncio.current_task()
    worker._closing = worker._force = False
    worker._deadline = None
    worker._stopped = asyncio.Event()
    run_done = worker._run_done = loop.create_future()
    # Per-minute metrics as run() records them (no heartbeat: see WorkerObserver).
    observer = WorkerObserver(worker, heartbeats=False)
    chores = [
        loop.create_task(worker._every(worker.renew_every, worker._renew)),
        loop.create_task(worker._listen_cancels()),
    ]
    if worker.metrics_max_data_points is not None:
        chores.append(loop.create_task(observer.run(worker._stopped)))
    before = worker.processed + worker.attempts_failed
    deadline = None if timeout is None else loop.time() + timeout
    timed_out = False
    ended = False
    try:
        first_claim = _blocking_claim(worker, loop, wait) if block else None
        timed_out = await _claim_and_run(worker, loop, until_idle, deadline, first_claim)
        ended = True
    finally:
        try:
            if not ended or timed_out:
                # Cancelled, timed out or failed: what still runs goes back to waiting.
                worker._deadline = loop.time()
            await worker._wind_down()
        finally:
            worker._stopped.set()
            await asyncio.gather(*chores, return_exceptions=True)
            await observer.finish()  # the last metrics
            worker._running = worker._run_done = None
            run_done.set_result(None)
    count = worker.processed + worker.attempts_failed - before
    if timed_out:
        raise TimeoutError(
            f"worker {worker.id}: the queue was not idle after {timeout}s ({count} jobs "
            "processed; the jobs still running were released back to waiting)"
        )
    return count


async def _claim_and_run(
    worker: JobWorker,
    loop: asyncio.AbstractEventLoop,
    until_idle: bool,
    deadline: float | None,
    first_claim: Callable[[int], Awaitable[list[Job]]] | None,
) -> bool:
    """The loop of `step`, up to the point where only `_wind_down` is left (the running jobs
    to finish, the outcomes to report); True if it ended because ``deadline`` passed. The
    first claim is ``first_claim(free)`` when given (`_blocking_claim`)."""
    book = worker._book
    while not worker._closing:
        if book.pending:
            await worker._flush()  # before claiming: a retry or a flow parent may be ready
        if deadline is not None and loop.time() >= deadline:
            return True
        free, paused_for = book.claimable()  # paused_for > 0 after a RateLimitError
        claimed = []
        if free:
            if first_claim is not None:
                claimed = await first_claim(free)
            else:
                claimed = await worker.queue.claim(worker.id, worker.lease, free)
            worker._start_all(claimed)
        first_claim = None
        if not until_idle:
            return False  # run_once: the batch runs to its end in `_wind_down`
        if not book.running:
            if claimed or book.pending:
                continue  # outcomes that came without running anything (no processor)
            if paused_for <= 0:
                return False  # nothing ready and nothing running: idle
        # Sleep until a job finishes, close() is called, or a pause or the time allowed ends.
        wait = paused_for if paused_for > 0 else None
        if deadline is not None:
            left = deadline - loop.time()
            wait = left if wait is None else min(wait, left)
        wake = worker._wake = loop.create_future()
        try:
            await asyncio.wait([wake], timeout=None if wait is None else max(wait, 0.0))
        finally:
            worker._wake = None
    return False


def _blocking_claim(
    worker: JobWorker, loop: asyncio.AbstractEventLoop, wait: float | None
) -> Callable[[int], Awaitable[list[Job]]]:
    """`run_once(block=True)`'s claim: the backend's blocking wait for a job (as an idle
    `run()` waits: woken by adds, retries and delayed jobs coming due), in rounds of the
    worker's ``block_timeout``, for at most ``wait`` seconds (None: until a job comes or
    close() is called); none claimed then."""

    async def claim(free: int) -> list[Job]:
        deadline = None if wait is None else loop.time() + wait
        while not worker._closing:
            seconds = worker.block_timeout
            if deadline is not None:
                seconds = min(seconds, deadline - loop.time())
                if seconds <= 0:
                    return []
            jobs = await _wait_and_claim(worker, loop, free, seconds)
            if jobs:
                return jobs
        return []

    return claim


async def _wait_and_claim(
    worker: JobWorker, loop: asyncio.AbstractEventLoop, free: int, seconds: float
) -> list[Job]:
    """One blocking claim of up to ``free`` jobs, at most ``seconds``; close() interrupts it
    (an interrupted claim gives what it had claimed: nothing is dropped)."""
    pending, interrupt = worker.queue.wait_and_claim(worker.id, worker.lease, free, seconds)
    claim = asyncio.ensure_future(pending)
    wake = worker._wake = loop.create_future()
    try:
        await asyncio.wait((claim, wake), return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        interrupt()
        claim.add_done_callback(retrieve)  # nobody takes its outcome now
        raise
    finally:
        worker._wake = None
    if not claim.done():
        interrupt()
    return await claim
