"""Conformance of batch processors (`JobWorker.batch_processor`) on every backend: batches of
``size`` under ``concurrency=1``, ``min_size``/``timeout``, `Job.set_as_failed`, a processor
that raises or returns a list of the wrong length, a worker mixing batch and single
processors, leases renewed while a batch runs, and the options' checks.

Every wait is bounded by `asyncio.wait_for(..., LIMIT)`; sizes are asserted, not timings."""

from __future__ import annotations

import asyncio
import math
from typing import Any

import pytest
from lanemq import ConfigError, Job, JobFailedError, JobQueue, JobWorker

from .test_worker import LIMIT, running


async def wait_all(jobs: list[Job]) -> list[Any]:
    return await asyncio.wait_for(asyncio.gather(*(job.wait() for job in jobs)), LIMIT)


async def test_batches_of_size_under_concurrency_one(queue: JobQueue) -> None:
    sizes: list[int] = []
    worker = JobWorker(queue, concurrency=1)

    @worker.batch_processor("double", size=4, min_size=4, timeout=LIMIT)
    async def double(jobs: list[Job]) -> list[int]:
        sizes.append(len(jobs))
        await asyncio.sleep(0.01)
        return [job.data["n"] * 2 for job in jobs]

    jobs = [await queue.add("double", {"n": n}) for n in range(12)]
    async with running(worker):
        results = await wait_all(jobs)

    assert results == [n * 2 for n in range(12)]
    assert sizes == [4, 4, 4]
    assert worker.processed == 12
    assert worker.concurrency == 1
    for job in jobs:
        stored = await queue.get_job(job.id)
        assert stored is not None and stored.state == "completed"


async def test_fewer_than_min_size_run_after_timeout(queue: JobQueue) -> None:
    sizes: list[int] = []
    worker = JobWorker(queue)

    @worker.batch_processor("few", size=10, min_size=5, timeout=0.2)
    async def few(jobs: list[Job]) -> list[str]:
        sizes.append(len(jobs))
        return ["ok"] * len(jobs)

    jobs = [await queue.add("few", None) for _ in range(3)]
    async with running(worker):
        assert await wait_all(jobs) == ["ok"] * 3

    assert sizes == [3]


async def test_set_as_failed_fails_that_job_alone(queue: JobQueue) -> None:
    runs: dict[str, int] = {}
    failed: list[tuple[str, str]] = []
    worker = JobWorker(queue)

    # (the retry runs alone: it waits 0.2 s for others)
    @worker.batch_processor("mixed", size=3, min_size=3, timeout=0.2)
    async def mixed(jobs: list[Job]) -> list[Any]:
        results: list[Any] = []
        for job in jobs:
            runs[job.id] = runs.get(job.id, 0) + 1
            if job.data["bad"]:
                job.set_as_failed("bad input")
                results.append(None)
            else:
                results.append(job.data["n"])
        return results

    worker.on("failed", lambda job, error: failed.append((job.id, str(error))))
    good = [await queue.add("mixed", {"n": n, "bad": False}) for n in range(2)]
    bad = await queue.add("mixed", {"n": 9, "bad": True}, attempts=2)
    async with running(worker):
        assert await wait_all(good) == [0, 1]
        with pytest.raises(JobFailedError) as caught:
            await asyncio.wait_for(bad.wait(), LIMIT)

    assert "bad input" in caught.value.reason
    stored = await queue.get_job(bad.id)
    assert stored is not None
    assert stored.state == "failed" and stored.attempts_made == 2
    assert runs[bad.id] == 2  # retried once, alone in its second batch
    assert failed == [(bad.id, "bad input"), (bad.id, "bad input")]
    assert worker.processed == 2 and worker.failed == 1


async def test_set_as_failed_outside_a_batch_raises(queue: JobQueue) -> None:
    job = await queue.add("x", None)
    [claimed] = await queue.claim("w", lease=30.0)
    assert claimed.id == job.id
    with pytest.raises(RuntimeError, match="batch processor"):
        claimed.set_as_failed("nope")


async def test_processor_that_raises_fails_every_job(queue: JobQueue) -> None:
    worker = JobWorker(queue)

    @worker.batch_processor("boom", size=2, min_size=2, timeout=LIMIT)
    async def boom(jobs: list[Job]) -> list[Any]:
        raise ValueError("the whole batch broke")

    jobs = [await queue.add("boom", None) for _ in range(2)]
    async with running(worker):
        for job in jobs:
            with pytest.raises(JobFailedError) as caught:
                await asyncio.wait_for(job.wait(), LIMIT)
            assert "the whole batch broke" in caught.value.reason

    assert worker.failed == 2


