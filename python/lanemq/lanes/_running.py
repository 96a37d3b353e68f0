"""`QueueManager`'s runners: each asks the dispatcher for the next command, awaits it in its
own task, and settles it (completed, failed and retried or dead-lettered, timed out,
cancelled); a runner parks when nothing may start. Also the done callbacks of finished
handles, run together once per turn of the loop."""

from __future__ import annotations

import asyncio
import functools
import inspect
from typing import Any

from ..exceptions import CommandTimeoutError, UnrecoverableError
from ._handle import CANCELLING, DONE, FAILED, PENDING, RUNNING, TIMING_OUT, CommandHandle
from ._state import ManagerState, log


class Running(ManagerState):
    """The part of `QueueManager` that runs commands and settles them."""

    # ------------------------------------------------------------------ running

    async def _run(self) -> None:
        core = self._core
        timeouts = self._timeouts
        bus = self._bus
        feed = self._feed
        loop = self._loop()
        task = asyncio.current_task()
        assert task is not None
        handle: CommandHandle[Any] | None = core.pop()
        while True:
            if handle is None:
                if self._stopping:
                    return
                self._arm_wake()
                parked = loop.create_future()
                self._idle.append(parked)
                try:
                    await parked
                finally:
                    if not parked.done():
                        self._idle.remove(parked)
                    elif not parked.cancelled():
                        self._waking -= 1
                handle = core.pop()
                if handle is not None and self._idle:
                    self._wake_one()  # more may be startable: let another runner look
                continue
            handle._state = RUNNING
            handle._runner = task
            if feed is not None:
                feed.started(handle)
            if bus.active:
                self._emit_for("queue.command.started", handle, attempt=core.attempt(handle.id))
            timeout = timeouts[handle.lane]
            timer = None
            if timeout is not None:
                timer = loop.call_later(timeout, self._interrupt, handle, TIMING_OUT)
            try:
                if not handle.is_async:
                    result = await self._run_in_thread(handle)
                elif handle._kwargs is None:
                    result = await handle._fn(*handle._args)
                else:
                    result = await handle._fn(*handle._args, **handle._kwargs)
            except asyncio.CancelledError:
                state = self._clear_interrupt(handle, task)
                if state == RUNNING:  # the runner itself is being cancelled (close)
                    self._settle_cancelled(handle, forget=False)
                    raise
                if state == TIMING_OUT:
                    error = CommandTimeoutError(
                        f"command {handle.id} in lane {handle.lane_id!r} timed out after {timeout}s"
                    )
                    handle = self._failed(handle, error, timed_out=True)
                else:
                    self._settle_cancelled(handle)
                    handle = core.pop()
            except Exception as error:
                self._clear_interrupt(handle, task)
                handle = self._failed(handle, error, timed_out=False)
            else:
                if handle._state != RUNNING:  # it swallowed its cancellation
                    self._clear_interrupt(handle, task)
                finished = handle.id
                if self._durable and finished in self._durable:
                    try:
                        await self._journal_done(finished)
                    except asyncio.CancelledError:  # the runner is being cancelled (close)
                        self._finish_done(handle, result)
                        raise
                if bus.active:
                    self._emit_for("queue.command.completed", handle)
                if feed is not None:
                    feed.completed(handle)
                handle._finish(DONE, result)
                handle = core.complete_and_pop(finished)
                if self._drained and not core.in_flight:
                    self._notify_drained()
            finally:
                if timer is not None:
                    timer.cancel()
            if self._watch_signals:
                self._process_signals()

    async def _run_in_thread(self, handle: CommandHandle[Any]) -> Any:
        call = functools.partial(handle._fn, *handle._args, **(handle._kwargs or {}))
        result = await self._loop().run_in_executor(None, call)
        if inspect.isawaitable(result):  # a plain callable that returned an awaitable
            result = await result
        return result

    def _failed(
        self, handle: CommandHandle[Any], error: BaseException, timed_out: bool
    ) -> CommandHandle[Any] | None:
        """Records a failed attempt; returns the next command for the runner to start."""
        core = self._core
        retryable = not isinstance(error, UnrecoverableError)
        text = f"{type(error).__name__}: {error}"
        delay, attempt = core.fail(handle.id, timed_out, retryable, text, handle.command_type)
        if self._feed is not None:
            self._feed.failed(handle, timed_out, delay)
        if timed_out:
            self._emit_for("queue.command.timeout", handle, attempt=attempt, error=text)
        if delay is not None:
            handle._state = PENDING
            self._emit_for("queue.command.retry", handle, attempt=attempt, error=text, delay=delay)
            self._arm_wake()
        else:
            self._emit_for("queue.command.dead_lettered", handle, attempt=attempt, error=text)
            self._emit_for("queue.command.failed", handle, attempt=attempt, error=text)
            handle._finish(FAILED, error)
            key = self._durable.pop(handle.id, None)
            if self._storage is not None and (key is not None or _nameable(handle)):
                # An ad-hoc command's letter is kept too when it says what it was.
                self._spawn(self._storage.bury(key, core.dead_letters()[-1]))
            if self._drained and not core.in_flight:
                self._notify_drained()
        return core.pop()

    def _settle_cancelled(self, handle: CommandHandle[Any], forget: bool = True) -> None:
        """Finishes a cancelled command. ``forget=False`` keeps a stored command for replay."""
        if handle._state >= DONE:
            return
        self._core.cancel(handle.id)
        if self._feed is not None:
            self._feed.cancelled(handle)
        self._emit_for("queue.command.cancelled", handle)
        handle._finish(FAILED, asyncio.CancelledError(f"command {handle.id} was cancelled"))
        if forget:
            self._forget_stored(handle.id)
        else:
            self._durable.pop(handle.id, None)
        if self._drained and not self._core.in_flight:
            self._notify_drained()

    def _cancel(self, handle: CommandHandle[Any]) -> bool:
        if self._shared is not None:
            return self._shared.cancel(handle)
        if handle._state == PENDING:
            self._settle_cancelled(handle)
        else:
            self._interrupt(handle, CANCELLING)
        return True

    @staticmethod
    def _interrupt(handle: CommandHandle[Any], why: int) -> None:
        """Cancels the task running ``handle``, recording why in its state."""
        if handle._state == RUNNING:
            handle._state = why
            handle._runner.cancel()

    @staticmethod
    def _clear_interrupt(handle: CommandHandle[Any], task: asyncio.Task[None]) -> int:
        """Returns the running state (RUNNING, or why it was interrupted) and undoes the
        interruption's cancel request, so the runner task itself goes on."""
        state = handle._state
        if state != RUNNING:
            handle._state = RUNNING
            # Python >= 3.11 counts cancellation requests; take ours back so the runner (and
            # any asyncio.timeout() around it) does not see the task as still being cancelled.
            uncancel = getattr(task, "uncancel", None)
            if uncancel is not None and task.cancelling():  # type: ignore[attr-defined]
                uncancel()
        return state

    # A future schedules one loop callback (`call_soon`: a `Handle` object and a turn of the
    # loop's queue) per done callback. Handles instead queue themselves in `_due` when they
    # finish with callbacks (CommandHandle._finish), and all that finish before the loop's next
    # turn share one loop callback, `_run_due`, which calls their callbacks in order, each in
    # its own context, as the loop would have.

    def _run_due(self) -> None:
        due = self._due
        self._due = []
        for index, handle in enumerate(due):
            callbacks = handle._callbacks
            handle._callbacks = None
            if isinstance(callbacks, tuple):
                fn, context = callbacks
                try:
                    context.run(fn, handle)
                except BaseException as error:
                    self._callback_failed(error, handle, [], due[index + 1 :])
            elif callbacks is not None:
                for position, (fn, context) in enumerate(callbacks):
                    try:
                        context.run(fn, handle)
                    except BaseException as error:
                        rest = callbacks[position + 1 :]
                        self._callback_failed(error, handle, rest, due[index + 1 :])

    def _callback_failed(
        self,
        error: BaseException,
        handle: CommandHandle[Any],
        rest: list[Any],
        later: list[CommandHandle[Any]],
    ) -> None:
        """Reports a done callback's error to the loop's exception handler, as a loop callback's
        would be; SystemExit and KeyboardInterrupt go on up, the callbacks after it (``rest``
        of this handle's, and the ``later`` handles') left to the loop's next turn."""
        loop = self._loop()
        if not isinstance(error, (SystemExit, KeyboardInterrupt)):
            loop.call_exception_handler(
                {
                    "message": f"Exception in a done callback of {handle!r}",
                    "exception": error,
                    "future": handle,
                }
            )
            return
        if rest:
            handle._callbacks = rest
            later = [handle, *later]
        if later:
            if not self._due:
                loop.call_soon(self._run_due)
            self._due[:0] = later
        raise error

    def _wake_one(self) -> None:
        idle = self._idle
        while idle:
            parked = idle.pop()
            if not parked.done():
                parked.set_result(None)
                self._waking += 1
                return

    def _arm_wake(self) -> None:
        """Sets a timer for the next retry or rate-limit token, if one is due sooner than the
        timer already set."""
        delay = self._core.next_wake()
        if delay is None:
            return
        loop = self._loop()
        at = loop.time() + delay
        if self._wake_timer is not None:
            if self._wake_at <= at:
                return
            self._wake_timer.cancel()
        self._wake_at = at
        self._wake_timer = loop.call_at(at, self._on_wake)

    def _on_wake(self) -> None:
        self._wake_timer = None
        self._wake_one()

    async def _journal_done(self, command_id: int) -> None:
        """Removes a completed durable command from the journal (fsynced) before its handle
        resolves: a process killed once a caller saw the result must not run it again at the
        next start. The removal goes on if the runner is cancelled meanwhile."""
        key = self._durable.pop(command_id)
        if self._storage is None:
            return
        removal = self._loop().create_task(self._storage.forget(key))
        self._background.add(removal)
        removal.add_done_callback(self._background.discard)
        try:
            await asyncio.shield(removal)
        except Exception:
            # It ran to its end; at worst it runs once more after a restart (at least once).
            log.exception("cannot remove completed command %s from the journal", command_id)

    def _finish_done(self, handle: CommandHandle[Any], result: Any) -> None:
        """Completes ``handle`` for a runner that stops right after it."""
        self._emit_for("queue.command.completed", handle)
        if self._feed is not None:
            self._feed.completed(handle)
        handle._finish(DONE, result)
        self._core.complete(handle.id)
        if self._drained and not self._core.in_flight:
            self._notify_drained()

    def _forget_stored(self, command_id: int) -> None:
        key = self._durable.pop(command_id, None)
        if key is not None and self._storage is not None:
            self._spawn(self._storage.forget(key))


def _nameable(handle: CommandHandle[Any]) -> bool:
    """Whether an ad-hoc command has a name worth keeping its dead letter under after a
    restart: a ``command_type`` or a function's name, not a lambda's."""
    return "<lambda>" not in handle.command_type
