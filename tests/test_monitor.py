"""`LaneMonitor` and `QueueMonitor` on real managers and queues: an alert when a lane's (or
queue's) value reaches its threshold, one for a total, one ``resolved`` alert when it falls
back, none repeated while it stays; plain and async callbacks, a callback that raises, the
readings with their totals, and bad input. Alerts are awaited, never timed."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from lanemq import ConfigError, InMemoryJobQueue, LaneConfig, QueueManager, RedisJobQueue
from lanemq.monitor import TOTAL, LaneMonitor, MonitorAlert, QueueMonitor

WAIT = 10.0  # upper bound for an alert to arrive (polls are 1 s apart); never reached


class Alerts:
    """Collects alerts; `next` awaits the next one not yet taken."""

    def __init__(self) -> None:
        self.seen: list[MonitorAlert] = []
        self._taken = 0
        self._arrived = asyncio.Event()

    def __call__(self, alert: MonitorAlert) -> None:
        self.seen.append(alert)
        self._arrived.set()

    async def next(self) -> MonitorAlert:
        while self._taken >= len(self.seen):
            self._arrived.clear()
            await asyncio.wait_for(self._arrived.wait(), WAIT)
        self._taken += 1
        return self.seen[self._taken - 1]


async def ok() -> str:
    return "ok"


@pytest.fixture
async def manager() -> AsyncIterator[QueueManager]:
    made = QueueManager([LaneConfig("a", 0), LaneConfig("b", 1)], autostart=False)
    try:
        yield made
    finally:
        await made.close()


async def test_a_lane_over_its_threshold_alerts_once_and_resolves(
    manager: QueueManager,
) -> None:
    alerts = Alerts()
    handles = [manager.submit_nowait("a", ok) for _ in range(3)]
    monitor = LaneMonitor(manager, interval=1.0, pending_warning=3, on_alert=alerts)
    async with monitor:
        alert = await alerts.next()
        assert (alert.source, alert.kind, alert.value, alert.threshold) == ("a", "pending", 3, 3)
        assert not alert.resolved
        assert alert.message == "lane 'a': 3 commands pending (warning at 3)"
        await manager.start()
        await asyncio.gather(*handles)
        resolved = await alerts.next()
    assert (resolved.source, resolved.kind, resolved.value, resolved.resolved) == (
        "a",
        "pending",
        0,
        True,
    )
    assert resolved.message == "lane 'a': 0 commands pending, back below 3"
    assert len(alerts.seen) == 2  # not once per poll
    assert monitor.last is not None and monitor.last.totals == {"pending": 0, "active": 0}


async def test_totals_across_lanes_and_running_commands(manager: QueueManager) -> None:
    release = asyncio.Event()
    started = 0

    async def hold() -> None:
        nonlocal started
        started += 1
        await release.wait()

    alerts = Alerts()
    for lane in ("a", "b"):
        manager.submit_nowait(lane, ok)
        manager.submit_nowait(lane, ok)
    monitor = LaneMonitor(
        manager, interval=1.0, pending_warning=5, total_pending_warning=4, on_alert=alerts
    )
    async with monitor:
        total = await alerts.next()
        assert (total.source, total.kind, total.value, total.threshold) == (TOTAL, "pending", 4, 4)
        assert total.message == "all lanes: 4 commands pending (warning at 4)"
        assert monitor.last is not None
        assert monitor.last.values == {
            "a": {"pending": 2, "active": 0},
            "b": {"pending": 2, "active": 0},
        }
    assert len(alerts.seen) == 1  # no lane reached 5 on its own

    busy = Alerts()
    holding = [manager.submit_nowait("a", hold) for _ in range(2)]
    await manager.start()
    async with LaneMonitor(manager, interval=1.0, active_warning=1, on_alert=busy):
        alert = await busy.next()
    assert (alert.source, alert.kind, alert.value) == ("a", "active", 1)
    release.set()
    await asyncio.gather(*holding)


async def test_a_raising_callback_does_not_stop_the_others(manager: QueueManager) -> None:
    calls: list[str] = []

    def broken(alert: MonitorAlert) -> None:
        calls.append("broken")
        raise RuntimeError("pager down")

    arrived = asyncio.Event()

    async def async_callback(alert: MonitorAlert) -> None:
        await asyncio.sleep(0)
        calls.append(alert.kind)
        arrived.set()

    manager.submit_nowait("b", ok)
    monitor = LaneMonitor(manager, interval=1.0, pending_warning=1, on_alert=broken)
    monitor.on_alert(async_callback)
    async with monitor:
        await asyncio.wait_for(arrived.wait(), WAIT)
        assert monitor.running
    assert not monitor.running
    assert calls == ["broken", "pending"]


async def test_check_reads_once_and_returns_its_alerts(manager: QueueManager) -> None:
    monitor = LaneMonitor(manager, pending_warning=1)
    assert await monitor.check() == []
    manager.submit_nowait("a", ok)
    [alert] = await monitor.check()
    assert (alert.source, alert.value) == ("a", 1)
    assert await monitor.check() == []  # still over: not alerted again


async def test_a_queue_over_its_threshold_alerts() -> None:
    emails = InMemoryJobQueue("emails")
    reports = InMemoryJobQueue("reports")
    for i in range(3):
        await emails.add("send", i)
    await reports.add("build", None)
    alerts = Alerts()
    monitor = QueueMonitor(
        [emails, reports],
        interval=1.0,
        waiting_warning=3,
        total_waiting_warning=4,
        on_alert=alerts,
    )
    async with monitor:
        first, second = await alerts.next(), await alerts.next()
        assert {(a.source, a.kind, a.value) for a in (first, second)} == {
            ("emails", "waiting", 3),
            (TOTAL, "waiting", 4),
        }
        assert "queue 'emails': 3 jobs waiting (warning at 3)" in {first.message, second.message}
        await emails.drain()
        resolved = {(a.source, a.resolved) for a in (await alerts.next(), await alerts.next())}
    assert resolved == {("emails", True), (TOTAL, True)}
    assert monitor.last is not None
    assert monitor.last.values["reports"] == {"waiting": 1, "active": 0}


async def test_an_unreadable_queue_is_left_out_and_the_others_still_read() -> None:
    unreachable = RedisJobQueue("nowhere", "redis://127.0.0.1:1/0", connect_timeout=0.5)
    fine = InMemoryJobQueue("fine")
    await fine.add("x", None)
    monitor = QueueMonitor([unreachable, fine], waiting_warning=1)
    [alert] = await monitor.check()
    assert alert.source == "fine"
    assert monitor.last is not None and set(monitor.last.values) == {"fine"}


async def test_bad_input_is_refused_naming_it(manager: QueueManager) -> None:
    with pytest.raises(ConfigError, match=r"interval: 0\.5"):
        LaneMonitor(manager, interval=0.5)
    with pytest.raises(ConfigError, match="pending_warning: 0"):
        LaneMonitor(manager, pending_warning=0)
    with pytest.raises(ConfigError, match="waiting_warning: 'many'"):
        QueueMonitor(InMemoryJobQueue("q"), waiting_warning="many")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="two queues named 'q'"):
        QueueMonitor([InMemoryJobQueue("q"), InMemoryJobQueue("q")])
    with pytest.raises(TypeError, match="not a QueueManager"):
        LaneMonitor("manager")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="on_alert must be callable"):
        LaneMonitor(manager, on_alert="pager")  # type: ignore[arg-type]
