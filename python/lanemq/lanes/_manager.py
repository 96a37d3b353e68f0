"""`QueueManager`: named lanes of asyncio work, dispatched by priority by the Rust dispatcher.

How it runs: the manager keeps a pool of runner tasks, as many as commands may run at once.
A runner asks the dispatcher for the next command (one call that also reports the previous
command's completion), awaits it in its own task, and repeats; it parks on a future when nothing
may start, and a submit, a freed slot or a timer (retry backoff, rate-limit token) wakes it (a
submit wakes one only if no runner is already on its way; a woken runner that finds work wakes
the next, so a burst still fans out). Handles are asyncio futures by protocol; the done callbacks
of all handles that finish before the loop's next turn run in one loop callback.
Commands therefore run on the caller's event loop as ordinary awaits: no task per command, no
polling tick, and `asyncio.current_task()`, `asyncio.timeout()` and cancellation behave inside
commands as they do anywhere else."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import json
import math
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, ParamSpec, Protocol, TypeVar, overload

from .. import _tracing
from .._core import AlertConfig, DeadLetter, LaneConfig, LaneDispatcher
from .._redis_url import redact_url
from ..events import Event, EventBus, Subscription
from ..exceptions import ConfigError, DrainTimeoutError, ShutdownError, UnknownLaneError
from ..observability.metrics_sink import LaneMetricsSink
from ..storage import LocalStorage
from ._handle import PENDING, CommandHandle
from ._metrics_feed import MetricsFeed
from ._running import Running
from ._shared import SharedLanes
from ._shared_config import checked_backend, checked_lease, checked_name
from ._state import Alert

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)
P = ParamSpec("P")

DEFAULT_LANES = (
    ("system", 0, 5),
    ("control", 1, 3),
    ("query", 2, 10),
    ("session", 3, 5),
    ("skill", 4, 3),
    ("prompt", 5, 2),
)


class Executable(Protocol[T_co]):
    """A command object: ``async def execute(self)``, and optionally a ``command_type``
    attribute that names it in events, metrics and dead letters."""

    def execute(self) -> Awaitable[T_co]:
        """Runs the command; what it returns is the command's result."""
        ...


def _checked_close_timeout(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"invalid close_timeout: {value!r} (must be a number of seconds)")
    if not value >= 0:  # also refuses NaN
        raise ConfigError(f"invalid close_timeout: {value!r} (must be >= 0 seconds)")
    return float(value)


def _is_async_callable(fn: Any) -> bool:
    while isinstance(fn, functools.partial):
        fn = fn.func
    if inspect.iscoroutinefunction(fn):
        return True
    call = getattr(type(fn), "__call__", None)  # noqa: B004 - we want the class's __call__
    return call is not None and inspect.iscoroutinefunction(call)


