"""`QueueManager(backend=...)`: managers of one backend and name share their lanes. Here several
managers live in the test's process (each is a process to the store: it has its own id and
lease); tests/test_lanes_shared_processes.py runs them as real processes."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import pytest
from lanemq import (
    CommandFailedError,
    CommandTimeoutError,
    ConfigError,
    LaneConfig,
    LocalStorage,
    QueueManager,
    RetryPolicy,
)
from lanes_shared_support import shared_backend
from support import WAIT, wait_until

__all__ = ["shared_backend"]  # the fixture, used by name

pytestmark = pytest.mark.timeout(60)


def lanes(**caps: int) -> list[LaneConfig]:
    return [
        LaneConfig(lane_id, priority, 0, cap)
        for priority, (lane_id, cap) in enumerate(caps.items())
    ]


def pair(backend: str, lane_list: list[LaneConfig], **options: Any) -> list[QueueManager]:
    name = f"t-{uuid.uuid4().hex[:8]}"
    return [
        QueueManager(lane_list, backend=backend, name=name, **options),
        QueueManager(lane_list, backend=backend, name=name, **options),
    ]


async def test_a_named_command_runs_where_it_is_registered(shared_backend: str) -> None:
    runner, submitter = pair(shared_backend, lanes(work=2))

    async def double(payload: int) -> int:
        return payload * 2

    runner.register("double", double)
    async with runner, submitter:
        handle = await submitter.submit_named("work", "double", 21)
        assert await asyncio.wait_for(handle, WAIT) == 42
        # The runner counts the completion once the store took it, which may be just after
        # the submitter heard of the result from the store.
        await wait_until(
            lambda: runner.metrics()["work"]["completed"] == 1, "the runner's completed count"
        )
        assert submitter.metrics()["work"]["submitted"] == 1


async def test_without_a_backend_an_unregistered_name_is_refused() -> None:
    async with QueueManager(lanes(work=1)) as manager:
        with pytest.raises(LookupError, match="no command registered as 'nope'"):
            await manager.submit_named("work", "nope", None)


async def test_an_error_comes_back_naming_its_class_and_message(shared_backend: str) -> None:
    runner, submitter = pair(shared_backend, lanes(work=1))

    async def boom(payload: str) -> None:
        raise ValueError(f"bad {payload}")

    runner.register("boom", boom)
    async with runner, submitter:
        handle = await submitter.submit_named("work", "boom", "input")
        with pytest.raises(CommandFailedError) as failed:
            await asyncio.wait_for(handle, WAIT)
    assert failed.value.error_type == "ValueError"
    assert str(failed.value) == "ValueError: bad input"


async def test_a_callable_takes_its_slot_from_the_shared_lanes(shared_backend: str) -> None:
    first, second = pair(shared_backend, lanes(work=1))
    order: list[str] = []
    release = asyncio.Event()

    async def held() -> None:
        order.append("first starts")
        await release.wait()
        order.append("first ends")

    async def after() -> None:
        order.append("second starts")

    async with first, second:
        running = first.submit_nowait("work", held)
        await wait_until(lambda: order == ["first starts"], "the first callable to start")
        waiting = second.submit_nowait("work", after)
        await asyncio.sleep(0.2)  # it would have started by now if the slot were free
        assert order == ["first starts"]
        release.set()
        await asyncio.wait_for(asyncio.gather(running, waiting), WAIT)
    assert order == ["first starts", "first ends", "second starts"]


async def test_managers_whose_lanes_differ_are_refused(shared_backend: str) -> None:
    name = f"t-{uuid.uuid4().hex[:8]}"
    first = QueueManager(lanes(prompt=2), backend=shared_backend, name=name)
    other = QueueManager(lanes(prompt=3), backend=shared_backend, name=name)
    async with first:
        with pytest.raises(ConfigError, match="lane 'prompt': max_concurrency is 2 in the store"):
            await other.start()
        await other.close()


def test_storage_with_a_backend_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="backend= is durable by itself"):
        QueueManager(lanes(work=1), storage=LocalStorage(tmp_path), backend=f"local:{tmp_path}")


@pytest.mark.parametrize(
    ("backend", "shown"),
    [
        ("http://user:hunter2@example.com", "http://user:***@example.com"),
        ("local:", "local:"),
        (42, "42"),
    ],
)
def test_a_bad_backend_is_refused_by_name_without_its_password(backend: Any, shown: str) -> None:
    with pytest.raises(ConfigError) as refused:
        QueueManager(lanes(work=1), backend=backend)
    assert shown in str(refused.value)
    assert "hunter2" not in str(refused.value)


@pytest.mark.parametrize("lease", [0, -1.0, float("inf"), "10", True])
def test_a_bad_lease_is_refused(tmp_path: Path, lease: Any) -> None:
    with pytest.raises(ConfigError, match="invalid lease"):
        QueueManager(lanes(work=1), backend=f"local:{tmp_path}", lease=lease)


async def test_the_local_directory_is_created(tmp_path: Path) -> None:
    directory = tmp_path / "not" / "yet"
    async with QueueManager(lanes(work=1), backend=f"local:{directory}") as manager:
        assert await manager.submit("work", asyncio.sleep, 0, "done") == "done"
    assert directory.is_dir()
    assert manager.backend == f"local:{directory}"
    assert manager.name == "agents"


async def test_dead_letters_are_durable_and_readable_from_any_process(
    shared_backend: str,
) -> None:
    runner, reader = pair(shared_backend, lanes(work=1))

    async def boom(payload: None) -> None:
        raise RuntimeError("gone for good")

    runner.register("boom", boom)
    async with runner, reader:
        with pytest.raises(CommandFailedError):
            await asyncio.wait_for(await reader.submit_named("work", "boom"), WAIT)
        await reader.refresh()
        [letter] = reader.dead_letters()
    assert (letter.command_type, letter.lane_id) == ("boom", "work")
    assert letter.error == "RuntimeError: gone for good"
    later = QueueManager(lanes(work=1), backend=shared_backend, name=runner.name)
    async with later:
        await later.refresh()
        assert [entry.error for entry in later.dead_letters()] == ["RuntimeError: gone for good"]


async def test_retries_and_timeouts_follow_the_lane(shared_backend: str) -> None:
    lane_list = [
        LaneConfig("flaky", 1, 0, 1, retry=RetryPolicy.fixed(2, 0.01)),
        LaneConfig("slow", 2, 0, 1, timeout=0.1),
    ]
    runner, submitter = pair(shared_backend, lane_list)
    attempts: list[int] = []

    async def flaky(payload: None) -> str:
        attempts.append(1)
        if len(attempts) < 3:
            raise OSError("not yet")
        return "third time"

    async def slow(payload: None) -> None:
        await asyncio.sleep(30)

    runner.register("flaky", flaky)
    runner.register("slow", slow)
    async with runner, submitter:
        flaky_handle = await submitter.submit_named("flaky", "flaky")
        assert await asyncio.wait_for(flaky_handle, WAIT) == "third time"
        slow_handle = await submitter.submit_named("slow", "slow")
        with pytest.raises(CommandTimeoutError, match=r"timed out after 0\.1s"):
            await asyncio.wait_for(slow_handle, WAIT)
        assert runner.metrics()["flaky"]["retried"] == 2
        assert runner.metrics()["slow"]["timed_out"] == 1


async def test_a_closing_manager_gives_its_named_commands_back(shared_backend: str) -> None:
    first, second = pair(shared_backend, lanes(work=1), close_timeout=0)
    started: list[str] = []

    def runner(who: str, seconds: float) -> Any:
        async def run(payload: None) -> str:
            started.append(who)
            await asyncio.sleep(seconds)
            return who

        return run

    first.register("job", runner("first", 30))
    async with second:
        async with first:
            handle = await second.submit_named("work", "job")
            await wait_until(lambda: started == ["first"], "the first manager to start it")
        second.register("job", runner("second", 0))
        assert await asyncio.wait_for(handle, WAIT) == "second"
    assert started == ["first", "second"]


async def test_a_pending_named_command_can_be_cancelled(shared_backend: str) -> None:
    submitter = QueueManager(lanes(work=1), backend=shared_backend, name=f"t-{uuid.uuid4().hex}")
    async with submitter:
        handle = await submitter.submit_named("work", "nobody-runs-this")
        assert handle.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(handle, WAIT)
        await submitter.refresh()
        assert submitter.stats()["work"]["pending"] == 0


async def test_stats_and_events_across_managers(shared_backend: str) -> None:
    runner, submitter = pair(shared_backend, lanes(work=1))
    gate = asyncio.Event()

    async def wait_gate(payload: None) -> None:
        await gate.wait()

    runner.register("gate", wait_gate)
    async with runner, submitter:
        events = runner.events("queue.command.*")
        first = await submitter.submit_named("work", "gate")
        second = await submitter.submit_named("work", "gate")
        await wait_until(lambda: runner.in_flight == 1, "the runner to start one")
        await submitter.refresh()
        assert submitter.stats()["work"] == {
            "priority": 0,
            "pending": 1,
            "active": 1,
            "retrying": 0,
            "min_concurrency": 0,
            "max_concurrency": 1,
        }
        gate.set()
        await asyncio.wait_for(asyncio.gather(first, second), WAIT)
        keys = []
        async for event in events:
            keys.append(event.key)
            if keys.count("queue.command.completed") == 2:
                break
    assert keys.count("queue.command.started") == 2


async def test_a_shared_lane_queue_is_a_distributed_queue_over_the_same_lanes(
    shared_backend: str,
) -> None:
    from lanemq.lanes import DistributedQueue, SharedLaneQueue

    lane_list = lanes(control=1, work=2)
    name = f"t-{uuid.uuid4().hex[:8]}"
    queue = await SharedLaneQueue.open(shared_backend, lane_list, name=name, names=["double"])
    taker: DistributedQueue = queue
    assert taker.partitions == ["control", "work"]
    assert taker.worker_id != ""
    async with QueueManager(lane_list, backend=shared_backend, name=name) as submitter:
        handle = await submitter.submit_named("work", "double", 21)
        first = await taker.enqueue("control", "double", 1)  # control first: strict priority
        [urgent, queued] = await taker.dequeue(max_items=5)
        assert (urgent.id, urgent.partition, urgent.payload, urgent.attempt) == (
            first,
            "control",
            1,
            1,
        )
        assert (queued.id, queued.partition, queued.name, queued.payload) == (
            handle.id,
            "work",
            "double",
            21,
        )
        assert await taker.complete(queued.id, queued.payload * 2)
        assert await asyncio.wait_for(handle, WAIT) == 42  # the result went to the submitter
        assert await taker.complete(urgent.id, 2)
        assert not await taker.complete(urgent.id, 2)  # no longer held
        assert await taker.renew() == []
        assert await taker.dequeue() == []
    await queue.close()
