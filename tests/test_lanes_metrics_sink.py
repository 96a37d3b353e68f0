"""`QueueManager(metrics_sink=...)`: the sink receives the counters `metrics()` counts, at the
same moments, and one latency per attempt that ran to an outcome and one queue wait per start;
`reset_metrics()` counts from zero again and resets the sink; a broken sink breaks nothing.
Also the OpenTelemetry sink, read back through the SDK's in-memory reader."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from lanemq import CommandTimeoutError, LaneConfig, QueueManager, RetryPolicy
from lanemq.metrics_sink import COUNTERS, InMemoryMetricsSink, LaneMetricsSink
from lanemq.otel_metrics_sink import OTelMetricsSink
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

WAIT = 5.0  # upper bound for anything awaited here; never reached when things work


def lanes() -> list[LaneConfig]:
    return [
        LaneConfig("main", 0, max_concurrency=4, retry=RetryPolicy.fixed(1, 0.0)),
        LaneConfig("slow", 1, timeout=0.05),
    ]


async def run_a_mix(manager: QueueManager) -> None:
    """Completions, a retry then success, a dead letter, a timeout and a cancellation."""
    attempts: list[int] = []

    async def ok() -> str:
        return "ok"

    async def flaky() -> str:
        attempts.append(1)
        if len(attempts) == 1:
            raise RuntimeError("first try")
        return "ok"

    async def broken() -> None:
        raise RuntimeError("always")

    async def hangs() -> None:
        await asyncio.sleep(60)

    started = asyncio.Event()

    async def held() -> None:
        started.set()
        await asyncio.sleep(60)

    assert await manager.submit("main", ok) == "ok"
    assert await manager.submit("main", flaky) == "ok"
    with pytest.raises(RuntimeError, match="always"):
        await manager.submit("main", broken)
    with pytest.raises(CommandTimeoutError):
        await manager.submit("slow", hangs)
    running = manager.submit_nowait("main", held)
    await asyncio.wait_for(started.wait(), WAIT)
    running.cancel()  # running: cancelled, no latency
    await asyncio.gather(running, return_exceptions=True)


async def test_the_sink_counts_what_metrics_counts() -> None:
    sink = InMemoryMetricsSink()
    assert isinstance(sink, LaneMetricsSink)
    manager = QueueManager(lanes(), metrics_sink=sink)
    await run_a_mix(manager)
    metrics = manager.metrics()
    await manager.close()
    for lane in ("main", "slow"):
        for counter in COUNTERS:
            assert sink.count(lane, counter) == metrics[lane][counter], (lane, counter)
    assert metrics["main"]["completed"] == 2
    assert (metrics["main"]["retried"], metrics["main"]["dead_lettered"]) == (2, 1)
    assert (metrics["slow"]["timed_out"], metrics["main"]["cancelled"]) == (1, 1)
    for lane in ("main", "slow"):
        m = metrics[lane]
        # One latency per attempt that completed or failed (not the cancelled one), and one
        # queue wait per start: the core's own sample counts.
        ran = m["completed"] + m["retried"] + m["failed"]
        assert sink.observed(lane, "latency").count == ran == m["latency"]["count"]
        assert sink.observed(lane, "queue_wait").count == m["started"] == m["queue_wait"]["count"]
    assert sink.observed("slow", "latency").max >= 0.05  # it ran until its timeout


async def test_reset_metrics_counts_from_zero_and_resets_the_sink() -> None:
    sink = InMemoryMetricsSink()

    async def ok() -> str:
        return "ok"

    async with QueueManager(lanes(), metrics_sink=sink) as manager:
        for _ in range(3):
            await manager.submit("main", ok)
        assert manager.metrics()["main"]["completed"] == 3
        manager.reset_metrics()
        after = manager.metrics()
        assert {c: after["main"][c] for c in COUNTERS} == dict.fromkeys(COUNTERS, 0)
        # The samples behind the percentiles go too.
        assert after["main"]["latency"]["count"] == after["main"]["queue_wait"]["count"] == 0
        assert sink.counters == {}
        await manager.submit("main", ok)
        assert manager.metrics()["main"]["completed"] == 1
        assert sink.count("main", "completed") == 1
        assert sink.count("main", "submitted") == 1


async def test_reset_metrics_without_a_sink() -> None:
    async def ok() -> str:
        return "ok"

    async with QueueManager(lanes()) as manager:
        await manager.submit("main", ok)
        manager.reset_metrics()
        await manager.submit("main", ok)
        await manager.submit("main", ok)
        assert manager.metrics()["main"]["completed"] == 2
        assert manager.metrics()["main"]["submitted"] == 2


class Exploding:
    def __init__(self) -> None:
        self.calls = 0

    def increment(self, lane: str, counter: str, n: int = 1) -> None:
        self.calls += 1
        raise RuntimeError("sink down")

    def observe(self, lane: str, kind: str, seconds: float) -> None:
        raise RuntimeError("sink down")

    def reset(self) -> None:
        self.calls = 0


async def test_a_broken_sink_breaks_no_command_and_is_logged_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.ERROR, logger="lanemq")
    sink = Exploding()

    async def ok() -> str:
        return "ok"

    async with QueueManager(lanes(), metrics_sink=sink) as manager:
        results = [await manager.submit("main", ok) for _ in range(3)]
    assert results == ["ok"] * 3
    assert sink.calls >= 9  # it was called for every event (and raised each time)
    logged = [r for r in caplog.records if "metrics sink" in r.getMessage()]
    assert len(logged) == 1


def test_a_sink_without_the_methods_is_refused() -> None:
    with pytest.raises(TypeError, match="metrics_sink must have increment"):
        QueueManager(lanes(), metrics_sink=object())  # type: ignore[arg-type]


def otel_points(reader: InMemoryMetricReader) -> dict[str, list[Any]]:
    data = reader.get_metrics_data()
    assert data is not None
    return {
        metric.name: list(metric.data.data_points)
        for resource in data.resource_metrics
        for scope in resource.scope_metrics
        for metric in scope.metrics
    }


async def test_the_otel_sink_records_counters_and_histograms() -> None:
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    sink = OTelMetricsSink(provider.get_meter("test"), manager="main-manager")
    manager = QueueManager(lanes(), metrics_sink=sink)
    await run_a_mix(manager)
    metrics = manager.metrics()
    await manager.close()
    points = otel_points(reader)

    def counted(lane: str, event: str) -> int:
        return sum(
            int(p.value)
            for p in points["lanemq.lane.commands"]
            if p.attributes["lanemq.lane"] == lane and p.attributes["lanemq.event"] == event
        )

    for lane in ("main", "slow"):
        for counter in COUNTERS:
            assert counted(lane, counter) == metrics[lane][counter], (lane, counter)
    durations = {
        (name, p.attributes["lanemq.lane"]): p.count
        for name in ("lanemq.lane.command.duration", "lanemq.lane.command.wait.duration")
        for p in points[name]
    }
    main_latencies = durations[("lanemq.lane.command.duration", "main")]
    assert main_latencies == metrics["main"]["latency"]["count"]
    assert (
        durations[("lanemq.lane.command.wait.duration", "slow")]
        == metrics["slow"]["queue_wait"]["count"]
    )
    managers = {p.attributes["lanemq.manager"] for p in points["lanemq.lane.commands"]}
    assert managers == {"main-manager"}
