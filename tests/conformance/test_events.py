"""The queue's event stream: scenario 24 (the events of one job's life, trimming), reading by
range, the ``duplicated`` event, following the stream with ``async for``, replaying after an
id, increasing ids, and the ``max_events`` bound."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from lanemq import (
    Backoff,
    InMemoryJobQueue,
    Job,
    JobOptions,
    JobQueue,
    JobWorker,
    LocalJobQueue,
    QueueEvent,
    RedisJobQueue,
)
from support import EPOCH_MS as T

from .helpers import lock_token


def _names(events: list[QueueEvent]) -> list[tuple[str, str | None]]:
    return [(e.event, e.job_id) for e in events]


class _Follower:
    """Runs ``async for`` over ``queue.events(after)`` in a task, collecting what it sees."""

    def __init__(self, queue: JobQueue, after: int | None = None) -> None:
        self.seen: list[QueueEvent] = []
        self._queue = queue
        self._arrived = asyncio.Event()
        self._stream: AsyncIterator[QueueEvent] = queue.events(after=after)
        self.task: asyncio.Task[None] = asyncio.create_task(self._run())

    async def _run(self) -> None:
        async for event in self._stream:
            self.seen.append(event)
            self._arrived.set()

    async def started(self) -> None:
        """Lets the task take its starting point. A few turns of the loop let it send its
        first call. A read of the test's own goes the same way (on Redis, the ordinary
        connection; adds take the wire, which could overtake it) and is answered after it, so
        the follower's starting point is taken before anything the test adds next."""
        for _ in range(5):
            await asyncio.sleep(0)
        await self._queue.read_events(0, 0)

    async def wait_for(self, count: int, timeout: float = 0.3) -> list[QueueEvent]:
        """Waits until at least ``count`` events arrived; fails the test after ``timeout``."""

        async def enough() -> None:
            while len(self.seen) < count:
                self._arrived.clear()
                await self._arrived.wait()

        try:
            await asyncio.wait_for(enough(), timeout)
        except TimeoutError:
            pytest.fail(
                f"the follower saw {len(self.seen)} of {count} events within {timeout}s: "
                f"{_names(self.seen)}"
            )
        return self.seen

    async def close(self) -> None:
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.task
        assert self.task.cancelled() or self.task.done()
        aclose = getattr(self._stream, "aclose", None)
        if aclose is not None:
            await aclose()


# ----------------------------------------------------------------- scenario 24


async def test_events_of_a_job_life_in_order(queue: JobQueue) -> None:
    job = await queue.add("send", {"to": "ops"}, now=T)
    [claimed] = await queue.claim("w1", now=T + 1)
    await queue.update_progress(job.id, 50, now=T + 2)
    await queue.complete(job.id, lock_token(claimed), {"ok": True, "n": 2}, now=T + 3)
    assert await queue.claim("w1", now=T + 4) == []

    events = await queue.read_events()
    assert _names(events) == [
        ("added", job.id),
        ("waiting", job.id),
        ("active", job.id),
        ("progress", job.id),
        ("completed", job.id),
        ("drained", None),
    ]
    added, _, active, progress, completed, _ = events
    assert added.fields.get("name") == "send"
    assert active.fields.get("prev") == "waiting"
    assert json.loads(progress.fields["data"]) == 50
    assert json.loads(completed.fields["returnvalue"]) == {"ok": True, "n": 2}
    assert [e.timestamp for e in events] == [T, T, T + 1, T + 2, T + 3, T + 4]

    # "drained" is reported once until there is new work.
    assert await queue.claim("w1", now=T + 5) == []
    assert len(await queue.read_events()) == 6

    assert await queue.trim_events(2) == 4
    kept = await queue.read_events()
    assert _names(kept) == [("completed", job.id), ("drained", None)]
    assert [e.id for e in kept] == [events[4].id, events[5].id]
    assert await queue.trim_events(5) == 0
    assert await queue.trim_events(0) == 2
    assert await queue.read_events() == []


async def test_failure_events(queue: JobQueue) -> None:
    job = await queue.add("w", now=T)
    [claimed] = await queue.claim("w1", now=T)
    await queue.fail(job.id, lock_token(claimed), "kaput", retry=False, now=T + 1)
    events = [e for e in await queue.read_events() if e.job_id == job.id]
    failed = [e for e in events if e.event == "failed"]
    assert len(failed) == 1
    assert failed[0].fields.get("failedReason") == "kaput"


# ---------------------------------------------------------------- read_events


async def test_read_events_by_start_end_and_limit(queue: JobQueue) -> None:
    for i in range(4):
        await queue.add("w", i, now=T + i)  # added + waiting each: eight events
    events = await queue.read_events()
    assert len(events) == 8
    ids = [e.id for e in events]

    assert await queue.read_events(start=ids[2]) == events[2:]
    assert await queue.read_events(start=ids[2], end=ids[4]) == events[2:5]
    assert await queue.read_events(end=ids[1]) == events[:2]
    assert await queue.read_events(limit=3) == events[:3]
    assert await queue.read_events(start=ids[5], limit=2) == events[5:7]
    assert await queue.read_events(start=ids[3], end=ids[3]) == [events[3]]
    assert await queue.read_events(start=ids[-1] + 1) == []
    assert await queue.read_events(start=ids[4], end=ids[2]) == []


