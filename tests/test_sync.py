"""lanemq.sync: the blocking API over any queue, called from plain functions and threads."""

from __future__ import annotations

import asyncio
import gc
import itertools
import os
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import lanemq
import pytest
from lanemq import JobFailedError, JobNotFoundError, JobOptions, JobQueue, JobWorker
from lanemq.sync import InMemoryJobQueue, LocalJobQueue, RedisJobQueue, SyncJob, SyncQueue
from support import CHILD_WAIT, WAIT, redis_prefix

_names = itertools.count(1)
MakeQueue = Callable[[], JobQueue]


@pytest.fixture(params=["memory", "local", "redis"])
def make_queue(request: pytest.FixtureRequest, tmp_path: Path) -> MakeQueue:
    """Makes objects of one fresh queue: each call returns a new object over the same jobs
    (as another process would open it)."""
    name = f"sync-{next(_names)}"
    if request.param == "memory":
        group = lanemq.MemoryGroup()
        return lambda: group.queue(name)
    if request.param == "local":
        return lambda: lanemq.LocalJobQueue(name, tmp_path)
    url, prefix = str(request.getfixturevalue("redis_url")), redis_prefix()
    return lambda: lanemq.RedisJobQueue(name, url, prefix=prefix)


@pytest.fixture
def sync_queue(make_queue: MakeQueue) -> Iterator[SyncQueue[JobQueue]]:
    with SyncQueue(make_queue()) as queue:
        yield queue
        queue.call(lambda q: q.obliterate(force=True))


def loop_threads(name: str) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == f"lanemq-sync-{name}"]


async def square(job: lanemq.Job) -> int:
    if job.data["n"] < 0:
        raise ValueError(f"negative input {job.data['n']}")
    return int(job.data["n"]) ** 2


class ThreadWorker:
    """A `JobWorker` over its own queue object, on its own event loop in a thread."""

    def __init__(self, make_queue: MakeQueue) -> None:
        self._make_queue = make_queue
        self._ready = threading.Event()
        self._thread = threading.Thread(target=lambda: asyncio.run(self._main()))
        self._loop: asyncio.AbstractEventLoop
        self._stop: asyncio.Event

    async def _main(self) -> None:
        queue = self._make_queue()
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        async with JobWorker(queue, square, concurrency=4):
            self._ready.set()
            await self._stop.wait()
        await queue.close()

    def __enter__(self) -> ThreadWorker:
        self._thread.start()
        assert self._ready.wait(WAIT), "the worker thread did not start"
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(WAIT)
        assert not self._thread.is_alive(), "the worker thread did not stop"


# ------------------------------------------------------------------ many threads