async def test_wrong_number_of_results_fails_the_batch(queue: JobQueue) -> None:
    worker = JobWorker(queue)

    @worker.batch_processor("short", size=3, min_size=3, timeout=LIMIT)
    async def short(jobs: list[Job]) -> list[Any]:
        return [1]

    jobs = [await queue.add("short", None) for _ in range(3)]
    async with running(worker):
        for job in jobs:
            with pytest.raises(JobFailedError) as caught:
                await asyncio.wait_for(job.wait(), LIMIT)
            assert "returned 1 results for a batch of 3 jobs" in caught.value.reason


async def test_result_that_cannot_be_encoded_fails_its_job_alone(queue: JobQueue) -> None:
    worker = JobWorker(queue)

    @worker.batch_processor("enc", size=2, min_size=2, timeout=LIMIT)
    async def enc(jobs: list[Job]) -> list[Any]:
        return [object() if job.data["bad"] else "fine" for job in jobs]

    good = await queue.add("enc", {"bad": False})
    bad = await queue.add("enc", {"bad": True})
    async with running(worker):
        assert await asyncio.wait_for(good.wait(), LIMIT) == "fine"
        with pytest.raises(JobFailedError):
            await asyncio.wait_for(bad.wait(), LIMIT)


async def test_mixed_with_a_single_processor(queue: JobQueue) -> None:
    sizes: list[int] = []
    singles: list[str] = []
    worker = JobWorker(queue, concurrency=2)

    @worker.batch_processor("many", size=5, min_size=5, timeout=LIMIT)
    async def many(jobs: list[Job]) -> list[str]:
        sizes.append(len(jobs))
        return [f"batch-{job.data}" for job in jobs]

    @worker.processor("one")
    async def one(job: Job) -> str:
        singles.append(job.id)
        return f"single-{job.data}"

    jobs: list[Job] = []
    for n in range(10):
        jobs.append(await queue.add("many", n))
        jobs.append(await queue.add("one", n))
    async with running(worker):
        results = await wait_all(jobs)

    assert results == [f"{kind}-{n}" for n in range(10) for kind in ("batch", "single")]
    assert sum(sizes) == 10 and all(size <= 5 for size in sizes)
    assert len(singles) == 10
    assert worker.processed == 20


async def test_plain_def_batch_processor_runs_in_a_thread(queue: JobQueue) -> None:
    worker = JobWorker(queue)

    @worker.batch_processor("plain", size=2, min_size=2, timeout=LIMIT)
    def plain(jobs: list[Job]) -> list[int]:
        return [job.data + 1 for job in jobs]

    jobs = [await queue.add("plain", n) for n in range(2)]
    async with running(worker):
        assert await wait_all(jobs) == [1, 2]


async def test_leases_renewed_while_a_batch_runs(queue: JobQueue) -> None:
    started = asyncio.Event()
    worker = JobWorker(queue, lease=0.9, renew_every=0.15)

    @worker.batch_processor("long", size=3, min_size=3, timeout=LIMIT)
    async def long(jobs: list[Job]) -> list[str]:
        started.set()
        await asyncio.sleep(1.2)  # longer than the lease: only renewals keep it
        return ["ok"] * len(jobs)

    jobs = [await queue.add("long", None) for _ in range(3)]
    stolen: list[str] = []
    async with running(worker):
        await asyncio.wait_for(started.wait(), LIMIT)

        async def watch() -> None:
            while await queue.get_state(jobs[0].id) == "active":
                recovered, failed = await queue.recover_stalled()
                stolen.extend(recovered + failed)
                await asyncio.sleep(0.05)

        await asyncio.wait_for(watch(), LIMIT)
        assert await wait_all(jobs) == ["ok"] * 3

    assert stolen == []
    for job in jobs:
        stored = await queue.get_job(job.id)
        assert stored is not None
        assert stored.state == "completed" and stored.stalled_count == 0


async def test_timeout_of_the_jobs_applies_to_the_batch(queue: JobQueue) -> None:
    worker = JobWorker(queue)

    @worker.batch_processor("slow", size=2, min_size=2, timeout=LIMIT)
    async def slow(jobs: list[Job]) -> list[str]:
        await asyncio.sleep(LIMIT)
        return ["late"] * len(jobs)

    short = await queue.add("slow", None, timeout=0.05, attempts=1)
    unlimited = await queue.add("slow", None, attempts=1)
    async with running(worker):
        for job in (short, unlimited):
            with pytest.raises(JobFailedError) as caught:
                await asyncio.wait_for(job.wait(), LIMIT)
            assert "timed out" in caught.value.reason


