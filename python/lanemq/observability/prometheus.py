"""Prometheus metrics for job queues, workers and lane managers (the ``lanemq[prometheus]``
extra, on prometheus-client). README.md's "Prometheus" section lists every metric.

* `LanemqCollector` exposes, for the job queues and `QueueManager`s it watches, the counts
  per job state, whether each queue is paused, and each lane's depth, running commands,
  counters and latency percentiles; and, for the workers it instruments
  (`LanemqCollector.instrument`), counters of completed, failed, retried and stalled jobs and
  histograms of processing time and queue wait.
* `PrometheusMetricsSink` is a `lanemq.metrics_sink.LaneMetricsSink`: given to
  ``QueueManager(metrics_sink=...)``, it turns every lane command into histogram samples.
* `start_metrics_server` serves a registry over HTTP (``lanemq worker --metrics-port``)."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import weakref
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any
from wsgiref.simple_server import WSGIServer

try:
    from prometheus_client import REGISTRY, CollectorRegistry, Counter, Histogram
    from prometheus_client import start_http_server as _start_http_server
    from prometheus_client.metrics_core import Metric
except ImportError as missing:  # pragma: no cover - the extra is installed in tests
    raise ImportError(
        "lanemq.prometheus needs prometheus-client: pip install 'lanemq[prometheus]'"
    ) from missing

from ..exceptions import ConfigError
from ..job import Job
from ..lanes import QueueManager
from ..queue import JobQueue, QueueStats
from ..worker import JobWorker
from ._prometheus_families import JOB_STATES, _families, _Snapshot

log = logging.getLogger("lanemq.prometheus")

#: Histogram buckets, in seconds: Prometheus' defaults (5 ms to 10 s) stretched to 10 minutes,
#: since jobs often run (and wait) far longer than a web request.
DEFAULT_BUCKETS = (
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
    60.0,
    120.0,
    300.0,
    600.0,
)


class LanemqCollector:
    """Prometheus metrics of job queues, job workers and lane managers, registered in
    ``registry`` (prometheus-client's default one when None).

    ``queues`` are the job queues whose counts are exposed; ``managers`` the `QueueManager`s
    whose lanes are: a mapping names them (the ``manager`` label), a plain iterable may hold
    one (named ``default``). `instrument` adds a worker's job counters and histograms (and
    watches its queue).

    How the queue and lane values are read: a Prometheus scrape calls `collect` in the HTTP
    server's thread, while the queues are asyncio objects of an event loop (and a read may
    wait on Redis). So `collect` never reads a backend: a refresh task on the queues' own
    loop (`start`, or ``async with collector``) reads every queue's counts (`get_stats`, one
    round trip each) and every manager's `stats()` / `metrics()` every ``refresh_interval``
    seconds (at least 1), and `collect` serves the latest of those readings. That keeps a
    scrape from blocking on a busy loop or a slow server, and bounds the backend's load to
    one read per queue per interval however many scrapers there are (blocking the scrape
    with ``run_coroutine_threadsafe`` would give neither); the price is values up to one
    interval old. A queue whose read fails (or takes longer than the interval) shows
    ``lanemq_queue_up 0`` and no counts until a read succeeds. The job counters and
    histograms are live: the worker's hooks update them as jobs finish."""

    def __init__(
        self,
        queues: Iterable[JobQueue] = (),
        managers: Mapping[str, QueueManager] | Iterable[QueueManager] = (),
        *,
        registry: CollectorRegistry | None = None,
        refresh_interval: float = 5.0,
        buckets: Sequence[float] = DEFAULT_BUCKETS,
    ) -> None:
        if not (isinstance(refresh_interval, (int, float)) and 1.0 <= refresh_interval < 1e9):
            raise ConfigError(
                f"invalid refresh_interval: {refresh_interval!r} (must be >= 1 second)"
            )
        self.refresh_interval = float(refresh_interval)
        self.registry = REGISTRY if registry is None else registry
        self._queues: dict[str, JobQueue] = {}
        self._managers: dict[str, QueueManager] = {}
        for queue in queues:
            self.watch_queue(queue)
        if isinstance(managers, Mapping):
            for name, manager in managers.items():
                self.watch_manager(manager, name)
        else:
            for manager in managers:
                self.watch_manager(manager)
        self._snapshot = _Snapshot()
        self._task: asyncio.Task[None] | None = None
        self._down: set[str] = set()  # queues whose last read failed (logged once)
        self._jobs = _JobMetrics(self.registry, buckets)
        self._instrumented: weakref.WeakSet[JobWorker] = weakref.WeakSet()
        self.registry.register(self)

    # ------------------------------------------------------------- what to watch

    def watch_queue(self, queue: JobQueue) -> None:
        """Exposes ``queue``'s job counts and pause (label ``queue``: its name)."""
        if not isinstance(queue, JobQueue):
            raise TypeError(f"not a JobQueue: {queue!r}")
        known = self._queues.get(queue.name)
        if known is not None and known is not queue:
            raise ConfigError(f"another queue named {queue.name!r} is already watched")
        self._queues[queue.name] = queue

    def watch_manager(self, manager: QueueManager, name: str = "default") -> None:
        """Exposes ``manager``'s lanes (label ``manager``: ``name``)."""
        if not isinstance(manager, QueueManager):
            raise TypeError(f"not a QueueManager: {manager!r}")
        if not name or not isinstance(name, str):
            raise ConfigError(f"invalid manager name: {name!r}")
        known = self._managers.get(name)
        if known is not None and known is not manager:
            raise ConfigError(
                f"a manager named {name!r} is already watched "
                "(pass managers as a dict of names to watch several)"
            )
        self._managers[name] = manager

    def instrument(self, worker: JobWorker, *, watch_queue: bool = True) -> JobWorker:
        """Counts ``worker``'s jobs (completed, failed for good, retried, stalled) and times
        them (processing, queue wait), through its hooks and one middleware, which only an
        instrumented worker has; with ``watch_queue``, also exposes its queue's counts (unless
        another queue of that name is watched). Instrumenting a worker again changes nothing.
        Returns ``worker``."""
        if not isinstance(worker, JobWorker):
            raise TypeError(f"not a JobWorker: {worker!r}")
        if worker in self._instrumented:
            return worker
        self._instrumented.add(worker)
        if watch_queue and worker.queue.name not in self._queues:
            self.watch_queue(worker.queue)
        for event, hook in self._jobs.hooks(worker).items():
            worker.on(event, hook)
        worker.use(self._jobs.middleware(worker.queue.name))
        return worker

    # ------------------------------------------------------------------ refresh

    async def refresh(self) -> None:
        """Reads every watched queue and manager now (what the refresh task does each
        interval)."""
        queues = list(self._queues.items())
        stats = await asyncio.gather(*(self._read(name, queue) for name, queue in queues))
        lanes = tuple(
            (name, manager.stats(), manager.metrics()) for name, manager in self._managers.items()
        )
        self._snapshot = _Snapshot(
            tuple((name, read) for (name, _), read in zip(queues, stats, strict=True)), lanes
        )

    async def _read(self, name: str, queue: JobQueue) -> QueueStats | None:
        try:
            stats = await asyncio.wait_for(queue.get_stats(), self.refresh_interval)
        except Exception as error:
            if name not in self._down:
                self._down.add(name)
                text = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
                log.warning("cannot read queue %r for its metrics: %s", name, text)
            return None
        if name in self._down:
            self._down.discard(name)
            log.info("queue %r can be read again", name)
        return stats

    async def start(self) -> None:
        """Reads everything once, then starts the refresh task on the running loop."""
        if self._task is not None and not self._task.done():
            return
        await self.refresh()
        self._task = asyncio.get_running_loop().create_task(self._refresh_forever())

    async def _refresh_forever(self) -> None:
        while True:
            await asyncio.sleep(self.refresh_interval)
            try:
                await self.refresh()
            except Exception:
                log.exception("refreshing the lanemq metrics failed")

    async def stop(self) -> None:
        """Stops the refresh task (the last values stay exposed)."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    async def __aenter__(self) -> LanemqCollector:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    def unregister(self) -> None:
        """Removes every metric of this collector from its registry."""
        self.registry.unregister(self)
        self._jobs.unregister()

    # ------------------------------------------------------ the Collector protocol

    def describe(self) -> list[Metric]:
        """The families `collect` yields, without samples (for the registry's name check)."""
        return list(_families(_Snapshot()))

    def collect(self) -> Iterator[Metric]:
        """The metric families with their samples, as prometheus-client's registry asks for them at
        a scrape."""
        return _families(self._snapshot)


class _JobMetrics:
    """The live job counters and histograms, and the worker hooks and middleware that feed
    them."""

    def __init__(self, registry: CollectorRegistry, buckets: Sequence[float]) -> None:
        labels = ("queue", "name")
        self.registry = registry

        def counter(name: str, doc: str) -> Counter:
            return Counter(name, doc, labels, registry=registry)

        def histogram(name: str, doc: str) -> Histogram:
            return Histogram(name, doc, labels, registry=registry, buckets=buckets)

        self.completed = counter("lanemq_jobs_completed_total", "Jobs completed.")
        self.failed = counter("lanemq_jobs_failed_total", "Jobs failed for good.")
        self.retried = counter(
            "lanemq_jobs_retried_total", "Failed attempts of jobs that will be retried."
        )
        self.stalled = counter(
            "lanemq_jobs_stalled_total", "Jobs stalled recovery found (name: empty)."
        )
        self.duration = histogram(
            "lanemq_job_duration_seconds", "Time a job's processor ran, per attempt."
        )
        self.wait = histogram(
            "lanemq_job_wait_seconds",
            "Time a job waited from ready (added, or due if delayed) to its first start.",
        )
        self._all = (
            self.completed,
            self.failed,
            self.retried,
            self.stalled,
            self.duration,
            self.wait,
        )

    def unregister(self) -> None:
        for metric in self._all:
            self.registry.unregister(metric)

    def hooks(self, worker: JobWorker) -> dict[str, Callable[..., None]]:
        queue = worker.queue.name
        # The worker counts a failure for good before its ``failed`` hook runs (and only
        # those), so a ``failed`` hook that finds its ``failed`` counter unchanged saw an
        # attempt that will be retried.
        final_failures = [worker.failed]

        def completed(job: Job, result: Any) -> None:
            self.completed.labels(queue, job.name).inc()

        def failed(job: Job, error: BaseException) -> None:
            now = worker.failed
            if now == final_failures[0]:
                self.retried.labels(queue, job.name).inc()
            final_failures[0] = now

        def dead(job: Job, error: BaseException) -> None:
            self.failed.labels(queue, job.name).inc()

        def stalled(job_id: str) -> None:
            # Only the id is known here: reading the job for its name would cost a round
            # trip per stalled job in the recovery chore.
            self.stalled.labels(queue, "").inc()

        return {"completed": completed, "failed": failed, "dead": dead, "stalled": stalled}

    def middleware(
        self, queue: str
    ) -> Callable[[Job, Callable[[], Awaitable[Any]]], Awaitable[Any]]:
        duration = self.duration
        wait = self.wait

        async def measure(job: Job, call_next: Callable[[], Awaitable[Any]]) -> Any:
            started = time.perf_counter()
            processed_on = job.processed_on
            if processed_on is not None and job.attempts_started == 1:
                ready = max(job.created_at, job.delay_until)
                wait.labels(queue, job.name).observe(max(0, processed_on - ready) / 1000)
            try:
                return await call_next()
            finally:
                duration.labels(queue, job.name).observe(time.perf_counter() - started)

        return measure


class PrometheusMetricsSink:
    """A `lanemq.metrics_sink.LaneMetricsSink` for ``QueueManager(metrics_sink=...)``: every
    command's counters (``lanemq_lane_command_events_total``, label ``event``) and durations
    (histograms ``lanemq_lane_command_latency_seconds`` and
    ``lanemq_lane_command_queue_wait_seconds``), labelled ``manager`` and ``lane``. Unlike
    `LanemqCollector`'s lane percentiles, histograms add up across processes.

    One sink per registry; give each further manager ``sink.for_manager(name)``, which shares
    the metrics under another ``manager`` label. `reset` removes this manager's series."""

    def __init__(
        self,
        registry: CollectorRegistry | None = None,
        *,
        manager: str = "default",
        buckets: Sequence[float] = DEFAULT_BUCKETS,
    ) -> None:
        registry = REGISTRY if registry is None else registry
        labels = ("manager", "lane")
        self._shared = (
            Counter(
                "lanemq_lane_command_events_total",
                "Lane command events, as the metrics sink received them.",
                (*labels, "event"),
                registry=registry,
            ),
            Histogram(
                "lanemq_lane_command_latency_seconds",
                "Run time of each lane command attempt.",
                labels,
                registry=registry,
                buckets=buckets,
            ),
            Histogram(
                "lanemq_lane_command_queue_wait_seconds",
                "Time each lane command waited from submit (or retry due) to start.",
                labels,
                registry=registry,
                buckets=buckets,
            ),
        )
        self._bind(manager)

    def _bind(self, manager: str) -> None:
        if not manager or not isinstance(manager, str):
            raise ConfigError(f"invalid manager name: {manager!r}")
        self.manager = manager
        # The labelled children this sink made, for the hot path and for `reset`. (The
        # manager calls a sink from its loop's thread only: no lock.)
        self._events: dict[tuple[str, str], Any] = {}
        self._durations: dict[tuple[str, str], Any] = {}

    def for_manager(self, manager: str) -> PrometheusMetricsSink:
        """A sink for another manager, sharing these metrics under ``manager=manager``."""
        sibling = object.__new__(PrometheusMetricsSink)
        sibling._shared = self._shared
        sibling._bind(manager)
        return sibling

    def increment(self, lane: str, counter: str, n: int = 1) -> None:
        """Adds ``n`` to the lane's counter (one of `COUNTERS`)."""
        child = self._events.get((lane, counter))
        if child is None:
            child = self._events[lane, counter] = self._shared[0].labels(
                self.manager, lane, counter
            )
        child.inc(n)

    def observe(self, lane: str, kind: str, seconds: float) -> None:
        """Records one duration of the lane (``latency`` or ``queue_wait``)."""
        child = self._durations.get((lane, kind))
        if child is None:
            histogram = self._shared[1] if kind == "latency" else self._shared[2]
            child = self._durations[lane, kind] = histogram.labels(self.manager, lane)
        child.observe(seconds)

    def reset(self) -> None:
        """Removes this manager's series, as `QueueManager.reset_metrics` asks."""
        events, self._events = self._events, {}
        durations, self._durations = self._durations, {}
        for lane, counter in events:
            self._shared[0].remove(self.manager, lane, counter)
        for lane, kind in durations:
            histogram = self._shared[1] if kind == "latency" else self._shared[2]
            histogram.remove(self.manager, lane)


class MetricsServer:
    """The HTTP server of `start_metrics_server`, in a daemon thread; `stop` ends it."""

    def __init__(self, server: WSGIServer, thread: threading.Thread) -> None:
        self._server = server
        self._thread = thread
        #: The address and port it listens on (the port the system chose, if 0 was asked).
        self.addr: str = str(server.server_address[0])
        self.port: int = int(server.server_address[1])

    def stop(self) -> None:
        """Stops serving and closes the socket (waits for the thread, at most 5 s)."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5.0)

    def __enter__(self) -> MetricsServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def start_metrics_server(
    port: int, addr: str = "127.0.0.1", registry: CollectorRegistry | None = None
) -> MetricsServer:
    """Serves ``registry`` (prometheus-client's default one when None) at
    ``http://addr:port/metrics`` from a daemon thread (prometheus-client's
    ``start_http_server``); port 0 lets the system choose (see `MetricsServer.port`). Raises
    `ConfigError` for a bad port, `OSError` if it cannot listen there."""
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise ConfigError(f"invalid metrics port: {port!r} (must be an int from 0 to 65535)")
    server, thread = _start_http_server(
        port, addr=addr, registry=REGISTRY if registry is None else registry
    )
    return MetricsServer(server, thread)


__all__ = [
    "DEFAULT_BUCKETS",
    "JOB_STATES",
    "LanemqCollector",
    "MetricsServer",
    "PrometheusMetricsSink",
    "start_metrics_server",
]
