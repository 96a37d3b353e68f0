"""Redis killed (SIGKILL) and started again on the same port and data (append-only file,
fsync on every write) while a worker process runs and a producer adds: the worker resumes by
itself, no acknowledged add is lost, the worker does not spin while the server is away (its
CPU time is printed; only a gross bound is asserted), and no job that finished is run again,
as each outage is shorter than the lease minus the renewal interval."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path

import lanemq
from producer_support import Producer
from redis_support import RedisServer
from support import eventually, redis_prefix

from .conftest import AOF_ALWAYS, StartWorker
from .execlog import Runs, cpu_seconds, report

RESTARTS = 2
DOWN = 2.0  # seconds: shorter than lease - renew_every (5 - 0.5)
WORKER = ("--concurrency", "10", "--lease", "5.0", "--renew-every", "0.5")
WORKER += ("--stalled-interval", "0.5", "--work", "0.2")


def _finishes(log: Path) -> int:
    return sum(line.startswith("finish") for line in log.read_text().splitlines())


async def test_workers_resume_after_redis_restarts_and_lose_nothing(
    aof_redis: RedisServer, tmp_path: Path, start_worker: StartWorker
) -> None:
    server = aof_redis
    prefix = redis_prefix()
    log = tmp_path / "runs.log"
    worker = await start_worker(server.url, "restart", log, *WORKER, "--prefix", prefix)
    queue = lanemq.RedisJobQueue("restart", server.url, prefix=prefix, connect_timeout=1.0)
    adds = Producer(queue, pace=0.02, pause=0.1, refusals=(lanemq.BackendConnectionError,))
    acknowledged = adds.acknowledged
    producer = asyncio.create_task(adds.run())
    down_cpu: list[float] = []
    recovery: list[float] = []
    for _ in range(RESTARTS):
        await asyncio.sleep(1.5)
        assert server.proc is not None
        os.kill(server.proc.pid, signal.SIGKILL)  # the server this test started
        server.proc.wait()
        cpu_before = cpu_seconds(worker.pid)
        await asyncio.sleep(DOWN)
        down_cpu.append(cpu_seconds(worker.pid) - cpu_before)
        finished = _finishes(log)
        server.start(*AOF_ALWAYS)  # same port, same data
        restarted = time.monotonic()

        async def working(before: int = finished) -> bool:
            return _finishes(log) > before

        await eventually(working, "the worker to finish a job after the restart", timeout=20)
        recovery.append(time.monotonic() - restarted)
    await asyncio.sleep(1.0)
    adds.producing = False
    await producer

    async def all_done() -> bool:
        counts = await queue.get_job_counts("waiting", "active", "delayed")
        return sum(counts.values()) == 0

    await eventually(all_done, "every job to finish", timeout=30)
    worker.proc.send_signal(signal.SIGTERM)
    assert (await worker.line()).startswith("processed "), worker.stderr()
    assert await worker.wait() == 0, worker.stderr()
    runs = Runs.read(log)
    states = {job_id: await queue.get_state(job_id) for job_id in acknowledged}
    lost = [job_id for job_id, state in states.items() if state != "completed"]
    report(
        "redis SIGKILL + restart, AOF always",
        trials=RESTARTS,
        outage_s=DOWN,
        added=len(acknowledged),
        refused_while_down=adds.refused,
        completed=sum(state == "completed" for state in states.values()),
        duplicates=runs.duplicates,
        lost=len(lost),
        recovery_s=" ".join(f"{r:.2f}" for r in recovery),
        worker_cpu_while_down_s=" ".join(f"{c:.2f}" for c in down_cpu),
        lock_lost=runs.error_kinds()["LockLostWarning"],
    )
    assert lost == []
    assert runs.rerun() == {}, "a job that finished ran again"
    # A gross bound: a worker that retries in a loop would burn a core.
    assert all(cpu < 0.5 * DOWN for cpu in down_cpu), down_cpu
    await queue.close()
