"""`JobWorker`'s run loop, one turn at a time: the calls that report completions and
claim (up to two in flight on a remote backend), and the sleeps between them."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from .._core import OutcomeBatch, WorkerTurn
from ..job import Job
from ._cancels import Cancels
from ._state import log, retrieve


class Loop(Cancels):
    """The part of `JobWorker` that turns the run loop: calls, waits and claims."""

    async def _pause_until_reachable(self, seconds: float, loop: asyncio.AbstractEventLoop) -> None:
        """Sleeps ``seconds``, or less if the backend answers again or close() is called."""
        wake = self._wake = loop.create_future()
        probe = asyncio.ensure_future(self.queue.wait_reachable(seconds))
        try:
            await asyncio.wait((wake, probe), timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
        finally:
            self._wake = None
            probe.cancel()
            probe.add_done_callback(retrieve)

    async def _step(self, loop: asyncio.AbstractEventLoop) -> None:
        """One turn of the loop, as the book decides it: report failures and releases (with
        no call in flight); or make the calls that report completions and claim, on a remote
        backend up to two in flight (so jobs a call returned run while the backend works on
        the next), in process one, awaited here; or sleep until there is work."""
        if self._book.ahead:
            self._start_ahead()
        turn = self._book.turn()  # raises what a call that failed since the last turn raised
        if turn.flush:
            await self._settle()
            await self._flush()
        elif self._remote:
            for done, claim in turn.calls:
                self._launch(loop, done, claim)
            if self._exchanges:
                await self._wait_for_exchange(loop)
            else:
                await self._idle(turn, loop)
        elif not (turn.calls and await self._call(*turn.calls[0])):
            await self._idle(turn, loop)

    def _tell_idle(self) -> bool:
        """At the start of an idle wait, with nothing to report: ends the waits of `pause`
        (nothing runs any more) and of `run_until_idle` / `run_once` called while the loop
        runs (nothing runs, and the last claim found nothing: claims held or limited count as
        nothing ready; a rate limit's pause is waited out). A waiter that came since the last
        claim asks for one more first: returns True then, and the loop turns again, claiming
        (the claim that found nothing may have been made before its jobs were added)."""
        if self._book.running or self._exchanges or self._book.ahead:
            return False
        for waiter in self._drain_waiters:
            if not waiter.done():
                waiter.set_result(None)
        self._drain_waiters.clear()
        if not self._idle_waiters:
            return False
        if self._recheck:
            self._recheck = False
            self._book.idled(0, 0)  # (the queue may have jobs: the next turn claims)
            return True
        _, paused_for = self._book.claimable()
        if paused_for > 0:
            return False  # a RateLimitError's pause: jobs are ready once it ends
        for waiter in self._idle_waiters:
            if not waiter.done():
                waiter.set_result(None)
        self._idle_waiters.clear()
        return False

    def _start_ahead(self) -> None:
        """Starts the jobs claimed ahead that the free slots let start, oldest first (before
        the turn claims more). One whose lease a renewal found lost is not started: another
        worker may run it."""
        due = self._book.due()
        if not due:
            return
        kept = [job for job in due if not job.lease_lost]
        if len(kept) < len(due):
            log.warning(
                "worker %s: %d job(s) claimed ahead lost their lease before they started: "
                "not started",
                self.id,
                len(due) - len(kept),
            )
        if kept:
            self._start_all(kept)

    def _launch(self, loop: asyncio.AbstractEventLoop, done: OutcomeBatch, claim: int) -> None:
        after = self._last_claim if claim else None
        task = loop.create_task(self._call(done, claim, after))
        if claim:
            self._last_claim = task
        self._exchanges.add(task)
        task.add_done_callback(self._exchange_done)

    async def _call(
        self, done: OutcomeBatch, claim: int, after: asyncio.Task[bool] | None = None
    ) -> bool:
        """A call of a turn: reports the completions ``done``, claims up to ``claim`` jobs and
        starts them, and tells the book how it went (the next turn raises a failure). Returns
        whether the loop should turn again at once rather than wait for work: jobs came, or
        the call failed. ``after``: the call that claimed before this one; its jobs are
        admitted first."""
        try:
            jobs = await self._report(done, claim)
        except Exception as error:
            self._book.call_failed(claim, error)
            return True
        except BaseException:
            self._book.call_done(claim, 0)  # cancelled: its claim holds no slot any more
            raise
        try:
            if after is not None and not after.done():
                # The earlier call's reply is not in yet, though its claim ran first and took
                # the queue's head: replies cross when the calls a worker makes while its
                # queue's wire opens go the ordinary way (through the runtime) and one made
                # next on the wire overtakes them, when a wire call goes on as an ordinary one
                # (a claimed scheduler job's upkeep), or when completed hooks await. Admitting
                # in reply order started the later job first and held the earlier one.
                await asyncio.wait((after,))
        finally:
            self._admit(claim, jobs)  # (even if cancelled: the jobs were claimed)
        return bool(jobs)

    def _admit(self, claim: int, jobs: list[Job]) -> None:
        """Tells the book a call claimed ``jobs`` of ``claim`` and starts them, or holds
        them while the slots are full (claimed ahead), or gives them back in a pause."""
        self._book.call_done(claim, len(jobs))
        if jobs and self._book.claimable()[1] > 0:
            self._give_back_in_pause(jobs)
        elif jobs:
            self._start_all(self._book.admit(jobs))  # (the rest held, claimed ahead)

    def _give_back_in_pause(self, jobs: list[Job]) -> None:
        """Jobs a call in flight claimed (ahead) after a `RateLimitError` paused claims: they
        must not start in the pause, so they go back too, released before the job that was
        rate limited (each release goes to the front: the queue keeps the claim order)."""
        book = self._book
        earlier = book.take_releases()
        for job in reversed(jobs):
            book.release(job)
        for job in earlier.jobs:
            book.release(job)

    def _exchange_done(self, task: asyncio.Task[bool]) -> None:
        self._exchanges.discard(task)
        self._poke()

    async def _wait_for_exchange(self, loop: asyncio.AbstractEventLoop) -> None:
        """Sleeps until a call in flight returns or a job finishes (or close() is called)."""
        if self._closing:
            return
        wake = self._wake = loop.create_future()
        try:
            await wake
        finally:
            self._wake = None

    async def _settle(self) -> None:
        """Waits for the calls in flight (their errors surface on the next turn)."""
        while self._exchanges:
            await asyncio.gather(*self._exchanges, return_exceptions=True)

    async def _pause(self, seconds: float, loop: asyncio.AbstractEventLoop) -> None:
        """Sleeps ``seconds``, or less if close() is called."""
        wake = self._wake = loop.create_future()
        try:
            await asyncio.wait_for(asyncio.shield(wake), seconds)
        except asyncio.TimeoutError:
            pass
        finally:
            self._wake = None

    async def _idle(self, turn: WorkerTurn, loop: asyncio.AbstractEventLoop) -> None:
        """Sleeps until a slot frees, an outcome waits to be reported, close() is called, or
        (when the turn says to claim) the queue may have a job: then the backend claims in the
        same call that waited, and the claimed jobs start here. While claims are paused, the
        sleep ends with the pause."""
        if self._closing or self._book.pending:
            return  # (close() may have been called while the loop awaited the queue)
        if (self._idle_waiters or self._drain_waiters) and self._tell_idle():
            return
        wake = self._wake = loop.create_future()
        waits: list[asyncio.Future[Any]] = [wake]
        claim: asyncio.Future[list[Job]] | None = None
        interrupt: Callable[[], None] | None = None
        asked = turn.idle_claim
        if asked:
            claimed, interrupt = self.queue.wait_and_claim(
                self.id, self.lease, asked, self.block_timeout
            )
            claim = asyncio.ensure_future(claimed)
            waits.append(claim)
        elif turn.pause is not None:
            waits.append(loop.create_task(asyncio.sleep(turn.pause)))
        try:
            if len(waits) == 1:
                await wake  # (no `asyncio.wait` machinery for the one future: once per batch)
            else:
                await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            if claim is not None:
                assert interrupt is not None
                interrupt()
                claim.add_done_callback(retrieve)  # nobody takes its outcome now
            raise
        finally:
            self._wake = None
            if claim is None:
                for waiting in waits[1:]:
                    waiting.cancel()
        if claim is None:
            self._book.idled(0, 0)
            return
        if not claim.done():
            assert interrupt is not None
            interrupt()  # it ends at once, with what it claimed if the claim had begun
        jobs = await claim
        self._book.idled(asked, len(jobs))  # a short claim: the queue is empty
        if jobs:
            self._start_all(self._book.admit(jobs))