async def test_a_timed_out_batch_that_swallows_cancellation_is_a_stray(queue: JobQueue) -> None:
    worker = JobWorker(queue)
    ended = asyncio.Event()
    release = asyncio.Event()

    @worker.batch_processor("stubborn", size=1, min_size=1, timeout=LIMIT)
    async def stubborn(jobs: list[Job]) -> list[None]:
        try:
            await asyncio.sleep(LIMIT)
        except asyncio.CancelledError:
            await release.wait()  # swallows it: runs on after its jobs timed out
        ended.set()
        return [None] * len(jobs)

    job = await queue.add("stubborn", None, timeout=0.05, attempts=1)
    async with running(worker):
        with pytest.raises(JobFailedError, match="timed out"):
            await asyncio.wait_for(job.wait(), LIMIT)
        for _ in range(100):
            if worker.stray_tasks:
                break
            await asyncio.sleep(0.01)
        assert worker.stray_tasks == 1
        release.set()
        await asyncio.wait_for(ended.wait(), LIMIT)
        for _ in range(100):
            if not worker.stray_tasks:
                break
            await asyncio.sleep(0.01)
        assert worker.stray_tasks == 0
    assert await queue.get_state(job.id) == "failed"


async def test_bad_options_are_config_errors(queue: JobQueue) -> None:
    worker = JobWorker(queue)
    for options, named in (
        ({"size": 0}, "size: 0"),
        ({"size": 5, "min_size": 0}, "min_size: 0"),
        ({"size": 5, "min_size": 6}, "min_size: 6"),
        ({"timeout": -1.0}, "timeout: -1.0"),
        ({"timeout": math.nan}, "timeout: nan"),
    ):
        with pytest.raises(ConfigError, match=named):
            worker.batch_processor("x", **options)  # type: ignore[arg-type]

    @worker.processor("single")
    async def single(job: Job) -> None:
        return None

    with pytest.raises(ConfigError, match="'single'"):
        worker.batch_processor("single")

    @worker.batch_processor("batched")
    async def batched(jobs: list[Job]) -> list[None]:
        return [None] * len(jobs)

    with pytest.raises(ConfigError, match="'batched'"):
        worker.processor("batched")(single)


async def test_run_until_idle_runs_batches(queue: JobQueue) -> None:
    sizes: list[int] = []
    worker = JobWorker(queue)

    @worker.batch_processor("idle", size=2, min_size=2, timeout=0.05)
    async def idle(jobs: list[Job]) -> list[int]:
        sizes.append(len(jobs))
        return [job.data for job in jobs]

    jobs = [await queue.add("idle", n) for n in range(5)]
    assert await asyncio.wait_for(worker.run_until_idle(), LIMIT) == 5
    assert sorted(sizes) == [1, 2, 2]
    assert [await queue.get_state(job.id) for job in jobs] == ["completed"] * 5


async def test_close_grace_releases_a_running_batch(queue: JobQueue) -> None:
    started = asyncio.Event()
    worker = JobWorker(queue)

    @worker.batch_processor("stuck", size=2, min_size=2, timeout=LIMIT)
    async def stuck(jobs: list[Job]) -> list[str]:
        started.set()
        await asyncio.sleep(LIMIT * 2)
        return ["never"] * len(jobs)

    jobs = [await queue.add("stuck", None) for _ in range(2)]
    task = asyncio.get_running_loop().create_task(worker.run())
    await asyncio.wait_for(started.wait(), LIMIT)
    await asyncio.wait_for(worker.close(grace=0), LIMIT)
    await asyncio.wait_for(task, LIMIT)
    for job in jobs:
        stored = await queue.get_job(job.id)
        assert stored is not None
        assert stored.state == "waiting" and stored.attempts_made == 0


async def test_group_affinity_keeps_one_group_per_batch(queue: JobQueue) -> None:
    batches: list[list[str | None]] = []
    worker = JobWorker(queue, concurrency=1)

    @worker.batch_processor("embed", size=3, min_size=3, timeout=0.2, group_affinity=True)
    async def embed(jobs: list[Job]) -> list[int]:
        batches.append([job.group for job in jobs])
        return [job.data for job in jobs]

    jobs = [await queue.add("embed", n, group="tenant-a") for n in range(6)]
    jobs += [await queue.add("embed", 10 + n, group="tenant-b") for n in range(4)]
    jobs += [await queue.add("embed", 20 + n) for n in range(2)]
    async with running(worker):
        results = await wait_all(jobs)

    assert results == [job.data for job in jobs]
    assert all(len(set(groups)) == 1 for groups in batches), batches
    assert (
        sorted(g for groups in batches for g in groups if g) == ["tenant-a"] * 6 + ["tenant-b"] * 4
    )
    assert sum(len(groups) for groups in batches) == 12


async def test_without_group_affinity_a_batch_mixes_groups(queue: JobQueue) -> None:
    batches: list[list[str | None]] = []
    worker = JobWorker(queue, concurrency=1)

    @worker.batch_processor("embed", size=4, min_size=4, timeout=LIMIT)
    async def embed(jobs: list[Job]) -> list[None]:
        batches.append([job.group for job in jobs])
        return [None] * len(jobs)

    jobs = [await queue.add("embed", None, group=g) for g in ("a", "a", "b", "b")]
    async with running(worker):
        await wait_all(jobs)

    assert batches == [["a", "b", "a", "b"]]  # claimed in the groups' turns
