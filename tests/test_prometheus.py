"""`lanemq.prometheus`, scraped over real HTTP from `start_metrics_server` and parsed with
prometheus-client's parser: queue counts and pause per backend, worker counters and
histograms matching what the jobs did, lane gauges and counters matching `metrics()`, the
Prometheus lane sink's histograms, the background refresh, an unreadable queue, and bad
input."""

from __future__ import annotations

import asyncio
import time
import urllib.error
from collections.abc import AsyncIterator, Iterator

import pytest
from conformance.backends import queue_fixture
from lanemq import (
    ConfigError,
    InMemoryJobQueue,
    Job,
    JobQueue,
    JobWorker,
    LaneConfig,
    QueueManager,
    RedisJobQueue,
    RetryPolicy,
    UnrecoverableError,
)
from lanemq.prometheus import (
    LanemqCollector,
    MetricsServer,
    PrometheusMetricsSink,
    start_metrics_server,
)
from prometheus_client import CollectorRegistry
from prometheus_support import Scrape, scrape, scrape_now
from support import eventually

queue = queue_fixture("memory", "local", "redis")
WAIT = 10.0  # upper bound for anything awaited here; never reached when things work
HOUR_MS = 3_600_000


@pytest.fixture
def registry() -> CollectorRegistry:
    return CollectorRegistry()


@pytest.fixture
def server(registry: CollectorRegistry) -> Iterator[MetricsServer]:
    served = start_metrics_server(0, registry=registry)
    try:
        yield served
    finally:
        served.stop()


@pytest.fixture
def url(server: MetricsServer) -> str:
    return f"http://127.0.0.1:{server.port}/metrics"


@pytest.fixture
async def manager() -> AsyncIterator[QueueManager]:
    made = QueueManager(
        [
            LaneConfig("fast", 0, max_concurrency=4),
            LaneConfig("retry", 1, retry=RetryPolicy.fixed(1, 0.0)),
        ],
        autostart=False,
    )
    try:
        yield made
    finally:
        await made.close()


# --------------------------------------------------------------------------- queues


async def test_a_queue_shows_its_jobs_per_state_and_its_pause(
    queue: JobQueue, registry: CollectorRegistry, url: str
) -> None:
    for i in range(5):
        await queue.add("w", i)
    for i in range(2):
        await queue.add("d", i, delay=3600)
    async with LanemqCollector([queue], registry=registry) as collector:
        seen = await scrape(url)
        jobs = {
            state: seen.value("lanemq_queue_jobs", queue=queue.name, state=state)
            for state in ("waiting", "delayed", "active", "waiting_children", "completed")
        }
        assert jobs == {
            "waiting": 5,
            "delayed": 2,
            "active": 0,
            "waiting_children": 0,
            "completed": 0,
        }
        assert seen.value("lanemq_queue_paused", queue=queue.name) == 0
        assert seen.value("lanemq_queue_up", queue=queue.name) == 1

        await queue.pause()
        await queue.add("w", 5)
        await collector.refresh()
        seen = await scrape(url)
        assert seen.value("lanemq_queue_paused", queue=queue.name) == 1
        assert seen.value("lanemq_queue_jobs", queue=queue.name, state="waiting") == 6


async def test_the_refresh_task_picks_up_new_jobs_by_itself(
    registry: CollectorRegistry, url: str
) -> None:
    jobs = InMemoryJobQueue("refreshed")
    async with LanemqCollector([jobs], registry=registry, refresh_interval=1.0):
        before = await scrape(url)
        assert before.value("lanemq_queue_jobs", queue="refreshed", state="waiting") == 0
        await jobs.add("w", None)
        await jobs.add("w", None)

        async def shows_two() -> bool:
            seen = await scrape(url)
            return seen.value("lanemq_queue_jobs", queue="refreshed", state="waiting") == 2

        await eventually(shows_two, "the refresh task's new reading", WAIT)


