"""`JobWorker.run_once()` and `run_until_idle()`: process what is ready and return the number
processed (completions + failed attempts), leaving nothing running."""

from __future__ import annotations

import asyncio

import pytest
from conformance.backends import queue_fixture
from lanemq import Backoff, ConfigError, FlowJob, Job, JobQueue, JobWorker, RateLimitError

LIMIT = 10.0


queue = queue_fixture("memory", "local", "redis")


def other_tasks() -> set[asyncio.Task[object]]:
    return {task for task in asyncio.all_tasks() if task is not asyncio.current_task()}


async def echo(job: Job) -> object:
    await asyncio.sleep(0.001)
    return job.data


async def test_run_until_idle_processes_everything_ready(queue: JobQueue) -> None:
    before = other_tasks()
    jobs = await queue.add_bulk([("e", i) for i in range(7)])
    worker = JobWorker(queue, echo, concurrency=3)
    assert await asyncio.wait_for(worker.run_until_idle(), LIMIT) == 7
    assert other_tasks() == before  # nothing left running
    for i, job in enumerate(jobs):
        assert (await queue.finished_result(job.id)).value == i
    assert await queue.get_job_counts("waiting", "active", "completed") == {
        "waiting": 0,
        "active": 0,
        "completed": 7,
    }
    assert worker.processed == 7
    assert await asyncio.wait_for(worker.run_until_idle(), LIMIT) == 0  # again: nothing ready


async def test_due_delayed_jobs_are_ready_future_ones_are_not(queue: JobQueue) -> None:
    due = await queue.add("e", "due", delay=0.02)
    later = await queue.add("e", "later", delay=3600)
    await asyncio.sleep(0.05)
    worker = JobWorker(queue, echo)
    assert await asyncio.wait_for(worker.run_until_idle(), LIMIT) == 1
    assert await queue.get_state(due.id) == "completed"
    assert await queue.get_state(later.id) == "delayed"


async def test_retries_and_failures_count_as_attempts(queue: JobQueue) -> None:
    runs: dict[str, int] = {}

    async def work(job: Job) -> str:
        runs[job.data] = runs.get(job.data, 0) + 1
        if job.data == "flaky" and runs["flaky"] < 3:
            raise RuntimeError("not yet")
        if job.data == "broken":
            raise RuntimeError("always")
        return "ok"

    flaky = await queue.add("w", "flaky", attempts=3)  # no backoff: ready again at once
    broken = await queue.add("w", "broken", attempts=2)
    worker = JobWorker(queue, work)
    # flaky: 2 failed attempts + 1 completion; broken: 2 failed attempts.
    assert await asyncio.wait_for(worker.run_until_idle(), LIMIT) == 5
    assert runs == {"flaky": 3, "broken": 2}
    assert await queue.get_state(flaky.id) == "completed"
    assert await queue.get_state(broken.id) == "failed"
    assert (worker.processed, worker.failed, worker.attempts_failed) == (1, 1, 4)


async def test_a_retry_waiting_for_its_backoff_is_not_ready(queue: JobQueue) -> None:
    async def fail(job: Job) -> None:
        raise RuntimeError("later")

    job = await queue.add("w", None, attempts=2, backoff=Backoff.fixed(3600))
    worker = JobWorker(queue, fail)
    assert await asyncio.wait_for(worker.run_until_idle(), LIMIT) == 1
    assert await queue.get_state(job.id) == "delayed"


async def test_flow_parent_made_ready_by_its_children_runs_too(queue: JobQueue) -> None:
    async def work(job: Job) -> object:
        if job.name == "parent":
            return sorted((await job.get_children_values()).values())
        return job.data

    node = await queue.add_flow(
        FlowJob("parent", None, children=[FlowJob("child", 1), FlowJob("child", 2)])
    )
    worker = JobWorker(queue, work, concurrency=2)
    assert await asyncio.wait_for(worker.run_until_idle(), LIMIT) == 3
    assert (await queue.finished_result(node.job.id)).value == [1, 2]


async def test_run_once_runs_one_batch(queue: JobQueue) -> None:
    before = other_tasks()
    await queue.add_bulk([("e", i) for i in range(5)])
    worker = JobWorker(queue, echo, concurrency=2)
    counts = [await asyncio.wait_for(worker.run_once(), LIMIT) for _ in range(4)]
    assert counts == [2, 2, 1, 0]
    assert other_tasks() == before
    assert (await queue.get_job_counts("completed"))["completed"] == 5


async def test_run_once_waits_for_its_whole_batch(queue: JobQueue) -> None:
    async def work(job: Job) -> int:
        await asyncio.sleep(0.01 * job.data)
        return int(job.data)

    jobs = await queue.add_bulk([("w", i) for i in (5, 1, 3)])
    worker = JobWorker(queue, work, concurrency=3)
    assert await asyncio.wait_for(worker.run_once(), LIMIT) == 3
    assert [await queue.get_state(job.id) for job in jobs] == ["completed"] * 3