async def test_duplicated_event(queue: JobQueue) -> None:
    first = await queue.add("w", {"v": 1}, job_id="custom-1", now=T)
    before = await queue.read_events()
    again = await queue.add("w", {"v": 2}, job_id="custom-1", now=T + 1)

    assert again.id == first.id == "custom-1"
    assert again.data == {"v": 1}
    assert await queue.get_job_counts("waiting") == {"waiting": 1}
    new = await queue.read_events(start=before[-1].id + 1)
    assert _names(new) == [("duplicated", "custom-1")]
    assert new[0].timestamp == T + 1


# ------------------------------------------------------------------ following


async def test_async_for_sees_events_appended_after_it_started(queue: JobQueue) -> None:
    old = await queue.add("old", now=T)
    follower = _Follower(queue)
    try:
        await follower.started()
        a = await queue.add("a", now=T + 1)
        b = await queue.add("b", now=T + 2)
        seen = await follower.wait_for(4)
        assert _names(seen) == [
            ("added", a.id),
            ("waiting", a.id),
            ("added", b.id),
            ("waiting", b.id),
        ]
        assert old.id not in {e.job_id for e in seen}

        await queue.pause(now=T + 3)
        seen = await follower.wait_for(5)
        assert _names(seen[4:]) == [("paused", None)]
    finally:
        await follower.close()
    assert follower.task.done()

    # Closed: nothing more arrives, and the queue keeps working.
    count = len(follower.seen)
    await queue.resume(now=T + 4)
    await asyncio.sleep(0.01)
    assert len(follower.seen) == count
    assert [e.event for e in await queue.read_events()][-1] == "resumed"


async def test_async_for_sees_claim_events(queue: JobQueue) -> None:
    job = await queue.add("a", now=T)
    follower = _Follower(queue)
    try:
        await follower.started()
        [claimed] = await queue.claim("w1", now=T + 1)
        assert claimed.id == job.id
        seen = await follower.wait_for(1)
        assert _names(seen) == [("active", job.id)]
        assert seen[0].fields.get("prev") == "waiting"

        assert await queue.claim("w1", now=T + 2) == []
        seen = await follower.wait_for(2)
        assert _names(seen) == [("active", job.id), ("drained", None)]
    finally:
        await follower.close()


async def test_events_after_an_id_replays_then_follows(queue: JobQueue) -> None:
    jobs = [await queue.add("w", i, now=T + i) for i in range(3)]
    events = await queue.read_events()
    assert len(events) == 6
    after = events[1].id

    follower = _Follower(queue, after=after)
    try:
        seen = await follower.wait_for(4)
        assert seen == events[2:]

        late = await queue.add("late", now=T + 10)
        seen = await follower.wait_for(6)
        assert _names(seen[4:]) == [("added", late.id), ("waiting", late.id)]
    finally:
        await follower.close()
    assert {e.job_id for e in follower.seen} == {jobs[1].id, jobs[2].id, late.id}


async def test_events_after_zero_replays_everything(queue: JobQueue) -> None:
    await queue.add("w", now=T)
    await queue.pause(now=T)
    events = await queue.read_events()
    follower = _Follower(queue, after=0)
    try:
        assert await follower.wait_for(len(events)) == events
    finally:
        await follower.close()


async def test_event_ids_strictly_increase(queue: JobQueue) -> None:
    job = await queue.add("w", now=T)
    await queue.add("d", delay=1.0, now=T)
    [claimed] = await queue.claim("w1", now=T)
    await queue.update_progress(job.id, 1, now=T)
    await queue.complete(job.id, lock_token(claimed), "r", now=T)
    await queue.pause(now=T)
    await queue.resume(now=T)
    [delayed] = await queue.claim("w1", now=T + 1_000)
    await queue.fail(delayed.id, lock_token(delayed), "no", retry=False, now=T + 1_000)

    events = await queue.read_events()
    assert len(events) >= 12
    ids = [e.id for e in events]
    assert all(a < b for a, b in itertools.pairwise(ids)), ids

    # Trimming does not reuse ids.
    await queue.trim_events(1)
    await queue.add("w", now=T + 2_000)
    later = await queue.read_events()
    later_ids = [e.id for e in later]
    assert all(a < b for a, b in itertools.pairwise(later_ids)), later_ids
    assert later_ids[0] == ids[-1]
    assert later_ids[1] > ids[-1]


# ------------------------------------------------------- max_events on every backend


