"""QueueManager metrics, stats and alerts."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from lanemq import (
    Alert,
    AlertConfig,
    ConfigError,
    LaneConfig,
    QueueManager,
    RetryPolicy,
    UnrecoverableError,
)
from lanemq.metrics_sink import COUNTERS
from support import wait_until

WAIT = 5.0  # upper bound for anything awaited in a test; never reached when things work


def counters(metrics: dict[str, Any]) -> dict[str, int]:
    return {name: metrics[name] for name in COUNTERS}


async def ok() -> str:
    return "ok"


async def test_counters_match_outcomes_per_lane() -> None:
    flaky_lane = LaneConfig(
        "flaky", 0, max_concurrency=8, timeout=0.2, retry=RetryPolicy.fixed(2, 0.01)
    )
    plain_lane = LaneConfig("plain", 1, max_concurrency=4)
    unused_lane = LaneConfig("unused", 2)
    m = QueueManager([flaky_lane, plain_lane, unused_lane])
    calls: dict[str, int] = {}

    def attempt(name: str) -> int:
        calls[name] = calls.get(name, 0) + 1
        return calls[name]

    async def always_fails(name: str) -> None:
        attempt(name)
        raise RuntimeError(f"{name} failed")

    async def times_out_once(name: str) -> str:
        if attempt(name) == 1:
            await asyncio.sleep(WAIT)
        return name

    async def fails_once(name: str) -> str:
        if attempt(name) == 1:
            raise RuntimeError("transient")
        return name

    async def unrecoverable(name: str) -> None:
        attempt(name)
        raise UnrecoverableError("give up")

    async def succeeds(name: str) -> str:
        attempt(name)
        return name

    try:
        withdrawn = m.submit_nowait("flaky", succeeds, "withdrawn")
        assert withdrawn.cancel()  # still pending: withdrawn before it ever starts
        flaky = [
            m.submit_nowait("flaky", always_fails, "fail-a"),  # 3 attempts, 2 retries, dead
            m.submit_nowait("flaky", always_fails, "fail-b"),  # 3 attempts, 2 retries, dead
            m.submit_nowait("flaky", times_out_once, "timeout"),  # timeout, retry, success
            m.submit_nowait("flaky", fails_once, "once"),  # error, retry, success
            m.submit_nowait("flaky", unrecoverable, "unrecoverable"),  # 1 attempt, dead
            m.submit_nowait("flaky", succeeds, "s1"),
            m.submit_nowait("flaky", succeeds, "s2"),
        ]
        plain = [
            *(m.submit_nowait("plain", succeeds, f"p{i}") for i in range(3)),
            m.submit_nowait("plain", always_fails, "plain-fail"),  # no retry policy
        ]
        outcomes = await asyncio.wait_for(
            asyncio.gather(*flaky, *plain, return_exceptions=True), WAIT
        )
        await m.drain(WAIT)
        metrics = m.metrics()
    finally:
        await m.close()

    assert withdrawn.cancelled()
    assert "withdrawn" not in calls
    assert [type(o).__name__ if isinstance(o, BaseException) else o for o in outcomes] == [
        "RuntimeError",
        "RuntimeError",
        "timeout",
        "once",
        "UnrecoverableError",
        "s1",
        "s2",
        "p0",
        "p1",
        "p2",
        "RuntimeError",
    ]
    assert calls == {
        "fail-a": 3,
        "fail-b": 3,
        "timeout": 2,
        "once": 2,
        "unrecoverable": 1,
        "s1": 1,
        "s2": 1,
        "p0": 1,
        "p1": 1,
        "p2": 1,
        "plain-fail": 1,
    }

    assert counters(metrics["flaky"]) == {
        "submitted": 8,
        "started": 13,
        "completed": 4,
        "failed": 3,
        "timed_out": 1,
        "retried": 6,
        "dead_lettered": 3,
        "cancelled": 1,
    }
    assert counters(metrics["plain"]) == {
        "submitted": 4,
        "started": 4,
        "completed": 3,
        "failed": 1,
        "timed_out": 0,
        "retried": 0,
        "dead_lettered": 1,
        "cancelled": 0,
    }
    assert counters(metrics["unused"]) == dict.fromkeys(COUNTERS, 0)
    # Every attempt that ran has a latency and a queue-wait sample.
    assert metrics["flaky"]["latency"]["count"] == 13
    assert metrics["flaky"]["queue_wait"]["count"] == 13
    assert metrics["plain"]["latency"]["count"] == 4
    assert metrics["unused"]["latency"]["count"] == 0


async def test_latency_percentiles_follow_command_durations() -> None:
    m = QueueManager([LaneConfig("work", 0, max_concurrency=20), LaneConfig("other", 1)])

    async def sleep_for(seconds: float) -> None:
        await asyncio.sleep(seconds)

    try:
        handles = [m.submit_nowait("work", sleep_for, 0.01) for _ in range(10)]
        handles += [m.submit_nowait("work", sleep_for, 0.05) for _ in range(10)]
        await asyncio.wait_for(asyncio.gather(*handles), WAIT)
        metrics = m.metrics()
    finally:
        await m.close()

    latency = metrics["work"]["latency"]
    assert latency["count"] == 20
    assert 0.005 <= latency["p50"] <= 0.04
    assert latency["p99"] >= 0.045
    assert latency["p90"] >= 0.045  # 18th of 20 samples: one of the 50 ms commands
    assert latency["p50"] <= latency["p90"] <= latency["p95"] <= latency["p99"]

    wait = metrics["work"]["queue_wait"]
    assert wait["count"] == 20
    for name in ("p50", "p90", "p95", "p99"):
        assert wait[name] >= 0
    assert wait["p50"] <= wait["p90"] <= wait["p95"] <= wait["p99"]

    assert metrics["other"]["latency"]["count"] == 0
    assert metrics["other"]["queue_wait"]["count"] == 0


async def test_stats_report_pending_active_and_retrying() -> None:
    held_lane = LaneConfig("held", 0, max_concurrency=2)
    retry_lane = LaneConfig(
        "retry", 1, min_concurrency=0, max_concurrency=1, retry=RetryPolicy.fixed(1, 1.0)
    )
    m = QueueManager([held_lane, retry_lane])
    gate = asyncio.Event()
    retry_calls = 0

    async def held() -> None:
        await gate.wait()

    async def fail_then_hold() -> None:
        nonlocal retry_calls
        retry_calls += 1
        if retry_calls == 1:
            raise RuntimeError("first attempt fails")
        await gate.wait()

    try:
        handles = [m.submit_nowait("held", held) for _ in range(4)]
        handles.append(m.submit_nowait("retry", fail_then_hold))
        await wait_until(lambda: m.stats()["retry"]["retrying"] == 1, "the retry to be scheduled")
        stats = m.stats()
        assert stats == {
            "held": {
                "priority": 0,
                "pending": 2,
                "active": 2,
                "retrying": 0,
                "min_concurrency": 1,
                "max_concurrency": 2,
            },
            "retry": {
                "priority": 1,
                "pending": 0,
                "active": 0,
                "retrying": 1,
                "min_concurrency": 0,
                "max_concurrency": 1,
            },
        }
        assert m.in_flight == 5
        # After the backoff the retry runs (and is held like the others).
        await wait_until(lambda: m.stats()["retry"]["active"] == 1, "the retry to start")
        assert m.stats()["retry"]["retrying"] == 0
        gate.set()
        await asyncio.wait_for(asyncio.gather(*handles), WAIT)
        await m.drain(WAIT)
        after = m.stats()
    finally:
        await m.close()

    assert retry_calls == 2
    for lane_id in ("held", "retry"):
        assert after[lane_id]["pending"] == 0
        assert after[lane_id]["active"] == 0
        assert after[lane_id]["retrying"] == 0


async def test_queue_depth_alerts_fire_warning_then_critical_once() -> None:
    m = QueueManager(
        [LaneConfig("work", 0, max_concurrency=1), LaneConfig("quiet", 1)],
        alerts=AlertConfig(queue_depth_warning=2, queue_depth_critical=4),
    )
    alerts: list[Alert] = []
    m.on_alert(alerts.append)
    sub = m.events("queue.alert")
    gate = asyncio.Event()
    started = asyncio.Event()

    async def blocker() -> None:
        started.set()
        await gate.wait()

    try:
        first = m.submit_nowait("work", blocker)
        await asyncio.wait_for(started.wait(), WAIT)
        assert alerts == []
        queued = [m.submit_nowait("work", ok) for _ in range(2)]  # pending 1, 2
        assert alerts == [Alert("work", "queue_depth", "warning", 2.0, 2)]
        queued += [m.submit_nowait("work", ok) for _ in range(2)]  # pending 3, 4
        assert m.stats()["work"]["pending"] == 4
        gate.set()
        await asyncio.wait_for(asyncio.gather(first, *queued), WAIT)
        await m.drain(WAIT)
        sub.close()
        events = [event async for event in sub]
    finally:
        await m.close()

    assert alerts == [
        Alert("work", "queue_depth", "warning", 2.0, 2),
        Alert("work", "queue_depth", "critical", 4.0, 4),
    ]
    assert [alert.message for alert in alerts] == [
        "lane 'work': 2 commands waiting (warning at 2)",
        "lane 'work': 4 commands waiting (critical at 4)",
    ]
    assert [e.payload for e in events] == [
        {
            "lane_id": "work",
            "kind": "queue_depth",
            "level": "warning",
            "value": 2.0,
            "threshold": 2,
            "message": "lane 'work': 2 commands waiting (warning at 2)",
        },
        {
            "lane_id": "work",
            "kind": "queue_depth",
            "level": "critical",
            "value": 4.0,
            "threshold": 4,
            "message": "lane 'work': 4 commands waiting (critical at 4)",
        },
    ]


async def test_latency_warning_fires_for_a_slow_command() -> None:
    m = QueueManager([LaneConfig("work", 0)], alerts=AlertConfig(latency_warning=0.02))
    alerts: list[Alert] = []
    m.on_alert(alerts.append)

    async def slow() -> None:
        await asyncio.sleep(0.05)

    try:
        await asyncio.wait_for(m.submit("work", ok), WAIT)
        assert alerts == []  # a fast command raises nothing
        await asyncio.wait_for(m.submit("work", slow), WAIT)
    finally:
        await m.close()

    assert len(alerts) == 1
    (alert,) = alerts
    assert (alert.lane_id, alert.kind, alert.level) == ("work", "latency", "warning")
    assert alert.value >= 0.045
    assert alert.threshold == pytest.approx(0.02)
    assert alert.message == f"lane 'work': a command ran {alert.value:.3g}s (warning at 0.02s)"


def test_an_alert_says_what_crossed_in_words() -> None:
    one = Alert("prompt", "queue_depth", "warning", 1.0, 1)
    assert one.message == "lane 'prompt': 1 command waiting (warning at 1)"
    many = Alert("prompt", "queue_depth", "critical", 12.0, 10)
    assert many.message == "lane 'prompt': 12 commands waiting (critical at 10)"
    slow = Alert("query", "latency", "critical", 2.5, 2.0)
    assert slow.message == "lane 'query': a command ran 2.5s (critical at 2s)"
    # An alert made by hand without its threshold still reads.
    bare = Alert("q", "queue_depth", "warning", 3.0)
    assert bare.message == "lane 'q': 3 commands waiting (warning)"


async def test_async_alert_callback_is_awaited() -> None:
    m = QueueManager(
        [LaneConfig("work", 0, max_concurrency=1)],
        alerts=AlertConfig(queue_depth_warning=1, latency_warning=0.02),
    )
    received: list[Alert] = []

    async def callback(alert: Alert) -> None:
        await asyncio.sleep(0.001)
        received.append(alert)

    async def slow() -> None:
        await asyncio.sleep(0.05)

    m.on_alert(callback)
    try:
        await asyncio.wait_for(m.submit("work", slow), WAIT)
        await wait_until(lambda: len(received) == 2, "both alerts to reach the callback")
    finally:
        await m.close()

    assert [(a.lane_id, a.kind, a.level) for a in received] == [
        ("work", "queue_depth", "warning"),
        ("work", "latency", "warning"),
    ]
    assert received[0].value == 1.0
    assert received[1].value >= 0.045


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"queue_depth_warning": 5, "queue_depth_critical": 2}, "queue_depth_critical"),
        ({"latency_warning": 1.0, "latency_critical": 0.5}, "latency_critical"),
        ({"queue_depth_warning": -1}, "queue_depth_warning"),
        ({"queue_depth_critical": -3}, "queue_depth_critical"),
        ({"latency_warning": -0.1}, "latency_warning"),
        ({"latency_critical": -2.0}, "latency_critical"),
    ],
)
def test_invalid_alert_config_raises_config_error(options: dict[str, Any], field: str) -> None:
    with pytest.raises(ConfigError, match=field) as info:
        AlertConfig(**options)
    assert isinstance(info.value, ValueError)


def test_valid_alert_config_keeps_its_values() -> None:
    config = AlertConfig(queue_depth_warning=2, queue_depth_critical=2, latency_warning=0.02)
    assert config.queue_depth_warning == 2
    assert config.queue_depth_critical == 2
    assert config.latency_warning == pytest.approx(0.02)
    assert config.latency_critical is None
