"""`SharedLanes`: the part of a `QueueManager(backend=...)` that shares its lanes with every
manager of the same backend and name, through a `LaneStore` (`_store`).

Every command goes through the store: a named command (any process that registered its name
runs it) or a callable (only this process can run it, but it takes its slot from the shared
lanes, so caps and priority hold for it too). Three tasks run per manager:
- the *pump* enqueues submitted commands one at a time, in submit order (FIFO per lane);
- the *dispatch loop* claims what the store lets this process start (as many as its free
  slots), starts each in its own task (`_shared_run`), takes the outcomes of the named commands
  this process submitted, and waits to be woken (a submit, a command's end, a recovery) or for
  the next timed event (a retry falling due, a rate token);
- the *heartbeat* renews this process's lease every third of it, so the commands it holds stay
  its own, and refreshes what `stats()` and `dead_letters()` show.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import uuid
from collections import deque
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar, cast

from .._core import DeadLetter, LaneConfig, RetryPolicy
from ..exceptions import CommandFailedError, CommandTimeoutError, ConfigError
from ..observability.metrics_sink import LaneMetricsSink
from ._handle import DONE, FAILED, CommandHandle
from ._metrics_feed import MetricsFeed
from ._shared_config import (
    lane_settings,
    lane_specs,
    local_directory,
    settings_difference,
    settings_text,
)
from ._shared_metrics import MetricsRecorder
from ._shared_run import CANCEL, CLOSE, LOST, ClaimedCommand, execute
from ._state import log
from ._store import Claimed, LaneStore

if TYPE_CHECKING:
    from ._manager import QueueManager

T = TypeVar("T")


def outcome_error(text: str) -> BaseException:
    """The exception a submitter's handle raises for an error outcome ``"Class: message"``."""
    error_type, _, message = text.partition(": ")
    if error_type == "CancelledError":
        return asyncio.CancelledError(message)
    if error_type == "CommandTimeoutError":
        return CommandTimeoutError(message)
    return CommandFailedError(error_type, message)


def _named_stub(name: str) -> Callable[..., Any]:
    """What the handle of a named command this process only submitted holds instead of its
    handler (the handle's ``command_type`` is the name)."""

    async def named(payload: Any) -> Any:  # never called: the command runs where registered
        raise RuntimeError(f"{name!r} runs where it is registered")

    named.__qualname__ = name
    return named


# The most commands one call enqueues (or completes): a bound on one store step's length.
BATCH = 500