def test_many_threads_adding_at_once_get_distinct_jobs(sync_queue: SyncQueue[JobQueue]) -> None:
    threads, per_thread = 8, 50
    start = threading.Barrier(threads)
    added: list[list[SyncJob]] = [[] for _ in range(threads)]
    errors: list[BaseException] = []

    def produce(index: int) -> None:
        try:
            start.wait(WAIT)
            for n in range(per_thread):
                added[index].append(sync_queue.add("task", {"thread": index, "n": n}))
        except BaseException as error:
            errors.append(error)

    workers = [threading.Thread(target=produce, args=(i,)) for i in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(CHILD_WAIT * 3)
    assert errors == []
    jobs = [job for batch in added for job in batch]
    assert len(jobs) == len({job.id for job in jobs}) == threads * per_thread
    for index, batch in enumerate(added):  # each thread got its own jobs back, in its order
        assert [job.data for job in batch] == [{"thread": index, "n": n} for n in range(50)]
    assert sync_queue.get_job_counts("waiting", "active") == {"waiting": 400, "active": 0}
    stored = sync_queue.list_jobs("waiting")
    assert {job.id for job in stored} == {job.id for job in jobs}


# ---------------------------------------------------------- waiting for results


def test_wait_for_jobs_a_worker_on_another_thread_runs(make_queue: MakeQueue) -> None:
    with SyncQueue(make_queue()) as queue, ThreadWorker(make_queue):
        job = queue.add("square", {"n": 7})
        assert job.wait(timeout=CHILD_WAIT) == 49
        by_id = queue.add("square", {"n": 3})
        assert queue.wait(by_id.id, timeout=CHILD_WAIT) == 9
        bad = queue.add("square", {"n": -2})
        with pytest.raises(JobFailedError, match="negative input -2") as failed:
            queue.wait(bad, timeout=CHILD_WAIT)
        assert failed.value.job_id == bad.id
        # The views are snapshots: refresh reads the finished job.
        assert job.state == "waiting"
        assert job.refresh() is job
        assert (job.state, job.return_value, job.get_state()) == ("completed", 49, "completed")
        assert queue.get_job_counts("completed", "failed") == {"completed": 2, "failed": 1}
        queue.call(lambda q: q.obliterate(force=True))


def test_wait_for_jobs_a_worker_process_runs(tmp_path: Path) -> None:
    script = tmp_path / "worker.py"
    script.write_text(
        textwrap.dedent(
            """
            import asyncio, sys
            import lanemq

            async def main() -> None:
                queue = lanemq.LocalJobQueue("squares", sys.argv[1])
                stop = asyncio.Event()

                async def process(job: lanemq.Job) -> int:
                    if job.name == "stop":
                        stop.set()
                        return 0
                    return job.data ** 2

                async with lanemq.JobWorker(queue, process):
                    print("ready", flush=True)
                    await stop.wait()
                await queue.close()

            asyncio.run(main())
            """
        )
    )
    # Popen as a context closes the child's stdout pipe, which would otherwise be left to the
    # garbage collector (a ResourceWarning).
    with (
        LocalJobQueue("squares", tmp_path) as queue,
        subprocess.Popen(
            [sys.executable, str(script), str(tmp_path)], stdout=subprocess.PIPE, text=True
        ) as child,
    ):
        try:
            assert child.stdout is not None and child.stdout.readline() == "ready\n"
            jobs = queue.add_bulk([("square", n) for n in range(5)])
            assert [queue.wait(job, timeout=CHILD_WAIT) for job in jobs] == [0, 1, 4, 9, 16]
            assert queue.add("stop").wait(timeout=CHILD_WAIT) == 0
            assert child.wait(CHILD_WAIT) == 0
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
        assert queue.get_job_counts("completed") == {"completed": 6}


def test_wait_times_out_and_missing_jobs_are_reported(sync_queue: SyncQueue[JobQueue]) -> None:
    job = sync_queue.add("never-processed", {"n": 1})
    with pytest.raises(TimeoutError, match=f"job '{job.id}' did not finish within 0.05s"):
        job.wait(timeout=0.05)
    with pytest.raises(JobNotFoundError, match="'nope'"):
        sync_queue.wait("nope", timeout=1)
    assert sync_queue.get_job("nope") is None
    assert sync_queue.get_state(job.id) == "waiting"


# ----------------------------------------------------------------- management


def test_managing_jobs_through_the_sync_api(sync_queue: SyncQueue[JobQueue]) -> None:
    first = sync_queue.add("a", {"n": 1}, priority=5, job_id="first")
    delayed = sync_queue.add("b", {"n": 2}, delay=60.0)
    third = sync_queue.add("c", [3], options=JobOptions(attempts=2))
    assert (first.id, first.priority, first.name, first.data) == ("first", 5, "a", {"n": 1})
    assert delayed.state == "delayed" and third.options.attempts == 2
    assert sync_queue.count_pending() == 3

    sync_queue.pause()
    assert sync_queue.is_paused()
    assert sync_queue.call(lambda q: q.claim("w")) == []  # paused: nothing is handed out
    sync_queue.resume()
    assert not sync_queue.is_paused()

    delayed.promote()
    assert delayed.get_state() == "waiting"
    sync_queue.remove(third.id)
    assert sync_queue.get_state(third.id) == "unknown"
    assert [job.id for job in sync_queue.list_jobs("waiting")] == [delayed.id, "first"]

    # A job that failed for good goes back to waiting with retry_job.
    [claimed] = sync_queue.call(lambda q: q.claim("w", max_jobs=1))
    token = claimed.lock_token
    assert token is not None and claimed.id == delayed.id
    sync_queue.call(lambda q: q.fail(claimed.id, token, "boom"))
    assert sync_queue.finished_result(delayed.id).reason == "boom"
    sync_queue.retry_job(delayed.id)
    assert sync_queue.get_state(delayed.id) == "waiting"
    assert sync_queue.drain() == 2
    assert sync_queue.get_job_counts() == dict.fromkeys(lanemq.queue.STATES, 0)


def test_search_and_purge_through_the_sync_api(sync_queue: SyncQueue[JobQueue]) -> None:
    for n in range(5):
        sync_queue.add("send" if n % 2 else "other", {"user": {"id": n % 2}})
    jobs, cursor = sync_queue.search_jobs("waiting", data={"user.id": 1}, count=1)
    assert [job.name for job in jobs] == ["send"] and isinstance(jobs[0], SyncJob)
    assert cursor is not None  # one of two matches: a next page follows
    rest, end = sync_queue.search_jobs("waiting", data={"user.id": 1}, cursor=cursor)
    assert [job.id for job in jobs + rest] == ["2", "4"] and end is None
    assert sync_queue.remove_jobs("waiting", name="other") == 3
    assert sync_queue.get_job_counts("waiting") == {"waiting": 2}


def test_the_queue_reads_and_rate_limits_through_the_sync_api(
    sync_queue: SyncQueue[JobQueue],
) -> None:
    for i in range(3):
        sync_queue.add("w", {"i": i}, job_id=f"w{i}")
    sync_queue.add("later", None, delay=3600.0, job_id="later")
    sync_queue.add("dedup", None, dedup=lanemq.Dedup("key", ttl=600.0))
    assert sync_queue.get_job_count("waiting", "delayed") == 5
    assert sync_queue.get_job_count() == 5

    page, total = sync_queue.list_jobs_with_total("waiting", 0, 1)
    assert ([job.id for job in page], total) == (["w0", "w1"], 4)
    assert all(isinstance(job, SyncJob) for job in page)

    ttl = sync_queue.get_deduplication_ttl("key")
    assert ttl is not None and 0 < ttl <= 600.0
    assert sync_queue.get_deduplication_ttl("no such key") is None

    assert sync_queue.promote_jobs() == 1
    assert sync_queue.get_state("later") == "waiting"

    sync_queue.rate_limit(30.0)
    assert 0 < sync_queue.get_rate_limit_ttl() <= 30.0
    stats = sync_queue.get_stats()
    assert stats.counts["waiting"] == 5 and not stats.paused
    assert 0 < stats.rate_limit_ttl <= 30.0
    assert sync_queue.call(lambda q: q.claim("w")) == []  # held back on every worker
    sync_queue.remove_rate_limit_key()
    assert sync_queue.get_rate_limit_ttl() == 0
    assert len(sync_queue.call(lambda q: q.claim("w", max_jobs=10))) == 5


def test_metrics_and_workers_through_the_sync_api(sync_queue: SyncQueue[JobQueue]) -> None:
    minute = 1_700_000_040_000
    sync_queue.call(lambda q: q.record_metrics("failed", [(minute, 2), (minute + 120_000, 1)], 5))
    metrics = sync_queue.get_metrics("failed")
    assert metrics == lanemq.QueueMetrics(3, [1, 0, 2], 3, minute + 120_000)
    assert sync_queue.get_metrics("failed", 1, 1).data == [0]
    assert sync_queue.get_workers() == []
    info = lanemq.WorkerInfo(
        "w", sync_queue.queue.name, "h", os.getpid(), 1, lanemq.__version__, 5, 0, 0, 0, 0
    )
    sync_queue.call(lambda q: q.heartbeat_worker(info, 60.0))
    assert [(w.id, w.pid) for w in sync_queue.get_workers()] == [("w", os.getpid())]


def test_typed_options_are_passed_through(sync_queue: SyncQueue[JobQueue]) -> None:
    job = sync_queue.add(
        "send",
        {"to": "ops@example.com"},
        job_id="welcome:ops",
        priority=10,
        delay=5.0,
        attempts=3,
        backoff=lanemq.Backoff.exponential(1.0),
        remove_on_complete=lanemq.KeepJobs(count=1000),
        dedup=None,
    )
    stored = sync_queue.get_job("welcome:ops")
    assert stored is not None
    assert (stored.priority, stored.state, stored.options.attempts) == (10, "delayed", 3)
    assert stored.options.backoff is not None and stored.options.backoff.kind == "exponential"
    assert job.delay_until - job.created_at == 5000


# ------------------------------------------------------- from async code, closing


async def test_a_call_from_a_running_event_loop_raises_instead_of_blocking() -> None:
    queue = InMemoryJobQueue("from-async")
    try:
        with pytest.raises(RuntimeError, match=r"use the async API here \(await queue.add"):
            queue.add("x", {})
        # Nothing was added; from a thread without a loop the same object works.
        assert await asyncio.to_thread(queue.count_pending) == 0
    finally:
        await asyncio.to_thread(queue.close)


def test_a_call_from_the_private_loop_raises_instead_of_deadlocking() -> None:
    with InMemoryJobQueue("reentrant") as queue:

        async def nested(_: JobQueue) -> SyncJob:
            return queue.add("inner", {})  # blocking call on the loop that would run it

        with pytest.raises(RuntimeError, match="this thread runs an event loop"):
            queue.call(nested)
        assert queue.count_pending() == 0


def test_close_interrupts_waits_stops_the_thread_and_refuses_calls(tmp_path: Path) -> None:
    queue = LocalJobQueue("closing", tmp_path)
    job = queue.add("never-processed", {})
    assert len(loop_threads("closing")) == 1
    outcome: list[BaseException] = []
    waiting = threading.Thread(target=lambda: _capture(outcome, lambda: job.wait(timeout=60)))
    waiting.start()
    for _ in range(500):  # until the wait is on the loop (5 s at most)
        if _wait_in_flight(queue):
            break
        waiting.join(0.01)
    queue.close()
    waiting.join(WAIT)
    assert [type(e) for e in outcome] == [RuntimeError]
    assert "closed while the call waited" in str(outcome[0])
    assert loop_threads("closing") == []
    assert queue.closed and "closed" in repr(queue)
    with pytest.raises(RuntimeError, match="this SyncQueue is closed"):
        queue.add("late", {})
    queue.close()  # again: nothing happens
    # What was added is in the file: another queue object finds it.
    with LocalJobQueue("closing", tmp_path) as again:
        assert again.get_state(job.id) == "waiting"


def _capture(outcome: list[BaseException], call: Callable[[], Any]) -> None:
    try:
        call()
    except BaseException as error:
        outcome.append(error)


def _wait_in_flight(queue: SyncQueue[Any]) -> bool:
    # (test-only peek: whether the waiting thread's call reached the loop)
    return bool(queue._runner._waits)


def test_an_unreferenced_queue_stops_its_thread_but_its_jobs_keep_it_open() -> None:
    job = InMemoryJobQueue("kept").add("x", {"n": 1})
    gc.collect()
    assert job.get_state() == "waiting"  # the job keeps its queue (and loop) alive
    assert len(loop_threads("kept")) == 1
    del job
    gc.collect()
    for thread in loop_threads("kept"):
        thread.join(WAIT)
    assert loop_threads("kept") == []


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX-only")
def test_a_forked_child_is_told_to_make_its_own_queue() -> None:
    with InMemoryJobQueue("forked") as queue:
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: report what the call raised, then leave at once
            try:
                queue.add("x", {})
                message = "no error"
            except RuntimeError as error:
                message = str(error)
            os.write(write_end, message.encode())
            os._exit(0)
        os.close(write_end)
        with os.fdopen(read_end, "rb") as pipe:
            message = pipe.read().decode()
        os.waitpid(pid, 0)
        assert "before a fork; make it in the process that uses it" in message
        assert queue.count_pending() == 0


def test_factories_take_the_async_queues_arguments(tmp_path: Path, redis_url: str) -> None:
    with LocalJobQueue("factory", tmp_path / "data") as local:
        assert isinstance(local.queue, lanemq.LocalJobQueue)
        assert local.queue.path == tmp_path / "data" / "factory.sqlite3"
    prefix = redis_prefix()
    with RedisJobQueue("factory", redis_url, prefix=prefix) as remote:
        assert isinstance(remote.queue, lanemq.RedisJobQueue) and remote.queue.prefix == prefix
        assert remote.add("x", {}).queue_name == "factory"
        remote.call(lambda q: q.obliterate(force=True))
    with pytest.raises(TypeError, match="SyncQueue wraps a lanemq JobQueue"):
        SyncQueue(object())  # type: ignore[type-var]


def test_custom_events_and_queue_listing_through_the_sync_api(
    sync_queue: SyncQueue[JobQueue],
) -> None:
    sync_queue.add("a")
    event_id = sync_queue.publish_event("deployed", {"version": "1.2"})
    published = sync_queue.call(lambda q: q.read_events(event_id))
    assert [(e.event, e.data, e.custom) for e in published] == [
        ("deployed", {"version": "1.2"}, True)
    ]
    assert sync_queue.queue.name in sync_queue.list_queues()