class QueueManager(Running):
    """Runs async callables in named lanes. The lane with the lowest priority number that has
    pending work, a free slot and a rate-limit token always starts next; FIFO within a lane;
    running commands are never preempted.

    ``max_concurrency`` caps all lanes together. Under such a cap each lane's
    ``min_concurrency`` is a reservation other lanes cannot take, so a flood in a high lane never
    starves a lower one; without a global cap ``min_concurrency`` changes nothing, since every
    lane can always use its own ``max_concurrency``.

    The manager starts on the first submit (or `start()` / ``async with``); with
    ``autostart=False`` submitted work waits until `start()`.

    ``metrics_sink`` (a `lanemq.metrics_sink.LaneMetricsSink`, such as the Prometheus or
    OpenTelemetry ones) also receives each command's counters and durations as they happen;
    without one only the built-in counters of `metrics()` are kept, at no extra cost.

    Leaving ``async with`` shuts down, waits at most ``close_timeout`` seconds (default 8;
    ``math.inf``: no limit) for the commands in flight, or not at all when the body raised,
    then cancels what is left (`close`).

    ``backend`` (``"local:DIR"`` or a Redis URL) shares the lanes with every manager of the
    same backend and ``name``, in any process or host: the caps, rate limits and priority
    order hold across all of them, a named command runs wherever its name is registered, and
    each process's slots are leased for ``lease`` seconds (renewed every third of it), so a
    process that dies gives them back in that time. Without it the lanes are this process's.
    """

    def __init__(
        self,
        lanes: Iterable[LaneConfig],
        max_concurrency: int | None = None,
        *,
        dead_letter_capacity: int = 1000,
        alerts: AlertConfig | None = None,
        storage: LocalStorage | None = None,
        autostart: bool = True,
        metrics_sink: LaneMetricsSink | None = None,
        tracing: bool | None = None,
        close_timeout: float = 8.0,
        backend: str | None = None,
        name: str = "agents",
        lease: float = 10.0,
    ) -> None:
        self._close_timeout = _checked_close_timeout(close_timeout)
        lane_list = list(lanes)
        if backend is not None:
            backend = checked_backend(backend)
            name = checked_name(name)
            lease = checked_lease(lease)
            if storage is not None:
                raise ConfigError(
                    "storage= and backend= together: backend= is durable by itself (drop "
                    "storage=, or drop backend= for one process's durable lanes)"
                )
        # lanemq.otel's span per command (True, or None: as lanemq.otel.instrument says).
        self._tracing = _tracing.lane_tracing(tracing)
        self._core = LaneDispatcher(lane_list, max_concurrency, dead_letter_capacity, alerts)
        self._lane_index = {lane_id: i for i, lane_id in enumerate(self._core.lane_ids())}
        self._lane_ids = self._core.lane_ids()
        # Only with a sink: None keeps the hot path to one `is not None` test per step.
        self._feed = None if metrics_sink is None else MetricsFeed(metrics_sink, self._lane_ids)
        self._timeouts = [self._core.lane_timeout(i) for i in range(len(self._lane_ids))]
        self._watch_signals = alerts is not None or any(
            lane.pressure_threshold is not None for lane in lane_list
        )
        self._async_cache: dict[Any, bool] = {}
        self._bus = EventBus()
        self._alert_callbacks: list[Callable[[Alert], Any]] = []
        self._alert_config = alerts
        self._storage = storage
        self._registry: dict[str, Callable[[Any], Awaitable[Any]]] = {}
        self._durable: dict[int, str] = {}  # command id -> its key in storage
        self._autostart = autostart
        self._event_loop: asyncio.AbstractEventLoop | None = None
        self._runners: list[asyncio.Task[None]] = []
        self._idle: list[asyncio.Future[None]] = []
        # Runners woken and not yet resumed. A submit wakes a runner only when none is on its
        # way: a woken runner that finds work wakes the next (`_run`), so a burst of commands
        # still fans out over the runners, while commands that finish without suspending (one
        # runner runs them all in one step) no longer wake every idle runner for nothing.
        self._waking = 0
        self._wake_timer: asyncio.TimerHandle | None = None
        self._wake_at = 0.0
        self._drained: list[asyncio.Future[None]] = []
        # Done callbacks of finished handles, run together by one loop callback (see
        # _callbacks_due).
        self._due: list[CommandHandle[Any]] = []
        self._background: set[asyncio.Task[Any]] = set()
        self._started = False
        self._shutting_down = False
        self._stopping = False
        self._backend = backend
        self._name = name
        # With backend=: the store shared by every manager of that backend and name dispatches
        # (SharedLanes); the Rust dispatcher above then only checks the lanes and keeps them.
        self._shared: SharedLanes | None = None
        if backend is not None:
            self._shared = SharedLanes(
                self,
                backend,
                name,
                lease,
                lane_list,
                max_concurrency,
                dead_letter_capacity,
                metrics_sink,
            )

    @property
    def backend(self) -> str | None:
        """The backend whose managers of the same `name` share these lanes (``"local:DIR"`` or
        a Redis URL, its password masked), or None: the lanes are this process's own."""
        return None if self._backend is None else redact_url(self._backend)

    @property
    def name(self) -> str:
        """The name under which managers of one backend share their lanes."""
        return self._name

    @classmethod
    def with_default_lanes(cls, max_concurrency: int | None = None, **options: Any) -> QueueManager:
        """Six lanes, all with ``min_concurrency=1``: system (priority 0, max 5), control (1, 3),
        query (2, 10), session (3, 5), skill (4, 3) and prompt (5, 2)."""
        lanes = [LaneConfig(lane_id, priority, 1, cap) for lane_id, priority, cap in DEFAULT_LANES]
        return cls(lanes, max_concurrency, **options)

    # ----------------------------------------------------------------- lifecycle

    async def start(self) -> None:
        """Starts dispatching (replaying stored named commands first, if there is storage)."""
        if self._started:
            return
        if self._shared is not None:
            self._started = True
            try:
                await self._shared.open()
            except BaseException:
                self._started = False
                raise
            return
        if self._storage is not None:
            await self._storage.open()
            for letter in self._storage.dead_letters():
                self._core.add_dead_letter(letter)
            for key, lane_id, name, payload in self._storage.pending_commands():
                self._submit_named_handle(lane_id, name, payload, key)
        self._start_runners()

    def _start_runners(self) -> None:
        if self._started:
            return
        self._started = True
        loop = self._loop()
        self._runners = [loop.create_task(self._run()) for _ in range(self._core.capacity)]

    async def shutdown(self) -> None:
        """Stops accepting work: later submits raise `ShutdownError`. Work already submitted
        goes on; `drain()` waits for it."""
        if self._shutting_down:
            return
        self._shutting_down = True
        if self._shared is not None:
            self._emit("queue.shutdown.started", in_flight=self._shared.in_flight)
            await self._shared.stop_running_named()
            return
        self._core.shutdown()
        self._emit("queue.shutdown.started", in_flight=self._core.in_flight)
        if not self._started and self._core.in_flight:
            self._start_runners()

    async def drain(self, timeout: float | None = None) -> None:
        """Waits until no command is pending, running or waiting to retry; raises
        `DrainTimeoutError` (a `TimeoutError`) if that takes longer than ``timeout`` seconds.
        With ``backend=``: the commands this process submitted or runs."""
        if not self.in_flight:
            return
        if self._shared is not None:
            await self._shared.open()
        elif not self._started:
            self._start_runners()
        waiter = self._loop().create_future()
        self._drained.append(waiter)
        try:
            await asyncio.wait_for(asyncio.shield(waiter), timeout)
        except asyncio.TimeoutError:
            raise DrainTimeoutError(
                f"drain timed out after {timeout}s with {self.in_flight} commands in flight"
            ) from None
        finally:
            if waiter in self._drained:
                self._drained.remove(waiter)

    async def close(self) -> None:
        """Shuts down, cancels whatever is still in flight, and stops the runners."""
        await self.shutdown()
        self._stopping = True
        if self._shared is not None:
            await self._shared.close()
            self._bus.close()
            return
        for handle in self._core.waiting():
            if handle._state == PENDING:
                # Not finished, so a stored (named) command stays stored and runs again.
                self._settle_cancelled(handle, forget=False)
        for runner in self._runners:
            runner.cancel()
        if self._runners:
            await asyncio.gather(*self._runners, return_exceptions=True)
        self._runners = []
        if self._wake_timer is not None:
            self._wake_timer.cancel()
        if self._background:
            await asyncio.gather(*self._background, return_exceptions=True)
        if self._storage is not None:
            self._storage.close()
        self._bus.close()

    async def __aenter__(self) -> QueueManager:
        await self.start()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, *rest: object) -> None:
        # A body that raised is failing already: its error should not wait on work in flight.
        wait = 0.0 if exc_type is not None else self._close_timeout
        try:
            await self.shutdown()
            if wait > 0:
                with contextlib.suppress(DrainTimeoutError):
                    await self.drain(None if math.isinf(wait) else wait)
        finally:
            await self.close()

    # ---------------------------------------------------------------- submitting

    # The overloads type a submit from its command: the arguments are checked against the
    # callable's signature (ParamSpec) and the result is what the command returns (awaited
    # if it is an awaitable).

    @overload
    def submit_nowait(
        self, lane_id: str, command: Callable[P, Awaitable[T]], /, *args: P.args, **kwargs: P.kwargs
    ) -> CommandHandle[T]: ...

    @overload
    def submit_nowait(
        self, lane_id: str, command: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs
    ) -> CommandHandle[T]: ...

    @overload
    def submit_nowait(self, lane_id: str, command: Executable[T], /) -> CommandHandle[T]: ...

    def submit_nowait(
        self, lane_id: str, command: Any, /, *args: Any, **kwargs: Any
    ) -> CommandHandle[Any]:
        """Queues ``command(*args, **kwargs)`` in ``lane_id`` and returns its handle at once.
        ``command`` is an async callable, a plain callable (run in a worker thread), or an
        object with ``async def execute(self)`` and a ``command_type`` attribute."""
        lane = self._lane_index.get(lane_id)
        if lane is None:
            raise self._unknown_lane(lane_id)
        if self._shutting_down:
            raise ShutdownError(f"the queue manager is shut down; cannot submit to {lane_id!r}")
        is_async = self._async_cache.get(command)
        if is_async is None:
            command, is_async = self._resolve(command)
        # An empty kwargs dict is dropped at once: a pending command then keeps one object
        # alive (its handle), which keeps the garbage collector's work down under a backlog.
        handle: CommandHandle[Any] = CommandHandle(
            self, lane, command, args, kwargs or None, is_async
        )
        if self._tracing is not None:
            self._tracing.wrap(handle)
        if self._shared is not None:
            self._shared.submit(handle, None, None)
            return handle
        handle.id = self._core.push(lane, handle)
        if self._feed is not None:
            self._feed.submitted(handle)
        if self._bus.active:
            self._emit_for("queue.command.submitted", handle)
        if self._watch_signals:
            self._process_signals()
        if self._idle:
            if not self._waking:
                self._wake_one()
        elif not self._started and self._autostart:
            self._loop()
            self._start_runners()
        return handle

    @overload
    async def submit(
        self, lane_id: str, command: Callable[P, Awaitable[T]], /, *args: P.args, **kwargs: P.kwargs
    ) -> T: ...

    @overload
    async def submit(
        self, lane_id: str, command: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs
    ) -> T: ...

    @overload
    async def submit(self, lane_id: str, command: Executable[T], /) -> T: ...

    async def submit(self, lane_id: str, command: Any, /, *args: Any, **kwargs: Any) -> Any:
        """Runs ``command(*args, **kwargs)`` in ``lane_id`` and returns its result (or raises
        its error, `CommandTimeoutError` on the lane's timeout).

        The callable runs in this process and is not stored: a crash loses it. `submit_named`
        differs: it runs a command registered by name, with a JSON payload, wherever that
        name is registered (with ``backend=``), stores it first (with ``storage=`` or
        ``backend=``) and returns its `CommandHandle` rather than its result. Use this for
        work of the moment, `submit_named` for work that must survive a crash or run in
        another process."""
        return await self.submit_nowait(lane_id, command, *args, **kwargs)

    def _unknown_lane(self, lane_id: str) -> UnknownLaneError:
        return UnknownLaneError(f"unknown lane: {lane_id!r} (lanes: {', '.join(self._lane_ids)})")

    def _resolve(self, command: Any) -> tuple[Callable[..., Any], bool]:
        original = command
        if not callable(command):
            execute = getattr(command, "execute", None)
            if execute is None or not callable(execute):
                raise TypeError(
                    f"command must be callable or have an execute() method, got {command!r}"
                )
            command = execute
        is_async = _is_async_callable(command)
        if callable(original):
            if len(self._async_cache) > 4096:
                self._async_cache.clear()
            with contextlib.suppress(TypeError):  # unhashable callables are just not cached
                self._async_cache[original] = is_async
        return command, is_async

    # ---------------------------------------------------------- named (durable)

    def register(self, name: str, handler: Callable[[Any], Awaitable[Any]]) -> None:
        """Registers a handler for `submit_named` (and for replaying stored commands)."""
        if not name:
            raise ValueError(f"invalid command name: {name!r}")
        if not callable(handler):
            raise TypeError(f"handler for {name!r} must be callable, got {handler!r}")
        self._registry[name] = handler
        if self._shared is not None:
            self._shared.names_changed()

    async def submit_named(
        self, lane_id: str, name: str, payload: Any = None
    ) -> CommandHandle[Any]:
        """Submits the command registered as ``name`` (`register`) with a JSON ``payload`` and
        returns its `CommandHandle` once it is stored: await the handle for the result.

        `submit` differs: it runs any callable, with any arguments, in this process, stores
        nothing, and returns the result itself. This call awaits only the durable write, so a
        caller may wait for the result later or never. With ``storage=``, the command is on
        disk before this returns and runs again after a restart if it did not finish; without
        ``storage=`` or ``backend=`` it is held in memory only, as with `submit`.

        With ``backend=``, the command is held by the backend before this returns, and runs in
        whichever process sharing the lanes registered ``name`` (this one need not have); its
        result or error (a `CommandFailedError` naming the original class and message) comes
        back to this handle."""
        if self._shared is not None:
            return await self._submit_shared(lane_id, name, payload)
        if name not in self._registry:
            raise LookupError(f"no command registered as {name!r}")
        if lane_id not in self._lane_index:
            raise self._unknown_lane(lane_id)
        if self._shutting_down:
            raise ShutdownError(f"the queue manager is shut down; cannot submit to {lane_id!r}")
        key = None
        if self._storage is not None:
            await self._storage.open()
            key = await self._storage.store_command(lane_id, name, payload)
        return self._submit_named_handle(lane_id, name, payload, key)

    async def _submit_shared(self, lane_id: str, name: str, payload: Any) -> CommandHandle[Any]:
        assert self._shared is not None
        if not isinstance(name, str) or not name:
            raise ValueError(f"invalid command name: {name!r}")
        lane = self._lane_index.get(lane_id)
        if lane is None:
            raise self._unknown_lane(lane_id)
        if self._shutting_down:
            raise ShutdownError(f"the queue manager is shut down; cannot submit to {lane_id!r}")
        try:
            text = json.dumps(payload, allow_nan=False)
        except (TypeError, ValueError) as error:
            raise TypeError(f"payload of {name!r} is not JSON-serialisable: {error}") from None
        if not self._started:
            await self.start()
        handle = self._shared.named_handle(lane, name, payload)
        await self._shared.submit(handle, name, text)
        return handle

    def _submit_named_handle(
        self, lane_id: str, name: str, payload: Any, key: str | None
    ) -> CommandHandle[Any]:
        handler = self._registry.get(name)
        if handler is None:
            raise LookupError(f"stored command {key!r} names {name!r}, which is not registered")
        handle = self.submit_nowait(lane_id, handler, payload)
        if key is not None:
            self._durable[handle.id] = key
        return handle

    # ------------------------------------------------------------- observation

    def events(
        self, *keys: str, buffer: int = 10_000, where: Callable[[Event], bool] | None = None
    ) -> Subscription:
        """Subscribes to events (all, or those whose key is given; ``prefix.*`` matches a
        prefix), and of those only the ones for which ``where(event)`` is true, if given
        (``where=lambda e: e.payload.get("lane_id") == "prompt"``). The subscription starts
        now; iterate it with ``async for``."""
        return self._bus.subscribe(keys, buffer, where)

    def on_alert(self, callback: Callable[[Alert], Any]) -> None:
        """Calls ``callback(alert)`` when a lane's depth or a command's latency crosses the
        manager's `AlertConfig` thresholds (async callbacks are scheduled as tasks)."""
        self._alert_callbacks.append(callback)

    def stats(self) -> dict[str, dict[str, int]]:
        """Per lane: priority, pending, active, retrying, min_concurrency, max_concurrency.
        With ``backend=``: across every process, as the latest `refresh` read them."""
        if self._shared is not None:
            return self._shared.stats()
        return self._core.stats()

    async def refresh(self) -> None:
        """With ``backend=``: reads the shared lanes' counts (`stats`) and dead letters
        (`dead_letters`) from the backend now; each process also does so every third of its
        ``lease``. Without ``backend=`` there is nothing to read."""
        if self._shared is not None:
            await self._shared.open()
            await self._shared.refresh()

    def metrics(self) -> dict[str, dict[str, Any]]:
        """Per lane: submitted, started, completed, failed, timed_out, retried, dead_lettered,
        cancelled (since the manager was made, or the last `reset_metrics`), and ``latency`` /
        ``queue_wait`` percentiles (p50, p90, p95, p99, seconds, with the ``count`` of samples)
        over the latest 4096 samples of each lane. With ``backend=``: what this process
        submitted and ran."""
        if self._shared is not None:
            return self._shared.recorder.metrics()
        return self._core.metrics()

    def reset_metrics(self) -> None:
        """Counts `metrics()` from zero again (counters, and the latency and queue-wait samples
        behind the percentiles), and resets the ``metrics_sink``, if any."""
        if self._shared is not None:
            self._shared.recorder.reset()
            return
        self._core.reset_metrics()
        if self._feed is not None:
            self._feed.sink.reset()

    def dead_letters(self) -> list[DeadLetter]:
        """Commands that failed for good, oldest first (the newest are kept). With
        ``backend=``: of every process, durable, as the latest `refresh` read them."""
        if self._shared is not None:
            return list(self._shared.letters_seen)
        return self._core.dead_letters()

    @property
    def lane_ids(self) -> list[str]:
        """The manager's lane ids, in the order its lanes were given."""
        return list(self._lane_ids)

    @property
    def in_flight(self) -> int:
        """Commands pending, running or waiting to retry (with ``backend=``: those this
        process submitted or runs)."""
        if self._shared is not None:
            return self._shared.in_flight
        return self._core.in_flight
