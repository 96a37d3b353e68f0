"""What every backend keeps for observing a queue (`lanemq.observe`): per-minute metrics of
finished jobs (BullMQ's ``getMetrics``: newest first, slices as ``LRANGE``, zeros for quiet
minutes, at most ``max_data_points`` minutes, totals, late counts, kinds apart, bad input
refused with nothing written), a real `JobWorker` recording them, and the registry of running
workers (a running worker listed with its fields, gone after close, a stale entry dropped once
its ttl has passed).

Every wait is bounded (`asyncio.wait_for(..., LIMIT)`, `eventually`), so a broken backend
fails a test instead of hanging the suite; nothing asserts how long anything took."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import socket
import time
from collections.abc import AsyncIterator
from typing import Any

import lanemq
import pytest
from lanemq import (
    ConfigError,
    Job,
    JobFailedError,
    JobQueue,
    JobWorker,
    MetricsTime,
    QueueMetrics,
    WorkerInfo,
)
from support import eventually

LIMIT = 10.0  # upper bound for anything awaited; a healthy run needs a small fraction of it
MINUTE = 60_000
T = 1_700_000_040_000  # the start of a minute


def at(minutes: int) -> int:
    """The start of the minute ``minutes`` after T."""
    return T + minutes * MINUTE


def now_ms() -> int:
    return int(time.time() * 1000)


@contextlib.asynccontextmanager
async def running(worker: JobWorker) -> AsyncIterator[None]:
    """Runs ``worker`` for the body, then closes it (bounded) and re-raises what run() raised."""
    task = asyncio.get_running_loop().create_task(worker.run())
    await asyncio.sleep(0)
    try:
        yield
    finally:
        await asyncio.wait_for(worker.close(), LIMIT)
        await asyncio.wait_for(task, LIMIT)


def info(worker_id: str, queue: JobQueue, started_at: int = T, **fields: Any) -> WorkerInfo:
    values: dict[str, Any] = {
        "host": "host-a",
        "pid": 4242,
        "concurrency": 2,
        "version": lanemq.__version__,
        "last_heartbeat": 0,
        "processed": 0,
        "failed": 0,
        "running": 0,
    }
    values.update(fields)
    return WorkerInfo(id=worker_id, queue=queue.name, started_at=started_at, **values)


# ----------------------------------------------------------------- recording and reading


async def test_a_series_reads_newest_first_with_zeros_for_quiet_minutes(queue: JobQueue) -> None:
    assert await queue.get_metrics("completed") == QueueMetrics(0, [], 0, None)
    await queue.record_metrics("completed", [(at(0), 2), (at(3), 1)], 10)

    metrics = await queue.get_metrics("completed")
    assert metrics == QueueMetrics(count=3, data=[1, 0, 0, 2], data_points=4, newest_minute=at(3))
    # A later record goes on from the newest minute, filling the gap with zeros.
    await queue.record_metrics("completed", [(at(5), 4)], 10)
    assert (await queue.get_metrics("completed")).data == [4, 0, 1, 0, 0, 2]


async def test_slices_take_lrange_indexes_and_keep_the_totals(queue: JobQueue) -> None:
    await queue.record_metrics("completed", [(at(0), 2), (at(1), 5), (at(3), 1)], 10)
    slices = {
        (0, 0): [1],
        (1, 2): [0, 5],
        (-1, -1): [2],
        (-2, -1): [5, 2],
        (0, 100): [1, 0, 5, 2],
        (-100, 0): [1],
        (5, 9): [],
        (2, 1): [],
    }
    for (start, end), data in slices.items():
        metrics = await queue.get_metrics("completed", start, end)
        assert metrics.data == data, (start, end)
        assert (metrics.count, metrics.data_points, metrics.newest_minute) == (8, 4, at(3))


async def test_the_series_keeps_at_most_max_data_points_minutes(queue: JobQueue) -> None:
    await queue.record_metrics("failed", [(at(0), 1)], 3)
    await queue.record_metrics("failed", [(at(10), 5)], 3)
    metrics = await queue.get_metrics("failed")
    assert metrics == QueueMetrics(count=6, data=[5, 0, 0], data_points=3, newest_minute=at(10))
    # A gap longer than the series fills it with zeros only.
    await queue.record_metrics("failed", [(at(100_000), 1)], 3)
    assert (await queue.get_metrics("failed")).data == [1, 0, 0]
    # A smaller maximum trims the oldest minutes at the next record.
    await queue.record_metrics("failed", [(at(100_001), 2)], 2)
    metrics = await queue.get_metrics("failed")
    assert (metrics.data, metrics.data_points, metrics.count) == ([2, 1], 2, 9)


async def test_a_late_count_adds_into_its_minute_while_kept_else_to_the_total(
    queue: JobQueue,
) -> None:
    await queue.record_metrics("completed", [(at(0), 1), (at(4), 1)], 3)
    assert (await queue.get_metrics("completed")).data == [1, 0, 0]
    # Minute 3 is kept (a zero so far) and so is 4; minute 0 was dropped.
    await queue.record_metrics("completed", [(at(3), 2), (at(4), 3), (at(0), 7)], 3)
    metrics = await queue.get_metrics("completed")
    assert metrics == QueueMetrics(count=14, data=[4, 2, 0], data_points=3, newest_minute=at(4))


async def test_pairs_come_in_any_order_and_one_minute_may_repeat(queue: JobQueue) -> None:
    await queue.record_metrics("completed", [(at(2), 1), (at(0), 2), (at(2), 3), (at(1), 0)], 5)
    metrics = await queue.get_metrics("completed")
    assert metrics == QueueMetrics(count=6, data=[4, 0, 2], data_points=3, newest_minute=at(2))
    # A count of 0 for a newer minute moves the series on (a quiet minute is a minute).
    await queue.record_metrics("completed", [(at(3), 0)], 5)
    assert (await queue.get_metrics("completed")).data == [0, 4, 0, 2]
    await queue.record_metrics("completed", [], 5)  # nothing to add
    assert (await queue.get_metrics("completed")).count == 6


async def test_the_kinds_are_separate(queue: JobQueue) -> None:
    await queue.record_metrics("completed", [(at(0), 3)], 5)
    await queue.record_metrics("failed", [(at(2), 1)], 5)
    assert await queue.get_metrics("completed") == QueueMetrics(3, [3], 1, at(0))
    assert await queue.get_metrics("failed") == QueueMetrics(1, [1], 1, at(2))


@pytest.mark.parametrize(
    ("kind", "counts", "max_points", "named"),
    [
        ("done", [(T, 1)], 5, "'done'"),
        (5, [(T, 1)], 5, "5"),
        ("completed", [(T + 1, 1)], 5, str(T + 1)),
        ("completed", [(at(1), 1), (-MINUTE, 1)], 5, f"({-MINUTE}, 1)"),
        ("completed", [(at(1), 1), (at(2), -3)], 5, f"({at(2)}, -3)"),
        ("completed", [(at(1), 2**53)], 5, str(2**53)),
        ("completed", [(at(1), "7")], 5, "'7'"),
        ("completed", [(at(1), 1)], 0, "max_data_points: 0"),
        ("completed", [(at(1), 1)], -2, "max_data_points: -2"),
        ("completed", [(at(1), 1)], 100_001, "max_data_points: 100001"),
        ("completed", [(at(1), 1)], True, "True"),
    ],
)
async def test_a_bad_record_is_refused_naming_the_value_and_writes_nothing(
    queue: JobQueue, kind: Any, counts: Any, max_points: Any, named: str
) -> None:
    await queue.record_metrics("completed", [(at(0), 1)], 5)
    before = await queue.get_metrics("completed")
    with pytest.raises(ConfigError) as refused:
        await queue.record_metrics(kind, counts, max_points)
    assert named in str(refused.value)
    assert await queue.get_metrics("completed") == before
    assert await queue.get_metrics("failed") == QueueMetrics(0, [], 0, None)


async def test_reading_another_kind_is_refused(queue: JobQueue) -> None:
    with pytest.raises(ConfigError, match="'stalled'"):
        await queue.get_metrics("stalled")


async def test_the_longest_series_is_accepted_and_one_more_minute_refused(
    queue: JobQueue,
) -> None:
    await queue.record_metrics("completed", [(at(0), 1), (at(100_000), 1)], 100_000)
    metrics = await queue.get_metrics("completed", 0, 1)
    assert (metrics.data, metrics.data_points) == ([1, 0], 100_000)
    assert (await queue.get_metrics("completed", -1, -1)).data == [0]
    with pytest.raises(ConfigError):
        JobWorker(queue, metrics_max_data_points=100_001)
    JobWorker(queue, metrics_max_data_points=100_000)  # the worker takes what the queue takes


async def test_obliterate_removes_metrics_and_workers_drain_and_clean_do_not(
    queue: JobQueue,
) -> None:
    await queue.record_metrics("completed", [(at(0), 1)], 5)
    await queue.heartbeat_worker(info("w", queue), 60.0, now=now_ms())
    await queue.drain(delayed=True)
    await queue.clean(0, 0, "completed")
    await queue.clean(0, 0, "failed")
    assert (await queue.get_metrics("completed")).count == 1
    assert [w.id for w in await queue.get_workers()] == ["w"]

    await queue.obliterate(force=True)
    assert await queue.get_metrics("completed") == QueueMetrics(0, [], 0, None)
    assert await queue.get_workers() == []


# ------------------------------------------------------------------ a worker's metrics


async def test_a_worker_with_metrics_records_its_completed_and_failed_jobs(
    queue: JobQueue,
) -> None:
    async def work(job: Job) -> str:
        if job.data["fail"]:
            raise ValueError("no")
        return "ok"

    started = now_ms()
    jobs = [await queue.add("w", {"fail": i >= 3}) for i in range(5)]
    jobs.append(await queue.add("w", {"fail": True}, attempts=2))  # retried, then failed
    worker = JobWorker(queue, work, metrics_max_data_points=MetricsTime.ONE_HOUR)
    async with running(worker):
        for job in jobs:
            with contextlib.suppress(JobFailedError):
                await asyncio.wait_for(job.wait(), LIMIT)
    ended = now_ms()

    completed = await queue.get_metrics("completed")
    failed = await queue.get_metrics("failed")
    assert (completed.count, sum(completed.data)) == (3, 3)
    # Failed for good only: the retried attempt is not a failed job.
    assert (failed.count, sum(failed.data)) == (3, 3)
    for metrics in (completed, failed):
        assert metrics.newest_minute is not None
        assert started - started % MINUTE <= metrics.newest_minute <= ended
        assert metrics.data_points == len(metrics.data) <= 2  # the run may cross a minute


async def test_a_worker_without_metrics_records_none(queue: JobQueue) -> None:
    async def work(job: Job) -> None:
        return None

    job = await queue.add("w", None)
    async with running(JobWorker(queue, work)):
        await asyncio.wait_for(job.wait(), LIMIT)
    assert await queue.get_metrics("completed") == QueueMetrics(0, [], 0, None)


async def test_metrics_add_up_across_workers_and_runs(queue: JobQueue) -> None:
    async def work(job: Job) -> None:
        return None

    for _ in range(2):
        jobs = await queue.add_bulk([("w", i) for i in range(4)])
        workers = [JobWorker(queue, work, metrics_max_data_points=5) for _ in range(2)]
        async with running(workers[0]), running(workers[1]):
            await asyncio.wait_for(asyncio.gather(*(j.wait() for j in jobs)), LIMIT)
    assert (await queue.get_metrics("completed")).count == 8


# ------------------------------------------------------------------ the worker registry


async def test_a_running_worker_is_listed_with_its_fields_and_gone_after_close(
    queue: JobQueue,
) -> None:
    release = asyncio.Event()

    async def work(job: Job) -> str:
        if job.data == "hold":
            await release.wait()
        return "ok"

    done = [await queue.add("w", i) for i in range(2)]
    worker = JobWorker(queue, work, concurrency=3, name="observed-worker", heartbeat_interval=1.0)
    started = now_ms()
    async with running(worker):
        await asyncio.wait_for(asyncio.gather(*(job.wait() for job in done)), LIMIT)
        held = await queue.add("w", "hold")

        async def listed_with_counts() -> bool:
            found = await queue.get_workers()
            return bool(found) and found[0].processed == 2 and found[0].running == 1

        # A later heartbeat carries the counts.
        await eventually(listed_with_counts, "a heartbeat with the counts", LIMIT)
        (found,) = await queue.get_workers()
        assert found.id == "observed-worker"
        assert found.queue == queue.name
        assert found.pid == os.getpid()
        assert found.host == socket.gethostname()
        assert found.concurrency == 3
        assert found.version == lanemq.__version__
        assert started <= found.started_at <= found.last_heartbeat <= now_ms()
        assert (found.processed, found.failed, found.running) == (2, 0, 1)
        release.set()
        await asyncio.wait_for(held.wait(), LIMIT)
    assert await queue.get_workers() == []


async def test_a_stale_entry_is_dropped_once_its_ttl_has_passed(queue: JobQueue) -> None:
    await queue.heartbeat_worker(info("stale", queue), 15.0, now=T)
    await queue.heartbeat_worker(info("fresh", queue), 15.0, now=T + 10_000)
    alive = await queue.get_workers(now=T + 14_999)
    assert [(w.id, w.last_heartbeat) for w in alive] == [("fresh", T + 10_000), ("stale", T)]

    assert [w.id for w in await queue.get_workers(now=T + 15_000)] == ["fresh"]
    # Deleted by that read, not only hidden: an earlier `now` does not bring it back.
    assert [w.id for w in await queue.get_workers(now=T)] == ["fresh"]
    assert await queue.get_workers(now=T + 25_000) == []


async def test_workers_sort_by_start_then_id_and_a_heartbeat_replaces_the_entry(
    queue: JobQueue,
) -> None:
    now = now_ms()
    await queue.heartbeat_worker(info("b", queue, started_at=now - 5), 60.0, now=now)
    await queue.heartbeat_worker(info("c", queue, started_at=now - 9), 60.0, now=now)
    await queue.heartbeat_worker(info("a", queue, started_at=now - 5), 60.0, now=now)
    assert [w.id for w in await queue.get_workers(now=now)] == ["c", "a", "b"]

    await queue.heartbeat_worker(info("a", queue, processed=7, host="host-b"), 60.0, now=now + 1)
    (a,) = [w for w in await queue.get_workers(now=now + 1) if w.id == "a"]
    assert (a.processed, a.host, a.last_heartbeat, a.started_at) == (7, "host-b", now + 1, T)

    assert await queue.remove_worker("a") is True
    assert await queue.remove_worker("a") is False
    assert [w.id for w in await queue.get_workers(now=now + 1)] == ["c", "b"]


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"ttl": 0}, "ttl: 0"),
        ({"ttl": -1.0}, "ttl: -1.0"),
        ({"ttl": True}, "ttl: True"),
        ({"queue": "another"}, "'another'"),
        ({"id": ""}, "worker id"),
    ],
)
async def test_a_bad_heartbeat_is_refused_and_writes_nothing(
    queue: JobQueue, change: dict[str, Any], named: str
) -> None:
    fields = {"id": "w", "queue": queue.name, "ttl": 15.0} | change
    described = dataclasses.replace(info(fields["id"], queue), queue=fields["queue"])
    with pytest.raises(ConfigError) as refused:
        await queue.heartbeat_worker(described, fields["ttl"], now=T)
    assert named in str(refused.value)
    assert await queue.get_workers(now=T) == []


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("heartbeat_interval", 0.5),
        ("heartbeat_interval", 0),
        ("heartbeat_interval", "5"),
        ("heartbeat_interval", float("nan")),
        ("metrics_max_data_points", 0),
        ("metrics_max_data_points", True),
        ("metrics_max_data_points", 2.5),
    ],
)
async def test_a_worker_refuses_bad_observation_options(
    queue: JobQueue, option: str, value: Any
) -> None:
    with pytest.raises(ConfigError, match=option):
        JobWorker(queue, **{option: value})