async def test_an_unreadable_queue_is_down_without_counts(
    registry: CollectorRegistry, url: str
) -> None:
    # Nothing listens on port 1: every read fails at once with a connection error.
    unreachable = RedisJobQueue("nowhere", "redis://127.0.0.1:1/0", connect_timeout=0.5)
    fine = InMemoryJobQueue("fine")
    await fine.add("w", None)
    async with LanemqCollector([unreachable, fine], registry=registry):
        seen = await scrape(url)
    assert seen.value("lanemq_queue_up", queue="nowhere") == 0
    assert seen.total("lanemq_queue_jobs", queue="nowhere") == 0
    assert seen.value("lanemq_queue_paused", queue="nowhere") is None
    assert seen.value("lanemq_queue_up", queue="fine") == 1
    assert seen.value("lanemq_queue_jobs", queue="fine", state="waiting") == 1


# -------------------------------------------------------------------------- workers


async def test_worker_counters_and_histograms_match_what_the_jobs_did(
    queue: JobQueue, registry: CollectorRegistry, url: str
) -> None:
    async def work(job: Job) -> str:
        if job.name == "flaky":
            raise RuntimeError("always")
        if job.name == "fatal":
            raise UnrecoverableError("never")
        return "ok"

    worker = JobWorker(queue, work)
    collector = LanemqCollector(registry=registry)
    assert collector.instrument(worker) is worker
    collector.instrument(worker)  # again: changes nothing (no double counting below)
    for i in range(3):
        await queue.add("ok", i)
    await queue.add("flaky", None, attempts=3)  # fails three times: two retries, then for good
    await queue.add("fatal", None, attempts=5)  # unrecoverable: fails for good at once
    assert await worker.run_until_idle(timeout=WAIT) == 7

    seen = await scrape(url)
    name = queue.name
    assert seen.value("lanemq_jobs_completed_total", queue=name, name="ok") == 3
    assert seen.value("lanemq_jobs_failed_total", queue=name, name="flaky") == 1
    assert seen.value("lanemq_jobs_retried_total", queue=name, name="flaky") == 2
    assert seen.value("lanemq_jobs_failed_total", queue=name, name="fatal") == 1
    assert seen.value("lanemq_jobs_retried_total", queue=name, name="fatal") is None
    assert seen.total("lanemq_jobs_completed_total") == 3
    # One processing time per attempt, one queue wait per job (its first attempt).
    durations = {
        n: seen.value("lanemq_job_duration_seconds_count", queue=name, name=n)
        for n in ("ok", "flaky", "fatal")
    }
    assert durations == {"ok": 3, "flaky": 3, "fatal": 1}
    waits = {
        n: seen.value("lanemq_job_wait_seconds_count", queue=name, name=n)
        for n in ("ok", "flaky", "fatal")
    }
    assert waits == {"ok": 3, "flaky": 1, "fatal": 1}
    # The counts per state come along: the worker's queue is watched.
    await collector.refresh()
    seen = await scrape(url)
    assert seen.value("lanemq_queue_jobs", queue=name, state="completed") == 3
    assert seen.value("lanemq_queue_jobs", queue=name, state="failed") == 2


async def test_queue_wait_runs_from_the_due_time_of_a_delayed_job(
    queue: JobQueue, registry: CollectorRegistry, url: str
) -> None:
    async def work(job: Job) -> None:
        return None

    worker = LanemqCollector(registry=registry).instrument(JobWorker(queue, work))
    now = int(time.time() * 1000)
    # Added an hour ago: waited an hour. Added an hour ago, due a minute ago: waited a minute.
    await queue.add("plain", None, now=now - HOUR_MS)
    await queue.add("delayed", None, delay=3540, now=now - HOUR_MS)
    assert await worker.run_until_idle(timeout=WAIT) == 2

    seen = await scrape(url)

    def waited(name: str, bucket: str) -> float | None:
        return seen.value("lanemq_job_wait_seconds_bucket", queue=queue.name, name=name, le=bucket)

    assert (waited("plain", "600.0"), waited("plain", "+Inf")) == (0, 1)
    assert (waited("delayed", "30.0"), waited("delayed", "600.0")) == (0, 1)
    plain = seen.value("lanemq_job_wait_seconds_sum", queue=queue.name, name="plain")
    assert plain is not None and plain >= 3600


