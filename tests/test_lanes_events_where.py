"""`QueueManager.events(..., where=...)`: a predicate filters events as well as the keys do,
before they take buffer room; a predicate that raises ends that subscription only, after the
events it had kept, and the manager goes on."""

from __future__ import annotations

import pytest
from lanemq import Event, LaneConfig, QueueManager
from support import collect

LANES = [LaneConfig("a", 0), LaneConfig("b", 1)]


async def ok() -> str:
    return "ok"


def lane_of(event: Event) -> str | None:
    lane: str | None = event.payload.get("lane_id")
    return lane


async def test_where_keeps_only_the_events_it_accepts() -> None:
    async with QueueManager(LANES) as manager:
        in_b = manager.events(where=lambda event: lane_of(event) == "b")
        b_completed = manager.events(
            "queue.command.completed", where=lambda event: lane_of(event) == "b"
        )
        everything = manager.events()
        await manager.submit("a", ok)
        await manager.submit("b", ok)
        await manager.submit("a", ok)
    kept = await collect(in_b)
    assert [e.key for e in kept] == [
        "queue.command.submitted",
        "queue.command.started",
        "queue.command.completed",
    ]
    assert {lane_of(e) for e in kept} == {"b"}
    assert [(e.key, lane_of(e)) for e in await collect(b_completed)] == [
        ("queue.command.completed", "b")
    ]
    assert sum(e.key == "queue.command.completed" for e in await collect(everything)) == 3


async def test_rejected_events_take_no_buffer_room() -> None:
    async with QueueManager(LANES) as manager:
        only_b = manager.events(
            "queue.command.completed", buffer=1, where=lambda e: lane_of(e) == "b"
        )
        for _ in range(5):
            await manager.submit("a", ok)
        await manager.submit("b", ok)
    kept = await collect(only_b)
    # One slot, and the one event that passed got it: no lag from the five rejected.
    assert [(e.key, lane_of(e)) for e in kept] == [("queue.command.completed", "b")]


async def test_a_predicate_that_raises_ends_its_subscription_only() -> None:
    def fussy(event: Event) -> bool:
        if event.key == "queue.command.completed":
            raise KeyError("no completions, please")
        return True

    async with QueueManager(LANES) as manager:
        broken = manager.events(where=fussy)
        fine = manager.events("queue.command.completed")
        assert await manager.submit("a", ok) == "ok"
        assert await manager.submit("b", ok) == "ok"
    received = []
    with pytest.raises(KeyError, match="no completions"):
        async for event in broken:
            received.append(event.key)
    assert received == ["queue.command.submitted", "queue.command.started"]
    assert [lane_of(e) for e in await collect(fine)] == ["a", "b"]


async def test_where_must_be_callable() -> None:
    manager = QueueManager(LANES)
    with pytest.raises(TypeError, match="where must be a callable"):
        manager.events(where="lane a")  # type: ignore[arg-type]
    await manager.close()
