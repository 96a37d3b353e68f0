"""SIGKILL of worker processes at random moments, on the local and the Redis backend, while
a producer keeps adding: every job completes, and a job runs more than once only when a
worker was killed holding it (its lease then expires and stalled recovery hands the job to
another worker). Counted exactly from the execution log."""

from __future__ import annotations

import asyncio
import random
import signal
import time
from pathlib import Path

import pytest
from redis_support import MakeServer
from support import Child, eventually

from .backends import Backend
from .conftest import StartWorker
from .execlog import Runs, report

KILLS = 8
WORKERS = 3
# Short leases so recovery is quick: a killed worker's jobs are back within ~1.3 s.
WORKER = ("--concurrency", "4", "--lease", "1.0", "--renew-every", "0.3")
WORKER += ("--stalled-interval", "0.3", "--work", "0.05")


@pytest.mark.parametrize("kind", ["local", "redis"])
async def test_sigkilled_workers_lose_no_job(
    kind: str,
    tmp_path: Path,
    own_redis: MakeServer,
    start_worker: StartWorker,
    rng: random.Random,
) -> None:
    backend = Backend(kind, tmp_path, own_redis)
    queue = backend.queue("kills")
    log = tmp_path / "runs.log"
    options = (*WORKER, *backend.worker_options())
    workers = [await start_worker(backend.url, "kills", log, *options) for _ in range(WORKERS)]
    killed: set[int] = set()
    last_kill = 0.0
    added: list[str] = []
    producing = True

    async def produce() -> None:
        n = 0
        while producing:
            # Stalls are the fault under test, not a reason to fail a job.
            jobs = [("work", {"n": n + i}, {"max_stalled_count": 1000}) for i in range(8)]
            added.extend(job.id for job in await queue.add_bulk(jobs))
            n += len(jobs)
            await asyncio.sleep(0.1)

    producer = asyncio.create_task(produce())
    for _ in range(KILLS):
        await asyncio.sleep(rng.uniform(0.3, 0.9))
        victim = rng.choice(workers)
        victim.kill()  # SIGKILL, by the PID this test started
        await victim.wait()
        last_kill = time.monotonic()
        killed.add(victim.pid)
        workers.remove(victim)
        workers.append(await start_worker(backend.url, "kills", log, *options))
    producing = False
    await producer

    async def all_completed() -> bool:
        return (await queue.get_job_counts("completed"))["completed"] == len(added)

    await eventually(all_completed, "every job to complete", timeout=60)
    recovered_in = time.monotonic() - last_kill
    await _stop(workers)
    runs = Runs.read(log)
    counts = await queue.get_job_counts("completed", "failed", "waiting", "active", "delayed")
    lost = [job_id for job_id in added if job_id not in runs.starts]
    unexplained = {
        job_id: pids
        for job_id, pids in runs.rerun().items()
        if any(pid not in killed for pid in pids[:-1])
    }
    report(
        f"worker SIGKILL ({kind})",
        trials=KILLS,
        added=len(added),
        completed=counts["completed"],
        duplicates=runs.duplicates,
        rerun_jobs=len(runs.rerun()),
        lost=len(lost),
        recovered_after_last_kill_s=recovered_in,
    )
    assert counts == {"completed": len(added), "failed": 0, "waiting": 0, "active": 0, "delayed": 0}
    assert lost == []
    # A job ran again only after a killed worker held it: every run but the last was on a
    # worker that was killed.
    assert unexplained == {}, (unexplained, killed)
    for job_id in added:
        result = await queue.finished_result(job_id)
        assert result.value["pid"] == runs.starts[job_id][-1], (job_id, runs.starts[job_id])
    await queue.close()


async def _stop(workers: list[Child]) -> None:
    """SIGTERM to the workers still running: each closes and exits 0."""
    for worker in workers:
        worker.proc.send_signal(signal.SIGTERM)
    for worker in workers:
        assert (await worker.line()).startswith("processed "), worker.stderr()
        assert await worker.wait() == 0, worker.stderr()