async def test_timeout_releases_running_jobs_and_raises(queue: JobQueue) -> None:
    before = other_tasks()
    cancelled: list[str] = []

    async def slow(job: Job) -> None:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.append(job.id)
            raise

    job = await queue.add("slow", None, attempts=3)
    quick = await queue.add("quick", None)
    worker = JobWorker(queue, {"slow": slow, "quick": echo}, concurrency=2)
    failed: list[str] = []
    worker.on("failed", lambda job, error: failed.append(job.id))
    with pytest.raises(TimeoutError, match=r"not idle after 0\.2s"):
        await asyncio.wait_for(worker.run_until_idle(timeout=0.2), LIMIT)
    assert other_tasks() == before
    assert cancelled == [job.id]
    assert failed == []
    assert await queue.get_state(quick.id) == "completed"
    stored = await queue.get_job(job.id)
    assert stored is not None
    assert (stored.state, stored.attempts_made) == ("waiting", 0)


async def test_def_processor_with_stepping(queue: JobQueue) -> None:
    def blocking(job: Job) -> int:
        job.sync.log("ran")
        return int(job.data) * 10

    jobs = await queue.add_bulk([("b", i) for i in range(3)])
    worker = JobWorker(queue, blocking, concurrency=2)
    assert await asyncio.wait_for(worker.run_until_idle(), LIMIT) == 3
    assert [(await queue.finished_result(j.id)).value for j in jobs] == [0, 10, 20]


async def test_stepping_waits_while_running_and_run_refused_while_stepping(
    queue: JobQueue,
) -> None:
    async with JobWorker(queue, echo) as worker:
        # On a running worker they wait for its loop to be idle (test_worker_controls.py).
        assert await asyncio.wait_for(worker.run_until_idle(), LIMIT) == 0
        assert await asyncio.wait_for(worker.run_once(), LIMIT) == 0

    gate = asyncio.Event()

    async def held(job: Job) -> None:
        await gate.wait()

    await queue.add("h", None)
    stepping = JobWorker(queue, held)
    task = asyncio.get_running_loop().create_task(stepping.run_until_idle())
    await asyncio.sleep(0.05)
    with pytest.raises(RuntimeError, match="already running"):
        await asyncio.wait_for(stepping.run(), LIMIT)
    gate.set()
    assert await asyncio.wait_for(task, LIMIT) == 1


async def test_close_from_another_task_ends_stepping(queue: JobQueue) -> None:
    started = asyncio.Event()

    async def slow(job: Job) -> None:
        started.set()
        await asyncio.sleep(60)

    job = await queue.add("slow", None)
    worker = JobWorker(queue, slow)
    task = asyncio.get_running_loop().create_task(worker.run_until_idle())
    await asyncio.wait_for(started.wait(), LIMIT)
    await asyncio.wait_for(worker.close(grace=0), LIMIT)
    assert task.done()
    assert task.result() == 0
    assert await queue.get_state(job.id) == "waiting"


async def test_invalid_timeout_is_refused(queue: JobQueue) -> None:
    worker = JobWorker(queue, echo)
    job = await queue.add("e", None)
    for bad in (-1, float("nan"), "1"):
        with pytest.raises(ConfigError, match="timeout"):
            await worker.run_until_idle(timeout=bad)  # type: ignore[arg-type]
    assert await queue.get_state(job.id) == "waiting"  # nothing was claimed


async def test_a_rate_limit_pause_is_waited_out(queue: JobQueue) -> None:
    runs: list[int] = []

    async def work(job: Job) -> str:
        runs.append(job.attempts_started)
        if len(runs) == 1:
            raise RateLimitError(delay=0.05)
        return "ok"

    job = await queue.add("r", None, attempts=1)
    worker = JobWorker(queue, work)
    assert await asyncio.wait_for(worker.run_until_idle(), LIMIT) == 1
    assert runs == [1, 1]  # released without using the attempt, then run again
    assert (await queue.finished_result(job.id)).value == "ok"


async def test_stepping_records_per_minute_metrics_as_run_does(queue: JobQueue) -> None:
    async def work(job: Job) -> object:
        if job.data == "bad":
            raise RuntimeError("bad input")
        return job.data

    await queue.add_bulk([("e", i) for i in range(4)])
    await queue.add("e", "bad")  # one attempt: failed for good
    worker = JobWorker(queue, work, metrics_max_data_points=60)
    assert await asyncio.wait_for(worker.run_until_idle(), LIMIT) == 5
    completed = await queue.get_metrics("completed")
    assert (completed.count, sum(completed.data)) == (4, 4)
    assert (await queue.get_metrics("failed")).count == 1
    await queue.add("e", "one more")
    assert await asyncio.wait_for(worker.run_once(), LIMIT) == 1
    assert (await queue.get_metrics("completed")).count == 5
    assert await queue.get_workers() == []  # a stepped worker does not heartbeat