async def test_stalled_jobs_are_counted(registry: CollectorRegistry, url: str) -> None:
    jobs = InMemoryJobQueue("stalls")

    async def work(job: Job) -> str:
        return "ok"

    job = await jobs.add("s", None)
    await jobs.claim("dead-worker", lease=0.05)  # never finished: its lease runs out
    worker = JobWorker(jobs, work, stalled_interval=0.05)
    LanemqCollector(registry=registry).instrument(worker)
    async with worker:
        assert await asyncio.wait_for(job.wait(), WAIT) == "ok"
    seen = await scrape(url)
    assert seen.value("lanemq_jobs_stalled_total", queue="stalls", name="") == 1
    assert seen.value("lanemq_jobs_completed_total", queue="stalls", name="s") == 1


async def test_an_uninstrumented_worker_has_no_middleware_and_adds_nothing(
    registry: CollectorRegistry, url: str
) -> None:
    jobs = InMemoryJobQueue("plain")
    LanemqCollector(registry=registry)
    seen_by_middleware: list[str] = []

    async def mine(job: Job, call_next: object) -> object:
        seen_by_middleware.append(job.id)
        return await call_next()  # type: ignore[operator]

    worker = JobWorker(jobs, lambda job: None)
    worker.use(mine)
    await jobs.add("x", None)
    assert await worker.run_until_idle(timeout=WAIT) == 1
    seen = await scrape(url)
    assert seen.total("lanemq_jobs_completed_total") == 0
    assert seen.total("lanemq_job_duration_seconds_count") == 0
    assert len(seen_by_middleware) == 1


# ---------------------------------------------------------------------------- lanes


async def test_lane_gauges_and_counters_follow_the_manager(
    manager: QueueManager, registry: CollectorRegistry, url: str
) -> None:
    async def ok() -> str:
        return "ok"

    async def broken() -> None:
        raise RuntimeError("no")

    handles = [manager.submit_nowait("fast", ok) for _ in range(3)]
    handles.append(manager.submit_nowait("retry", broken))
    collector = LanemqCollector(managers={"main": manager}, registry=registry)
    await collector.refresh()
    seen = await scrape(url)
    assert seen.value("lanemq_lane_pending", manager="main", lane="fast") == 3
    assert seen.value("lanemq_lane_pending", manager="main", lane="retry") == 1
    assert seen.value("lanemq_lane_submitted_total", manager="main", lane="fast") == 3
    # No command has run: no percentile is made up.
    assert seen.total("lanemq_lane_latency_seconds", manager="main") == 0
    p50 = seen.value("lanemq_lane_latency_seconds", manager="main", lane="fast", quantile="0.5")
    assert p50 is None

    await manager.start()
    await asyncio.gather(*handles, return_exceptions=True)
    await collector.refresh()
    seen = await scrape(url)
    metrics = manager.metrics()
    for lane in ("fast", "retry"):
        for counter in ("completed", "failed", "retried", "dead_lettered", "started"):
            value = seen.value(f"lanemq_lane_{counter}_total", manager="main", lane=lane)
            assert value == metrics[lane][counter], (lane, counter)
        assert seen.value("lanemq_lane_pending", manager="main", lane=lane) == 0
        assert seen.value("lanemq_lane_active", manager="main", lane=lane) == 0
    assert metrics["fast"]["completed"] == 3
    assert (metrics["retry"]["retried"], metrics["retry"]["dead_lettered"]) == (1, 1)
    p50 = seen.value("lanemq_lane_latency_seconds", manager="main", lane="fast", quantile="0.5")
    assert p50 == metrics["fast"]["latency"]["p50"]
    wait = "lanemq_lane_queue_wait_seconds"
    p99 = seen.value(wait, manager="main", lane="retry", quantile="0.99")
    assert p99 == metrics["retry"]["queue_wait"]["p99"]


async def test_running_commands_show_as_active(
    manager: QueueManager, registry: CollectorRegistry, url: str
) -> None:
    release = asyncio.Event()
    started = asyncio.Event()

    async def hold() -> None:
        started.set()
        await release.wait()

    handles = [manager.submit_nowait("fast", hold) for _ in range(2)]
    await manager.start()
    await asyncio.wait_for(started.wait(), WAIT)
    collector = LanemqCollector(managers=[manager], registry=registry)
    await collector.refresh()
    seen = await scrape(url)
    assert seen.value("lanemq_lane_active", manager="default", lane="fast") == 2
    release.set()
    await asyncio.gather(*handles)


