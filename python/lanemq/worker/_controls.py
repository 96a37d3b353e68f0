"""`JobWorker`'s own controls: `pause` / `resume` (this worker stops taking jobs, the queue
does not pause), waiting for the running loop to be idle (what `run_until_idle` and `run_once`
do on a worker that runs), and the checks of its claim options (``block_timeout``,
``limiter``)."""

from __future__ import annotations

import asyncio
import math
from typing import Any

from ..exceptions import ConfigError
from ._loop import Loop


class Controls(Loop):
    """The part of `JobWorker` that pauses and resumes it, and waits for its loop to be
    idle."""

    async def pause(self, do_not_wait: bool = False) -> None:
        """Stops this worker taking jobs (BullMQ's ``worker.pause()``); the queue is not
        paused, so other workers go on. The jobs it runs finish and are reported: this returns
        once they are, or at once with ``do_not_wait`` (BullMQ's ``doNotWaitActive``). A
        paused worker's loop sleeps until `resume` or `close` (no polling); a paused worker's
        `run_once` and `run_until_idle` claim nothing. Called from one of this worker's own
        jobs, it must not wait for them (`RuntimeError` unless ``do_not_wait``)."""
        self._book.held = True
        if do_not_wait:
            return
        if self._inside_a_job():
            raise RuntimeError(
                f"worker {self.id}: pause() called from one of its own jobs would wait for "
                "that job to finish (use pause(do_not_wait=True))"
            )
        if self._running is None:
            return
        if not self._looping:
            # run_once / run_until_idle in progress: it claims nothing more and ends.
            run_done = self._run_done
            if run_done is not None:
                await asyncio.shield(run_done)
            return
        drained = asyncio.get_running_loop().create_future()
        self._drain_waiters.append(drained)
        self._poke()  # (an idle wait for a job ends, and the loop sees it is paused)
        try:
            await asyncio.shield(drained)
        finally:
            if drained in self._drain_waiters:
                self._drain_waiters.remove(drained)

    async def resume(self) -> None:
        """Lets a paused worker take jobs again (at once: its idle wait is woken)."""
        self._book.held = False
        self._poke()

    def is_paused(self) -> bool:
        """Whether `pause` holds this worker (the queue's own pause is `JobQueue.is_paused`)."""
        return self._book.held

    def _inside_a_job(self) -> bool:
        """Whether the caller runs as one of this worker's jobs' tasks."""
        current = asyncio.current_task()
        return current is not None and current in self._book.tasks()

    async def _until_idle(self, *, raise_on_timeout: bool, timeout: float | None) -> int:
        """`run_until_idle` / `run_once` while `run()` runs: waits until nothing runs and a
        claim made since this call found nothing (or the worker is paused, or its limiter's
        window is full), and returns the completions and failed attempts recorded meanwhile.
        Past ``timeout``: `TimeoutError` if ``raise_on_timeout``, else the count so far; the
        loop goes on either way."""
        if self._inside_a_job():
            raise RuntimeError(
                f"worker {self.id}: run_once() or run_until_idle() called from one of its own "
                "jobs would wait for that job to finish"
            )
        before = self._book.processed + self._book.attempts_failed
        idle: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._idle_waiters.append(idle)
        self._recheck = True
        self._poke()
        try:
            await asyncio.wait_for(asyncio.shield(idle), timeout)
        except asyncio.TimeoutError:
            if raise_on_timeout:
                count = self._book.processed + self._book.attempts_failed - before
                raise TimeoutError(
                    f"worker {self.id}: the queue was not idle after {timeout}s ({count} jobs "
                    "processed meanwhile; the worker's run goes on)"
                ) from None
        finally:
            if idle in self._idle_waiters:
                self._idle_waiters.remove(idle)
        return self._book.processed + self._book.attempts_failed - before

    def _end_waits(self) -> None:
        """The loop ended: whoever waits for it to drain or be idle is answered."""
        for waiter in (*self._drain_waiters, *self._idle_waiters):
            if not waiter.done():
                waiter.set_result(None)
        self._drain_waiters.clear()
        self._idle_waiters.clear()


def check_block_timeout(value: Any) -> None:
    """Raises `ConfigError` naming ``value`` unless it is a finite number of seconds > 0."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < math.inf:
        raise ConfigError(f"invalid block_timeout: {value!r} (must be a number of seconds > 0)")


def checked_limiter(value: Any) -> tuple[int, float] | None:
    """``(max_jobs, per_seconds)`` as the book takes it, or `ConfigError` naming the value."""
    if value is None:
        return None
    problem = "must be (max_jobs, per_seconds): an int >= 1 and a number of seconds > 0"
    if not isinstance(value, tuple | list) or len(value) != 2:
        raise ConfigError(f"invalid limiter: {value!r} ({problem})")
    max_jobs, per = value
    if isinstance(max_jobs, bool) or not isinstance(max_jobs, int) or not 1 <= max_jobs < 2**32:
        raise ConfigError(f"invalid limiter: {value!r} ({problem})")
    if isinstance(per, bool) or not isinstance(per, int | float) or not 0 < per < math.inf:
        raise ConfigError(f"invalid limiter: {value!r} ({problem})")
    return max_jobs, float(per)
