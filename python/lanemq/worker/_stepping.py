"""`JobWorker.run_once` and `JobWorker.run_until_idle`: the worker's machinery (`_start`,
`_done`, `_flush`, `_wind_down`) driven one claim at a time, for tests and scripts."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from .. import _tracing
from ._observe import WorkerObserver

if TYPE_CHECKING:
    from ._worker import JobWorker


async def step(worker: JobWorker, *, until_idle: bool, timeout: float | None) -> int:
    """Claims up to the free capacity, runs what it got and reports it: once (``until_idle``
    False), or again and again until a claim finds nothing and nothing runs. Returns the
    number of completions and failed attempts recorded. Nothing is left running: past
    ``timeout`` (or when cancelled) the running jobs are cancelled and released to waiting,
    then `TimeoutError` is raised."""
    if worker._running is not None:
        raise RuntimeError(f"worker {worker.id} is already running")
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
        timed_out = await _claim_and_run(worker, loop, until_idle, deadline)
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
    worker: JobWorker, loop: asyncio.AbstractEventLoop, until_idle: bool, deadline: float | None
) -> bool:
    """The loop of `step`, up to the point where only `_wind_down` is left (the running jobs
    to finish, the outcomes to report); True if it ended because ``deadline`` passed."""
    book = worker._book
    while not worker._closing:
        if book.pending:
            await worker._flush()  # before claiming: a retry or a flow parent may be ready
        if deadline is not None and loop.time() >= deadline:
            return True
        free, paused_for = book.claimable()  # paused_for > 0 after a RateLimitError
        claimed = []
        if free:
            claimed = await worker.queue.claim(worker.id, worker.lease, free)
            worker._start_all(claimed)
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