async def test_the_prometheus_sink_gives_histograms_matching_the_counters(
    registry: CollectorRegistry, url: str
) -> None:
    sink = PrometheusMetricsSink(registry)
    lanes = [LaneConfig("work", 0, max_concurrency=2, retry=RetryPolicy.fixed(2, 0.0))]
    attempts: list[int] = []

    async def twice_then_ok() -> str:
        attempts.append(1)
        if len(attempts) <= 2:
            raise RuntimeError("not yet")
        return "ok"

    async def ok() -> str:
        return "ok"

    async with QueueManager(lanes, metrics_sink=sink) as manager:
        assert await manager.submit("work", twice_then_ok) == "ok"
        for _ in range(4):
            await manager.submit("work", ok)
        metrics = manager.metrics()["work"]
    seen = await scrape(url)

    def events(event: str) -> float | None:
        return seen.value(
            "lanemq_lane_command_events_total", manager="default", lane="work", event=event
        )

    assert {e: events(e) for e in ("submitted", "started", "completed", "retried")} == {
        "submitted": 5,
        "started": 7,
        "completed": 5,
        "retried": 2,
    }
    assert metrics["started"] == 7 and metrics["retried"] == 2
    labels = {"manager": "default", "lane": "work"}
    latency = seen.value("lanemq_lane_command_latency_seconds_count", **labels)
    wait = seen.value("lanemq_lane_command_queue_wait_seconds_count", **labels)
    assert (latency, wait) == (7, 7)  # every attempt ran to an outcome; every start waited


async def test_sinks_of_two_managers_share_a_registry_and_reset_their_own(
    registry: CollectorRegistry, url: str
) -> None:
    first = PrometheusMetricsSink(registry, manager="first")
    second = first.for_manager("second")
    lanes = [LaneConfig("work", 0)]

    async def ok() -> str:
        return "ok"

    async with QueueManager(lanes, metrics_sink=first) as one:
        async with QueueManager(lanes, metrics_sink=second) as two:
            await one.submit("work", ok)
            for _ in range(2):
                await two.submit("work", ok)
            seen = await scrape(url)
            completed = "lanemq_lane_command_events_total"
            assert seen.value(completed, manager="first", lane="work", event="completed") == 1
            assert seen.value(completed, manager="second", lane="work", event="completed") == 2

            two.reset_metrics()
            assert two.metrics()["work"]["completed"] == 0
            seen = await scrape(url)
            assert seen.value(completed, manager="first", lane="work", event="completed") == 1
            assert seen.total(completed, manager="second") == 0
            await two.submit("work", ok)
            seen = await scrape(url)
            assert seen.value(completed, manager="second", lane="work", event="completed") == 1


# --------------------------------------------------------------- server, bad input


async def test_a_stopped_server_no_longer_answers(registry: CollectorRegistry) -> None:
    served = start_metrics_server(0, registry=registry)
    url = f"http://127.0.0.1:{served.port}/metrics"
    assert isinstance(await scrape(url), Scrape)
    served.stop()
    with pytest.raises(urllib.error.URLError):
        scrape_now(url)


async def test_bad_input_is_refused_naming_it(registry: CollectorRegistry) -> None:
    with pytest.raises(ConfigError, match=r"refresh_interval: 0\.5"):
        LanemqCollector(registry=registry, refresh_interval=0.5)
    with pytest.raises(ConfigError, match="metrics port: 70000"):
        start_metrics_server(70000, registry=registry)
    collector = LanemqCollector([InMemoryJobQueue("same")], registry=registry)
    with pytest.raises(ConfigError, match="'same' is already watched"):
        collector.watch_queue(InMemoryJobQueue("same"))
    one, two = QueueManager([LaneConfig("a", 0)]), QueueManager([LaneConfig("a", 0)])
    collector.watch_manager(one)
    with pytest.raises(ConfigError, match="'default' is already watched"):
        collector.watch_manager(two)
    with pytest.raises(TypeError, match="not a JobWorker"):
        collector.instrument("worker")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="Duplicated timeseries"):
        LanemqCollector(registry=registry)  # its metric names are taken in this registry
    collector.unregister()
    LanemqCollector(registry=registry)  # the names are free again
