"""Custom events (`publish_event`, BullMQ's ``QueueEventsProducer.publishEvent``) in the
queue's event stream, filtered subscriptions (`events(names=..., where=...)`), and the
listing of a backend's queues (`list_queues`)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
from lanemq import ConfigError, JobQueue, QueueEvent
from support import EPOCH_MS as T


async def test_a_custom_event_reads_back_with_its_name_data_and_job(queue: JobQueue) -> None:
    job = await queue.add("email", {"to": "a@example.com"}, now=T)
    first = await queue.publish_event("invoice-sent", {"total": 12.5, "lines": [1, 2]}, now=T + 1)
    second = await queue.publish_event("audit", job_id=job.id, now=T + 2)
    assert second == first + 1
    assert first == await queue._core.last_event_id() - 1
    events = await queue.read_events(first)
    assert [(e.id, e.event, e.job_id, e.custom) for e in events] == [
        (first, "invoice-sent", None, True),
        (second, "audit", job.id, True),
    ]
    assert events[0].data == {"total": 12.5, "lines": [1, 2]}
    assert events[0].timestamp == T + 1
    assert events[1].data == {}
    # lanemq's own events are not custom, and keep their fields.
    added = (await queue.read_events(0, first - 1))[0]
    assert (added.event, added.custom, added.data) == ("added", False, None)


@pytest.mark.parametrize(
    ("event", "data", "problem"),
    [
        ("", {}, ConfigError),
        ("x" * 201, {}, ConfigError),
        ("completed", {}, ConfigError),  # a name lanemq writes itself
        ("custom", {}, ConfigError),  # the name custom events are stored under
        ("ok", [1, 2], TypeError),  # not an object
        ("ok", {1: "a"}, TypeError),  # a key that is not a str
        ("ok", {"when": object()}, TypeError),  # not JSON
        (42, {}, TypeError),
    ],
)
async def test_a_bad_custom_event_is_refused_and_writes_nothing(
    queue: JobQueue, event: object, data: object, problem: type[Exception]
) -> None:
    await queue.add("a", now=T)
    before = await queue.read_events(0)
    with pytest.raises(problem) as refused:
        await queue.publish_event(event, data)  # type: ignore[arg-type]
    if problem is ConfigError:
        assert f'"{event}"' in str(refused.value)  # the message names the bad name
    assert await queue.read_events(0) == before


async def test_custom_event_data_over_the_payload_limit_is_refused(queue: JobQueue) -> None:
    limit = 16 * 1024 * 1024  # every backend's default max_payload_bytes
    with pytest.raises(ConfigError, match="max_payload_bytes"):
        await queue.publish_event("big", {"blob": "x" * limit})
    assert await queue.read_events(0) == []


async def _collect(
    queue: JobQueue, count: int, **filters: object
) -> tuple[asyncio.Task[list[QueueEvent]], Callable[[], None]]:
    """Follows ``queue.events(**filters)`` from now until ``count`` events came."""
    after = await queue._core.last_event_id()

    async def follow() -> list[QueueEvent]:
        seen: list[QueueEvent] = []
        async for event in queue.events(after, **filters):  # type: ignore[arg-type]
            seen.append(event)
            if len(seen) == count:
                return seen
        return seen

    task = asyncio.create_task(follow())
    return task, task.cancel


async def test_events_filtered_by_name_and_by_predicate(queue: JobQueue) -> None:
    by_name, _ = await _collect(queue, 2, names=["deploy", "completed"])
    by_predicate, _ = await _collect(
        queue, 2, where=lambda e: e.custom and e.data.get("env") == "prod"
    )
    await queue.add("a", now=T)
    await queue.publish_event("deploy", {"env": "staging"})
    await queue.publish_event("rollback", {"env": "prod"})
    await queue.publish_event("deploy", {"env": "prod"})
    named = await asyncio.wait_for(by_name, 10)
    assert [(e.event, e.data) for e in named] == [
        ("deploy", {"env": "staging"}),
        ("deploy", {"env": "prod"}),
    ]
    picked = await asyncio.wait_for(by_predicate, 10)
    assert [e.event for e in picked] == ["rollback", "deploy"]


async def test_a_single_name_is_not_split_into_characters(queue: JobQueue) -> None:
    follower, _ = await _collect(queue, 1, names="added")
    await queue.publish_event("a")  # would match if "added" were read as its letters
    await queue.add("job", now=T)
    assert [e.event for e in await asyncio.wait_for(follower, 10)] == ["added"]


async def test_a_predicate_that_raises_ends_the_iteration_with_its_error(
    queue: JobQueue,
) -> None:
    def broken(event: QueueEvent) -> bool:
        raise ValueError(f"cannot judge {event.event}")

    follower, _ = await _collect(queue, 1, where=broken)
    await queue.publish_event("x")
    with pytest.raises(ValueError, match="cannot judge x"):
        await asyncio.wait_for(follower, 10)


async def test_list_queues_names_the_queues_of_the_backend(
    queue: JobQueue, sibling: Callable[[str], JobQueue]
) -> None:
    other = sibling("other")
    await queue.add("a", now=T)
    await other.add("b", now=T)
    names = await queue.list_queues()
    assert queue.name in names and other.name in names
    assert names == sorted(names)
    assert await other.list_queues() == names
