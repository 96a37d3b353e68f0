"""The QueueManager's event stream: order, filters, lane signals, lag reporting, shutdown."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from lanemq import (
    CommandTimeoutError,
    Event,
    LaneConfig,
    QueueManager,
    RetryPolicy,
    Subscription,
)
from support import collect

WAIT = 5.0  # upper bound for anything awaited in a test; never reached when things work


async def ping() -> str:
    return "pong"


async def next_event(sub: Subscription) -> Event:
    return await asyncio.wait_for(anext(sub), WAIT)


def keys(events: list[Event]) -> list[str]:
    return [event.key for event in events]


async def test_success_emits_submitted_started_completed_in_order() -> None:
    m = QueueManager([LaneConfig("work", 0, max_concurrency=2)])
    sub = m.events()
    try:
        handle = m.submit_nowait("work", ping)
        assert await asyncio.wait_for(handle, WAIT) == "pong"
        events = await collect(sub)
    finally:
        await m.close()

    assert keys(events) == [
        "queue.command.submitted",
        "queue.command.started",
        "queue.command.completed",
    ]
    for event in events:
        assert event.payload["command_id"] == handle.id
        assert event.payload["lane_id"] == "work"
        assert event.payload["command_type"] == "ping"
        # Milliseconds since the epoch, as job events and job fields.
        assert isinstance(event.timestamp, int)
        assert abs(event.timestamp - time.time() * 1000) < 60_000
    assert events[1].payload["attempt"] == 1
    assert events[0].timestamp <= events[1].timestamp <= events[2].timestamp


async def test_filtered_subscriptions_see_only_their_keys() -> None:
    m = QueueManager([LaneConfig("work", 0, max_concurrency=1, pressure_threshold=1)])
    completed = m.events("queue.command.completed")
    lane = m.events("queue.lane.*")
    everything = m.events()
    try:
        handles = [m.submit_nowait("work", ping) for _ in range(3)]
        await asyncio.wait_for(asyncio.gather(*handles), WAIT)
        await m.drain(WAIT)
        completed_events = await collect(completed)
        lane_events = await collect(lane)
        all_events = await collect(everything)
    finally:
        await m.close()

    assert keys(completed_events) == ["queue.command.completed"] * 3
    assert [e.payload["command_id"] for e in completed_events] == [h.id for h in handles]

    assert lane_events, "the prefix filter saw no lane event"
    assert all(e.key.startswith("queue.lane.") for e in lane_events)
    assert {e.key for e in lane_events} == {"queue.lane.pressure", "queue.lane.idle"}
    # The filters dropped nothing they match: they equal the unfiltered stream, filtered.
    assert lane_events == [e for e in all_events if e.key.startswith("queue.lane.")]
    assert completed_events == [e for e in all_events if e.key == "queue.command.completed"]
    assert any(e.key == "queue.command.started" for e in all_events)


async def test_pressure_fires_once_and_idle_once_when_the_lane_empties() -> None:
    m = QueueManager([LaneConfig("work", 0, max_concurrency=1, pressure_threshold=2)])
    sub = m.events("queue.lane.*")
    gate = asyncio.Event()
    blocker_started = asyncio.Event()

    async def blocker() -> None:
        blocker_started.set()
        await gate.wait()

    try:
        first = m.submit_nowait("work", blocker)
        await asyncio.wait_for(blocker_started.wait(), WAIT)
        queued = [m.submit_nowait("work", ping) for _ in range(3)]  # pending: 1, 2, 3
        assert m.stats()["work"]["pending"] == 3
        before_release = await next_event(sub)
        gate.set()
        await asyncio.wait_for(asyncio.gather(first, *queued), WAIT)
        await m.drain(WAIT)
        events = [before_release, *(await collect(sub))]
    finally:
        await m.close()

    assert keys(events) == ["queue.lane.pressure", "queue.lane.idle"]
    pressure, idle = events
    assert pressure.payload["lane_id"] == "work"
    assert pressure.payload["pending"] >= 2
    assert idle.payload == {"lane_id": "work"}


async def test_slow_subscriber_gets_lagged_event_in_place_of_dropped_events() -> None:
    m = QueueManager([LaneConfig("work", 0, max_concurrency=4)])
    slow = m.events("queue.command.completed", buffer=5)
    reference = m.events("queue.command.completed")
    try:
        for i in range(20):
            assert await asyncio.wait_for(m.submit("work", ping), WAIT) == "pong", i

        head = [await next_event(slow) for _ in range(5)]
        lagged = await next_event(slow)

        later = [m.submit_nowait("work", ping) for _ in range(3)]
        await asyncio.wait_for(asyncio.gather(*later), WAIT)
        tail = [await next_event(slow) for _ in range(3)]
        leftover = await collect(slow)
        expected = await collect(reference)
    finally:
        await m.close()

    assert len(expected) == 23
    # The 5 that fit come first, unchanged and in order.
    assert head == expected[:5]
    # Then one lagged event counting exactly the dropped ones.
    assert lagged.key == "queue.events.lagged"
    assert lagged.payload == {"missed": 15}
    # Later events arrive normally.
    assert tail == expected[20:]
    assert [e.payload["command_id"] for e in tail] == [h.id for h in later]
    assert leftover == []
    # No silent loss.
    assert len(head) + lagged.payload["missed"] + len(tail) == len(expected)


async def test_unfiltered_slow_subscriber_accounts_for_every_event() -> None:
    m = QueueManager([LaneConfig("work", 0, max_concurrency=3)])
    slow = m.events(buffer=5)
    reference = m.events()
    try:
        handles = [m.submit_nowait("work", ping) for _ in range(10)]
        await asyncio.wait_for(asyncio.gather(*handles), WAIT)
        got = await collect(slow)
        emitted = await collect(reference)
    finally:
        await m.close()

    assert len(emitted) == 30  # submitted + started + completed for each
    delivered = [e for e in got if e.key != "queue.events.lagged"]
    missed = sum(e.payload["missed"] for e in got if e.key == "queue.events.lagged")
    assert delivered == emitted[:5]
    assert keys(got) == [*keys(emitted[:5]), "queue.events.lagged"]
    assert len(delivered) + missed == len(emitted)


async def test_closing_the_manager_ends_iteration() -> None:
    m = QueueManager([LaneConfig("work", 0)])
    sub = m.events()
    seen: list[Event] = []

    async def consume() -> None:
        async for event in sub:
            seen.append(event)

    consumer = asyncio.create_task(consume())
    await asyncio.wait_for(m.submit("work", ping), WAIT)
    await asyncio.sleep(0.01)
    assert not consumer.done()  # iteration waits for more while the manager is open
    await m.close()
    await asyncio.wait_for(consumer, WAIT)  # ... and stops once it is closed
    assert "queue.command.completed" in keys(seen)


async def test_failure_events_carry_attempt_and_error() -> None:
    lane = LaneConfig("work", 0, timeout=0.1, retry=RetryPolicy.fixed(2, 0.01))
    m = QueueManager([lane])
    sub = m.events()
    attempts = 0

    async def flaky() -> None:
        nonlocal attempts
        attempts += 1
        if attempts == 1:
            await asyncio.sleep(WAIT)  # times out
        raise RuntimeError(f"boom {attempts}")

    try:
        handle = m.submit_nowait("work", flaky)
        try:
            await asyncio.wait_for(handle, WAIT)
        except RuntimeError as error:
            assert str(error) == "boom 3"
        else:
            raise AssertionError("the command should have failed")
        events = await collect(sub)
    finally:
        await m.close()

    assert attempts == 3
    assert keys(events) == [
        "queue.command.submitted",
        "queue.command.started",
        "queue.command.timeout",
        "queue.command.retry",
        "queue.command.started",
        "queue.command.retry",
        "queue.command.started",
        "queue.command.dead_lettered",
        "queue.command.failed",
    ]
    by_key: dict[str, list[dict[str, Any]]] = {}
    for event in events:
        assert event.payload["command_id"] == handle.id
        assert event.payload["lane_id"] == "work"
        assert event.payload["command_type"] == handle.command_type
        by_key.setdefault(event.key, []).append(event.payload)

    assert [p["attempt"] for p in by_key["queue.command.started"]] == [1, 2, 3]

    (timeout,) = by_key["queue.command.timeout"]
    assert timeout["attempt"] == 1
    assert timeout["error"].startswith(f"{CommandTimeoutError.__name__}: ")

    first_retry, second_retry = by_key["queue.command.retry"]
    assert first_retry["attempt"] == 1
    assert first_retry["error"] == timeout["error"]
    assert second_retry["attempt"] == 2
    assert second_retry["error"] == "RuntimeError: boom 2"
    for retry in (first_retry, second_retry):
        assert abs(retry["delay"] - 0.01) < 1e-6

    for key in ("queue.command.dead_lettered", "queue.command.failed"):
        (final,) = by_key[key]
        assert final["attempt"] == 3
        assert final["error"] == "RuntimeError: boom 3"