class SharedLanes:
    def __init__(
        self,
        manager: QueueManager,
        backend: str,
        name: str,
        lease: float,
        lanes: list[LaneConfig],
        max_concurrency: int | None,
        letter_limit: int,
        metrics_sink: LaneMetricsSink | None,
    ) -> None:
        self.manager = manager
        self.backend = backend
        self.name = name
        self.lease = lease
        self.lease_ms = max(1, round(lease * 1000))
        self.letter_limit = letter_limit
        self.settings = lane_settings(lanes, max_concurrency)
        self.specs = lane_specs(lanes)
        self.retries: list[RetryPolicy] = [lane.retry for lane in lanes]
        self.pid = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.recorder = MetricsRecorder(manager._lane_ids, metrics_sink)
        self.feed = MetricsFeed(self.recorder, manager._lane_ids)
        self.store = cast(LaneStore, _Unopened())
        self.capacity = manager._core.capacity
        self.own: dict[int, CommandHandle[Any]] = {}  # own callables, by store id
        self.remote: dict[int, CommandHandle[Any]] = {}  # named commands submitted here
        self.running: dict[int, ClaimedCommand] = {}
        self._orphans: dict[int, Claimed] = {}  # claims of own callables not yet numbered
        self._early: dict[int, tuple[bool, str]] = {}  # outcomes before their handle
        self._queue: deque[
            tuple[CommandHandle[Any], str | None, str | None, asyncio.Future[None]]
        ] = deque()
        self._queued = asyncio.Event()
        # Completions waiting for the call that reports them together (`complete`).
        self._completions: list[tuple[int, str, asyncio.Future[bool]]] = []
        self._completing: asyncio.Task[None] | None = None
        self._executing: set[asyncio.Task[None]] = set()
        # The batch the pump is writing (out of the queue, not yet numbered).
        self._writing: list[
            tuple[CommandHandle[Any], str | None, str | None, asyncio.Future[None]]
        ] = []
        self._opening: asyncio.Task[None] | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._closing = False
        self._runs_named = True
        self.stats_seen: list[tuple[int, int, int]] = [(0, 0, 0)] * len(lanes)
        self.letters_seen: list[DeadLetter] = []
        self.letters_changed = 0.0

    # ----------------------------------------------------------------- lifecycle

    def open(self) -> asyncio.Task[None]:
        """Opens the store and starts the tasks (once); the task to await for it."""
        if self._opening is None:
            self._opening = asyncio.get_running_loop().create_task(self._open())
            self._opening.add_done_callback(self._fail_queued)
        return self._opening

    async def _open(self) -> None:
        # (Imported here: the stores' classes are the backends', read when one is opened.)
        from .._core import LocalLaneStore, RedisLaneStore

        directory = local_directory(self.backend)
        if directory is not None:
            store: LaneStore = await LocalLaneStore.open(directory, self.name)
        else:
            store = await RedisLaneStore.open(self.backend, self.name)
        ours = settings_text(self.settings)
        global_max = self.settings["max_concurrency"]
        try:
            stored = await store.setup(ours, self.specs, global_max)
            if stored != ours:
                difference = settings_difference(json.loads(stored), self.settings)
                if difference is not None:
                    raise ConfigError(
                        f"the lanes of {self.name!r} differ from those its backend holds: "
                        f"{difference} (every manager sharing them needs the same lanes)"
                    )
            await store.join(self.pid, self._names(), self.lease_ms)
        except BaseException:
            store.close()
            raise
        self.store = store
        loop = asyncio.get_running_loop()
        self._tasks = [
            loop.create_task(self._pump()),
            loop.create_task(self._dispatch()),
            loop.create_task(self._heartbeat()),
        ]

    def _is_open(self) -> bool:
        opening = self._opening
        return (
            opening is not None
            and opening.done()
            and not opening.cancelled()
            and opening.exception() is None
        )

    def _names(self) -> list[str]:
        return sorted(self.manager._registry) if self._runs_named else []

    def names_changed(self) -> None:
        """A handler was registered: the store learns at once that this process runs it."""
        if self._is_open() and not self._closing:
            self.manager._spawn(self._renew())

    async def stop_running_named(self) -> None:
        """Shutting down: this process takes no more named commands (its own callables still
        run, since no other process can run them)."""
        self._runs_named = False
        if self._is_open() and not self._closing:
            await self._renew()

    async def close(self) -> None:
        self._closing = True
        if self._opening is None:
            return
        try:
            await self._opening
        except BaseException:
            return  # it never opened: nothing to give back
        for command in list(self.running.values()):
            command.interrupt(CLOSE)
        if self._executing:  # the bodies interrupted, and every end reported
            await asyncio.gather(*self._executing, return_exceptions=True)
        if self._completing is not None:
            await asyncio.gather(self._completing, return_exceptions=True)
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for handle in list(self.own.values()):
            if handle._state < DONE:
                await self.store_call(self.store.cancel(handle.id))
                self.settle_cancelled(handle)
        for handle, _, _, _ in [*self._writing, *self._queue]:
            self.settle_cancelled(handle)
        self._writing = []
        self._queue.clear()
        for handle in list(self.remote.values()):
            # The command stays in the store and runs; this process can no longer hear of it.
            self.settle_cancelled(handle)
        await self.store_call(self.store.leave(self.pid))
        self.store.close()

    async def store_call(self, call: Awaitable[T]) -> T:
        """A store call that a close does not interrupt halfway (the store's own step is
        atomic; this keeps its answer from being lost to a cancelled caller)."""
        return await asyncio.shield(call)

    async def complete(self, command_id: int, result: str) -> bool:
        """Reports a command's completion (``complete``): the completions reported while one
        call is on its way go together in the next (``complete_many``), one step of the store
        and one wake of the other processes for all of them."""
        done: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._completions.append((command_id, result, done))
        if self._completing is None:
            self._completing = asyncio.get_running_loop().create_task(self._complete_all())
        return await asyncio.shield(done)

    async def _complete_all(self) -> None:
        try:
            await asyncio.sleep(0)  # the completions of this turn of the loop join in
            while self._completions:
                batch = self._completions[:BATCH]
                del self._completions[:BATCH]
                pairs = [(command_id, result) for command_id, result, _ in batch]
                answers = await self.report(self.store.complete_many, pairs)
                if not answers:  # given up at close: none reported
                    answers = [False] * len(batch)
                for (_, _, done), answer in zip(batch, answers, strict=True):
                    if not done.done():
                        done.set_result(bool(answer))
        finally:
            self._completing = None

    async def report(self, operation: Callable[..., Awaitable[T]], *args: Any) -> T:
        """Tells the store how a held command ended (``operation(pid, *args)``), trying again
        while the backend cannot be reached: the command stays held meanwhile, renewed by the
        heartbeat, and an answer lost would leave it held for good. False when the store says
        this process no longer holds it."""
        delay = 0.05
        while True:
            try:
                return await self.store_call(operation(self.pid, *args))
            except Exception:
                if self._closing and delay > 1.0:
                    # Closing: give up; the lease, no longer renewed, frees it in time.
                    log.exception("lanes %r: cannot report %s", self.name, args[0])
                    return cast(T, False)
                log.warning("lanes %r: cannot report %s; retrying", self.name, args[0])
                await asyncio.sleep(delay)
                delay = min(delay * 2, 2.0)

    # ---------------------------------------------------------------- submitting

    def submit(
        self, handle: CommandHandle[Any], name: str | None, payload: str | None
    ) -> asyncio.Future[None]:
        """Queues ``handle``'s command for the store, behind the ones submitted before it;
        the future is done once the store holds it (or failed with why it could not)."""
        written: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._queue.append((handle, name, payload, written))
        self._queued.set()
        if self.manager._autostart or self.manager._started:
            self.open()
        return written

    def _fail_queued(self, opening: asyncio.Task[None]) -> None:
        """The store did not open: what waited for it fails with why."""
        if opening.cancelled() or opening.exception() is None:
            return
        error = opening.exception()
        assert error is not None
        while self._queue:
            handle, _, _, written = self._queue.popleft()
            if not written.done():
                written.set_exception(error)
                written.exception()  # retrieved: submit_named raises it, a submit need not
            if handle._state < DONE:
                handle._finish(FAILED, error)

    async def _pump(self) -> None:
        while True:
            await self._queued.wait()
            self._queued.clear()
            while self._queue:
                # Everything queued goes in one atomic call, in submit order (FIFO per lane).
                batch = [self._queue.popleft() for _ in range(min(BATCH, len(self._queue)))]
                self._writing = batch
                entries = [
                    (handle.lane, name, None if name is not None else self.pid, payload)
                    for handle, name, payload, _ in batch
                ]
                try:
                    ids = await self.store_call(self.store.enqueue_many(self.pid, entries))
                except Exception as error:
                    self._writing = []
                    for handle, _, _, written in batch:
                        if not written.done():
                            written.set_exception(error)
                            written.exception()  # retrieved: submit_named raises it
                        if handle._state < DONE:
                            handle._finish(FAILED, error)
                    continue
                self._writing = []
                for (handle, name, _, written), command_id in zip(batch, ids, strict=True):
                    self._written(handle, name, written, command_id)

    def _written(
        self,
        handle: CommandHandle[Any],
        name: str | None,
        written: asyncio.Future[None],
        command_id: int,
    ) -> None:
        """The store holds ``handle``'s command as ``command_id``."""
        if not written.done():
            written.set_result(None)
        handle.id = command_id
        self.feed.submitted(handle)
        self.manager._emit_for("queue.command.submitted", handle)
        if handle._state >= DONE:  # cancelled while it was being written
            self.manager._spawn(self.store_call(self.store.cancel(command_id)))
            self.settled(command_id)
        elif name is None:
            self.own[command_id] = handle
            claimed = self._orphans.pop(command_id, None)
            if claimed is not None:
                self._start(claimed)
        else:
            self.remote[command_id] = handle
            early = self._early.pop(command_id, None)
            if early is not None:
                self._settle_remote(command_id, *early)

    def named_handle(self, lane: int, name: str, payload: Any) -> CommandHandle[Any]:
        return CommandHandle(self.manager, lane, _named_stub(name), (payload,), None, True)

    # ------------------------------------------------------------------ dispatch

    async def _dispatch(self) -> None:
        while True:
            try:
                await self._dispatch_once()
            except Exception:
                # The backend is unreachable (or answered oddly): say so, and try again soon;
                # the commands held meanwhile stay held as long as the heartbeat gets through.
                log.exception("lanes %r: cannot reach the backend to dispatch", self.name)
                await asyncio.sleep(min(1.0, self.lease / 3))

    async def _dispatch_once(self) -> None:
        store, pid = self.store, self.pid
        while True:
            wake_in: int | None = None
            free = self.capacity - len(self.running)
            if free > 0:
                claimed, wake_in = await store.claim(pid, free)
                for entry in claimed:
                    self._start(entry)
            if self.remote:
                for command_id, ok, text in await store.outcomes(pid):
                    self._settle_remote(command_id, ok, text)
            timeout = self.lease_ms // 3
            if wake_in is not None:
                timeout = max(1, min(timeout, wake_in))
            await store.wait(pid, timeout)

    def _start(self, claimed: Claimed) -> None:
        command_id, lane, name, payload, attempt, _submitter = claimed
        manager = self.manager
        if name is None:
            handle = self.own.get(command_id)
            if handle is None:
                self._orphans[command_id] = claimed  # the pump numbers it in a moment
                return
            if handle._state >= DONE:  # cancelled here while the store handed it out
                manager._spawn(self.store_call(self.store.release(self.pid, command_id)))
                return
            command = ClaimedCommand(handle, attempt, own=True)
        else:
            handler = manager._registry.get(name)
            if handler is None:  # not registered any more: let another process have it
                manager._spawn(self.store_call(self.store.release(self.pid, command_id)))
                return
            value = None if payload is None else json.loads(payload)
            handle = CommandHandle(manager, lane, handler, (value,), None, True)
            handle.id = command_id
            _retype(handle, name)
            command = ClaimedCommand(handle, attempt, own=False)
        self.running[command_id] = command
        task = asyncio.get_running_loop().create_task(execute(self, command))
        command.task = task
        self._executing.add(task)
        task.add_done_callback(self._executing.discard)

    def _settle_remote(self, command_id: int, ok: bool, text: str) -> None:
        handle = self.remote.pop(command_id, None)
        if handle is None:
            if command_id not in self.own:
                self._early[command_id] = (ok, text)
            return
        if handle._state >= DONE:
            return
        if ok:
            handle._finish(DONE, json.loads(text))
        else:
            error = outcome_error(text)
            handle._finish(FAILED, error)
        self.settled(command_id)

    # ------------------------------------------------------------------ settling

    def settled(self, command_id: int) -> None:
        """A handle of this process finished: forget it, and wake `drain` if nothing is left."""
        self.own.pop(command_id, None)
        self.remote.pop(command_id, None)
        manager = self.manager
        if manager._drained and not self.in_flight:
            manager._notify_drained()

    def settle_cancelled(self, handle: CommandHandle[Any]) -> None:
        if handle._state >= DONE:
            return
        self.feed.cancelled(handle)
        self.manager._emit_for("queue.command.cancelled", handle)
        handle._finish(FAILED, asyncio.CancelledError(f"command {handle.id} was cancelled"))
        self.settled(handle.id)

    def cancel(self, handle: CommandHandle[Any]) -> bool:
        """`CommandHandle.cancel` with shared lanes: a command running here is interrupted; a
        pending one is withdrawn from the store (a named command already running in another
        process runs on, and its handle gets its outcome)."""
        running = self.running.get(handle.id)
        if running is not None and running.handle is handle:
            running.interrupt(CANCEL)
            return True
        if handle.id in self.own:
            self.settle_cancelled(handle)
            self.manager._spawn(self.store_call(self.store.cancel(handle.id)))
            return True
        if handle.id in self.remote:
            self.manager._spawn(self.store_call(self.store.cancel(handle.id)))
            return True
        for entry in [*self._writing, *self._queue]:
            if entry[0] is handle:
                self.settle_cancelled(handle)  # the pump withdraws it once written
                return True
        return False

    @property
    def in_flight(self) -> int:
        queued = len(self._queue) + len(self._writing)
        return queued + len(self.own) + len(self.remote) + len(self.running)

    # ----------------------------------------------------------------- heartbeat

    async def _renew(self) -> list[int]:
        lost = await self.store_call(self.store.renew(self.pid, self._names(), self.lease_ms))
        for command_id in lost:
            command = self.running.get(command_id)
            if command is not None:
                command.interrupt(LOST)
        return lost

    async def _heartbeat(self) -> None:
        while True:
            await asyncio.sleep(self.lease / 3)
            try:
                await self._renew()
                await self.refresh()
            except Exception:
                log.exception("cannot renew the lease of %s on its lanes' backend", self.pid)

    async def refresh(self) -> None:
        """Reads the shared lanes' counts and dead letters now (`stats()` and `dead_letters()`
        show what the latest refresh read)."""
        self.stats_seen = await self.store.stats()
        self.letters_seen = [
            DeadLetter(
                command_id=command_id,
                command_type=command_type,
                lane_id=lane_id,
                error=error,
                attempts=attempts,
                failed_at=failed_at,
            )
            for command_id, command_type, lane_id, error, attempts, failed_at in (
                await self.store.dead_letters()
            )
        ]

    def stats(self) -> dict[str, dict[str, int]]:
        report = {}
        for spec, (pending, active, retrying) in zip(self.specs, self.stats_seen, strict=False):
            lane_id, priority, low, high = spec[0], spec[1], spec[2], spec[3]
            report[lane_id] = {
                "priority": priority,
                "pending": pending,
                "active": active,
                "retrying": retrying,
                "min_concurrency": low,
                "max_concurrency": high,
            }
        return report


def _retype(handle: CommandHandle[Any], name: str) -> None:
    """Makes a runner's handle of a named command report the name as its ``command_type``."""
    fn = handle._fn

    async def named(payload: Any) -> Any:
        result = fn(payload)
        if asyncio.iscoroutine(result) or isinstance(result, asyncio.Future):
            return await result
        return result

    named.__qualname__ = name
    handle._fn = named
    handle.is_async = True


class _Unopened:
    """The store before `SharedLanes.open` has opened it."""

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError("the shared lanes' store is not open yet")
