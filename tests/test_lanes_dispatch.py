"""Dispatch behaviour of `QueueManager`: default lanes, priority order, per-lane and global
concurrency limits, min_concurrency reservations, rate limits, priority boost, FIFO order,
command kinds and configuration validation."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable

import pytest
from lanemq import (
    ConfigError,
    LaneConfig,
    PriorityBoost,
    QueueManager,
    RateLimit,
    UnknownLaneError,
)
from support import collect, wait_until

# --------------------------------------------------------------------------- helpers


class Gauge:
    """Counts commands running at once and remembers the peak."""

    def __init__(self) -> None:
        self.current = 0
        self.peak = 0
        self.started = 0
        self.finished = 0

    def enter(self) -> None:
        self.current += 1
        self.started += 1
        self.peak = max(self.peak, self.current)

    def leave(self) -> None:
        self.current -= 1
        self.finished += 1


# ------------------------------------------------------------------- default lanes


async def test_default_lanes_ids_priorities_and_concurrency() -> None:
    m = QueueManager.with_default_lanes()
    try:
        expected = {
            "system": (0, 5),
            "control": (1, 3),
            "query": (2, 10),
            "session": (3, 5),
            "skill": (4, 3),
            "prompt": (5, 2),
        }
        assert m.lane_ids == list(expected)
        stats = m.stats()
        assert list(stats) == list(expected)
        for lane_id, (priority, max_concurrency) in expected.items():
            lane = stats[lane_id]
            assert lane["priority"] == priority, lane_id
            assert lane["max_concurrency"] == max_concurrency, lane_id
            assert lane["min_concurrency"] == 1, lane_id
            assert lane["pending"] == 0
            assert lane["active"] == 0
            assert lane["retrying"] == 0
    finally:
        await m.close()


# ---------------------------------------------------------------------- precedence


async def test_higher_priority_lane_starts_first() -> None:
    m = QueueManager.with_default_lanes(autostart=False)
    order: list[str] = []

    async def record(name: str) -> str:
        order.append(name)
        await asyncio.sleep(0)
        return name

    try:
        low = m.submit_nowait("prompt", record, "prompt")
        high = m.submit_nowait("control", record, "control")
        await asyncio.sleep(0.05)
        assert order == [], "autostart=False must not run anything before start()"
        assert m.stats()["prompt"]["pending"] == 1
        assert m.stats()["control"]["pending"] == 1
        await m.start()
        assert await low == "prompt"
        assert await high == "control"
        assert order == ["control", "prompt"]
    finally:
        await m.close()


async def test_busy_high_lane_does_not_block_lower_lane() -> None:
    m = QueueManager.with_default_lanes()
    release = asyncio.Event()
    control_running = 0

    async def hold() -> None:
        nonlocal control_running
        control_running += 1
        try:
            await release.wait()
        finally:
            control_running -= 1

    async def prompt_work() -> str:
        return "prompt done"

    try:
        held = [m.submit_nowait("control", hold) for _ in range(5)]
        await wait_until(lambda: control_running == 3)
        assert m.stats()["control"]["active"] == 3
        assert m.stats()["control"]["pending"] == 2
        result = await asyncio.wait_for(m.submit("prompt", prompt_work), 5.0)
        assert result == "prompt done"
        # The control commands were still blocked while the prompt command ran.
        assert control_running == 3
        assert not any(h.done() for h in held)
        release.set()
        for h in held:
            await h
    finally:
        release.set()
        await m.close()


# ------------------------------------------------------------------- concurrency caps


async def test_lane_max_concurrency_never_exceeded() -> None:
    # A second, wide lane gives the manager many runners, so the limit of 2 on "two" is the
    # scheduler's doing, not a shortage of runners.
    m = QueueManager(
        [LaneConfig("two", 0, max_concurrency=2), LaneConfig("wide", 1, max_concurrency=8)]
    )
    gauge = Gauge()

    async def work(i: int) -> int:
        gauge.enter()
        try:
            await asyncio.sleep(0.1)
        finally:
            gauge.leave()
        return i

    try:
        handles = [m.submit_nowait("two", work, i) for i in range(6)]
        results = [await h for h in handles]
        assert results == list(range(6))
        assert gauge.peak == 2
        assert gauge.finished == 6
        assert m.in_flight == 0
    finally:
        await m.close()


async def test_min_concurrency_reserves_slots_under_global_cap() -> None:
    m = QueueManager(
        [
            LaneConfig("hi", 0, min_concurrency=1, max_concurrency=10),
            LaneConfig("lo", 1, min_concurrency=1, max_concurrency=10),
        ],
        max_concurrency=3,
    )
    release = asyncio.Event()
    hi_gauge = Gauge()
    lo_started = asyncio.Event()

    async def hi_work() -> None:
        hi_gauge.enter()
        try:
            await release.wait()
        finally:
            hi_gauge.leave()

    async def lo_work() -> str:
        lo_started.set()
        return "lo"

    try:
        flood = [m.submit_nowait("hi", hi_work) for _ in range(10)]
        await wait_until(lambda: hi_gauge.current == 2)
        lo = m.submit_nowait("lo", lo_work)
        await asyncio.wait_for(lo_started.wait(), 5.0)
        assert await lo == "lo"
        # "lo" ran while "hi" was still flooded and blocked.
        await asyncio.sleep(0.05)
        assert not any(h.done() for h in flood)
        assert hi_gauge.peak == 2, "one of the 3 global slots is reserved for 'lo'"
        assert m.stats()["hi"]["active"] == 2
        assert m.stats()["hi"]["pending"] == 8
        release.set()
        for h in flood:
            await h
        assert hi_gauge.peak == 2
        assert hi_gauge.finished == 10
    finally:
        release.set()
        await m.close()


async def test_without_global_cap_min_concurrency_changes_nothing() -> None:
    m = QueueManager(
        [
            LaneConfig("hi", 0, min_concurrency=1, max_concurrency=10),
            LaneConfig("lo", 1, min_concurrency=1, max_concurrency=10),
        ]
    )
    release = asyncio.Event()
    hi_gauge = Gauge()

    async def hi_work() -> None:
        hi_gauge.enter()
        try:
            await release.wait()
        finally:
            hi_gauge.leave()

    try:
        flood = [m.submit_nowait("hi", hi_work) for _ in range(12)]
        await wait_until(lambda: hi_gauge.current == 10)
        await asyncio.sleep(0.05)
        assert hi_gauge.peak == 10, "without a global cap 'hi' may use its whole max"
        assert m.stats()["hi"]["active"] == 10
        assert m.stats()["hi"]["pending"] == 2
        release.set()
        for h in flood:
            await h
        assert hi_gauge.finished == 12
    finally:
        release.set()
        await m.close()


# ---------------------------------------------------------------------- unknown lane


async def test_unknown_lane_raises_and_changes_nothing() -> None:
    m = QueueManager.with_default_lanes()
    ran = False

    async def work() -> None:
        nonlocal ran
        ran = True

    try:
        with pytest.raises(UnknownLaneError) as info:
            m.submit_nowait("no-such-lane", work)
        assert isinstance(info.value, LookupError)
        assert "no-such-lane" in str(info.value)
        with pytest.raises(LookupError):
            await m.submit("no-such-lane", work)
        await asyncio.sleep(0.02)
        assert m.in_flight == 0
        assert not ran
        assert all(lane["pending"] == 0 for lane in m.stats().values())
        assert all(lane["submitted"] == 0 for lane in m.metrics().values())
    finally:
        await m.close()


# ------------------------------------------------------------------------ validation


@pytest.mark.parametrize(
    ("make", "field"),
    [
        (lambda: LaneConfig("a", 0, min_concurrency=3, max_concurrency=2), "max_concurrency"),
        (lambda: LaneConfig("a", 0, min_concurrency=0, max_concurrency=0), "max_concurrency"),
        (lambda: LaneConfig("", 0), "lane_id"),
        (lambda: LaneConfig("a", 0, timeout=-1.0), "timeout"),
        (lambda: LaneConfig("a", -1), "priority"),
        (
            lambda: QueueManager([LaneConfig("dup", 0), LaneConfig("dup", 1)]),
            "lane_id",
        ),
        (
            lambda: QueueManager(
                [LaneConfig("a", 0, min_concurrency=2, max_concurrency=2)], max_concurrency=1
            ),
            "max_concurrency",
        ),
    ],
    ids=[
        "max_below_min",
        "max_below_one",
        "empty_id",
        "negative_timeout",
        "negative_priority",
        "duplicate_ids",
        "global_cap_below_reserved",
    ],
)
def test_invalid_config_raises_config_error_naming_field(
    make: Callable[[], object], field: str
) -> None:
    with pytest.raises(ConfigError) as info:
        make()
    assert isinstance(info.value, ValueError)
    assert field in str(info.value)


@pytest.mark.parametrize(
    ("options", "fragment"),
    [
        ({"priority": 1.5}, "invalid priority: 1.5 (must be an integer)"),
        ({"priority": "1"}, "invalid priority: '1' (must be an integer)"),
        ({"max_concurrency": True}, "invalid max_concurrency: True (must be an integer, not"),
        ({"priority": 0, "timeout": "5"}, "invalid timeout: '5' (must be a number of seconds)"),
    ],
)
def test_a_lane_option_of_the_wrong_type_is_a_config_error_naming_it(
    options: dict[str, object], fragment: str
) -> None:
    arguments = {"priority": 0, **options}
    with pytest.raises(ConfigError) as refused:
        LaneConfig("a", **arguments)  # type: ignore[arg-type]
    assert fragment in str(refused.value)


@pytest.mark.parametrize("timeout", [0.0, -1.0, float("inf")])
def test_a_refused_lane_timeout_says_what_is_allowed(timeout: float) -> None:
    # Zero is refused, so the message must not say ">= 0".
    with pytest.raises(
        ConfigError, match=r"invalid timeout: .* \(must be a finite number of seconds > 0\)"
    ):
        LaneConfig("a", 0, timeout=timeout)


def test_max_below_min_message_names_both_fields() -> None:
    with pytest.raises(ValueError) as info:
        LaneConfig("a", 0, min_concurrency=3, max_concurrency=2)
    assert isinstance(info.value, ConfigError)
    assert "min_concurrency" in str(info.value)
    assert "max_concurrency" in str(info.value)


# ------------------------------------------------------------------------ rate limit


async def test_rate_limit_spaces_starts() -> None:
    m = QueueManager([LaneConfig("r", 0, max_concurrency=2, rate_limit=RateLimit.per_second(1))])
    starts: list[float] = []

    async def work(i: int) -> int:
        starts.append(time.monotonic())
        return i

    try:
        first = m.submit_nowait("r", work, 1)
        second = m.submit_nowait("r", work, 2)
        assert await first == 1
        assert await asyncio.wait_for(second, 10.0) == 2
        assert len(starts) == 2
        gap = starts[1] - starts[0]
        assert 0.8 <= gap < 2.5, gap
    finally:
        await m.close()


# -------------------------------------------------------------------- priority boost


async def _boost_race(boost: PriorityBoost | None) -> list[str]:
    """One global slot. A gate command holds it; an old "lo" command and, later, a new "hi"
    command wait for it. Returns the order in which "lo" and "hi" start."""
    m = QueueManager(
        [
            LaneConfig("gate", 0, min_concurrency=0, max_concurrency=1),
            LaneConfig("hi", 1, min_concurrency=0, max_concurrency=1),
            LaneConfig("lo", 2, min_concurrency=0, max_concurrency=1, priority_boost=boost),
        ],
        max_concurrency=1,
    )
    gate_started = asyncio.Event()
    release = asyncio.Event()
    order: list[str] = []

    async def gate() -> None:
        gate_started.set()
        await release.wait()

    async def record(name: str) -> None:
        order.append(name)

    try:
        held = m.submit_nowait("gate", gate)
        await asyncio.wait_for(gate_started.wait(), 5.0)
        lo = m.submit_nowait("lo", record, "lo")
        # "lo" waits well past its 0.2 s deadline: boost 3, effective priority 0 < 1.
        await asyncio.sleep(0.3)
        hi = m.submit_nowait("hi", record, "hi")
        assert order == []
        release.set()
        await held
        await lo
        await hi
        return order
    finally:
        release.set()
        await m.close()


async def test_priority_boost_lets_old_low_lane_command_overtake() -> None:
    assert await _boost_race(PriorityBoost.standard(0.2)) == ["lo", "hi"]


async def test_without_priority_boost_newer_high_lane_command_goes_first() -> None:
    assert await _boost_race(None) == ["hi", "lo"]


# ---------------------------------------------------------------------------- FIFO


async def test_fifo_within_lane() -> None:
    m = QueueManager([LaneConfig("a", 0, max_concurrency=1)], autostart=False)
    order: list[int] = []

    async def record(i: int) -> int:
        order.append(i)
        await asyncio.sleep(0)
        return i

    try:
        handles = [m.submit_nowait("a", record, i) for i in range(20)]
        await m.start()
        assert [await h for h in handles] == list(range(20))
        assert order == list(range(20))
    finally:
        await m.close()


async def test_fifo_within_lane_while_running() -> None:
    m = QueueManager([LaneConfig("a", 0, max_concurrency=1)])
    order: list[int] = []

    async def record(i: int) -> None:
        order.append(i)
        await asyncio.sleep(0.002)

    try:
        handles = []
        for i in range(15):
            handles.append(m.submit_nowait("a", record, i))
            if i % 4 == 0:
                await asyncio.sleep(0.003)
        for h in handles:
            await h
        assert order == list(range(15))
    finally:
        await m.close()


# -------------------------------------------------------------------- command kinds


class Greet:
    command_type = "greet"

    def __init__(self, name: str) -> None:
        self.name = name
        self.loop_thread: int | None = None

    async def execute(self) -> str:
        self.loop_thread = threading.get_ident()
        await asyncio.sleep(0)
        return f"hello {self.name}"


async def test_plain_callable_runs_in_worker_thread() -> None:
    m = QueueManager([LaneConfig("a", 0, max_concurrency=2)])
    loop_thread = threading.get_ident()

    def blocking(x: int) -> tuple[int, int]:
        time.sleep(0.01)
        return threading.get_ident(), x * 2

    try:
        thread_id, value = await m.submit("a", blocking, 21)
        assert value == 42
        assert thread_id != loop_thread
    finally:
        await m.close()


async def test_command_object_with_execute_and_command_type() -> None:
    m = QueueManager([LaneConfig("a", 0, max_concurrency=2)])
    sub = m.events("queue.command.started", "queue.command.completed")
    command = Greet("world")
    try:
        handle = m.submit_nowait("a", command)
        assert handle.command_type == "greet"
        assert handle.lane_id == "a"
        assert await handle == "hello world"
        # An async execute() runs on the event loop, not in a worker thread.
        assert command.loop_thread == threading.get_ident()
        events = await collect(sub)
        started = [e for e in events if e.key == "queue.command.started"]
        assert len(started) == 1
        assert started[0].payload["command_type"] == "greet"
        assert started[0].payload["command_id"] == handle.id
        assert started[0].payload["lane_id"] == "a"
        assert started[0].payload["attempt"] == 1
        completed = [e for e in events if e.key == "queue.command.completed"]
        assert [e.payload["command_type"] for e in completed] == ["greet"]
    finally:
        await m.close()


async def test_non_callable_without_execute_is_rejected() -> None:
    m = QueueManager([LaneConfig("a", 0)])

    class NotACommand:
        execute = "not callable"

    try:
        with pytest.raises(TypeError):
            m.submit_nowait("a", 42)
        with pytest.raises(TypeError):
            m.submit_nowait("a", object())
        with pytest.raises(TypeError):
            m.submit_nowait("a", NotACommand())
        assert m.in_flight == 0
        assert m.stats()["a"]["pending"] == 0
    finally:
        await m.close()


def test_old_core_class_name_is_the_dispatcher() -> None:
    # The lanes' dispatcher was once `LaneScheduler`; code that imported that name from
    # lanemq._core still gets the same class, and it still dispatches.
    from lanemq._core import LaneDispatcher, LaneScheduler

    assert LaneScheduler is LaneDispatcher
    core = LaneScheduler([LaneConfig("only", priority=0, max_concurrency=1)])
    core.push(0, "handle")
    assert core.pop() == "handle"