def _keeping(queue: JobQueue, max_events: int) -> JobQueue:
    """Another queue of the queue's backend (same server and prefix, or directory) keeping
    about ``max_events`` events: the fixture's queue keeps the default 10,000."""
    name = f"{queue.name}-trimmed"
    if isinstance(queue, LocalJobQueue):
        return LocalJobQueue(name, queue.path.parent, max_events=max_events)
    if isinstance(queue, RedisJobQueue):
        return RedisJobQueue(name, queue.url, prefix=queue.prefix, max_events=max_events)
    return InMemoryJobQueue(name, max_events=max_events)


@contextlib.asynccontextmanager
async def _trimmed(queue: JobQueue, max_events: int) -> AsyncIterator[JobQueue]:
    trimmed = _keeping(queue, max_events)
    try:
        yield trimmed
    finally:
        await trimmed.obliterate(force=True)
        await trimmed.close()


async def _kept(queue: JobQueue, low: int, high: int) -> list[QueueEvent]:
    """The stream's events, checked to number ``low`` to ``high`` with ascending ids."""
    events = await queue.read_events()
    assert low <= len(events) <= high, f"{len(events)} events kept: {_names(events)}"
    ids = [e.id for e in events]
    assert all(a < b for a, b in itertools.pairwise(ids)), ids
    return events


async def _run_all(queue: JobQueue, processor: Callable[[Job], Awaitable[Any]]) -> int:
    """Runs ``queue``'s jobs with a worker of concurrency 4 until none is ready: its claims
    and finishes carry several jobs a call, so several events share one call's write."""
    worker = JobWorker(queue, processor, concurrency=4)
    try:
        return await asyncio.wait_for(worker.run_until_idle(), 30.0)
    finally:
        await worker.close()


async def test_event_stream_is_bounded_by_max_events(queue: JobQueue) -> None:
    async with _trimmed(queue, 5) as bounded:
        jobs = [await bounded.add("w", i, now=T + i) for i in range(4)]  # eight events
        events = await bounded.read_events()
        assert len(events) == 5
        # The newest five are kept: the last event is the last job's "waiting".
        assert _names(events)[-2:] == [("added", jobs[3].id), ("waiting", jobs[3].id)]
        assert _names(events)[0] == ("waiting", jobs[1].id)
        ids = [e.id for e in events]
        assert ids == list(range(ids[0], ids[0] + 5))

        await bounded.pause(now=T + 10)
        events = await bounded.read_events()
        assert len(events) == 5
        assert events[-1].event == "paused"


async def test_max_events_keeps_about_that_many_after_completions(queue: JobQueue) -> None:
    # BullMQ's bounds (its test of `streams.events.maxLen`): N=20, 80 jobs run, 20 to 45 kept.
    async with _trimmed(queue, 20) as trimmed:
        await trimmed.add_bulk([("w", i) for i in range(80)], now=T)

        async def echo(job: Job) -> Any:
            return job.data

        assert await _run_all(trimmed, echo) == 80
        events = await _kept(trimmed, 20, 45)
        assert {e.event for e in events} <= {"active", "completed", "drained"}, _names(events)


@pytest.mark.parametrize("backoff", [None, Backoff.fixed(0.0)], ids=["at-once", "backoff"])
async def test_max_events_keeps_about_that_many_after_retried_failures(
    queue: JobQueue, backoff: Backoff | None
) -> None:
    # 80 failed attempts, each retried at once (a backoff of 0 retries at once, as BullMQ's
    # does), four a batch: the stream ends with retries.
    async with _trimmed(queue, 20) as trimmed:
        options = JobOptions(attempts=1_000, backoff=backoff)
        await trimmed.add_bulk([("w", i, options) for i in range(8)], now=T)

        async def broken(job: Job) -> None:
            raise ValueError("again")

        worker = JobWorker(trimmed, broken, concurrency=4)
        try:
            assert [await worker.run_once() for _ in range(20)] == [4] * 20
        finally:
            await worker.close()
        events = await _kept(trimmed, 20, 35)
        retried = [e for e in events if e.event == "waiting"]
        assert retried, _names(events)
        assert all(e.fields.get("prev") == "active" for e in retried), retried


async def test_max_events_keeps_about_that_many_after_removals(queue: JobQueue) -> None:
    async with _trimmed(queue, 20) as trimmed:
        jobs = await trimmed.add_bulk([("w", i) for i in range(200)], now=T)
        for job in jobs:
            await trimmed.remove(job.id)
        events = await _kept(trimmed, 20, 100)
        assert (events[-1].event, events[-1].job_id) == ("removed", jobs[-1].id)


async def test_max_events_zero_keeps_at_most_two(queue: JobQueue) -> None:
    async with _trimmed(queue, 0) as trimmed:
        await trimmed.add_bulk([("w", i) for i in range(3)], now=T)
        for n in range(3):
            [job] = await trimmed.claim("w1", now=T + n)
            await trimmed.complete(job.id, lock_token(job), now=T + n)
        assert await trimmed.claim("w1", now=T + 5) == []
        await _kept(trimmed, 0, 2)
