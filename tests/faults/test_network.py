"""Network faults between a worker process and its Redis, through a TCP proxy the test owns
on loopback (`tcp_proxy.py`): every connection cut, only the blocking one (the connection
whose writes begin with BZPOPMIN) cut, every connection stalled (accepted and never
answered, as a partition leaves them), only the blocking one stalled. Each time the worker
notices, reconnects and goes on, and no job is lost; a stalled blocking wait never holds up
the command path (the worker's completions go through meanwhile). The producer reaches the
server directly."""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import lanemq
import pytest
from redis_support import MakeServer
from support import Child, eventually, redis_prefix

from .conftest import StartWorker
from .execlog import Runs, report
from .tcp_proxy import Proxy

WORKER = ("--concurrency", "4", "--lease", "5.0", "--renew-every", "1.0")
WORKER += ("--stalled-interval", "1.0", "--work", "0.05")
RECOVERY = 30.0  # seconds a test waits for the worker to go on; never reached when it does


@dataclass
class Rig:
    proxy: Proxy
    queue: lanemq.RedisJobQueue  # the producer's, straight to the server
    worker: Child
    log: Path

    def finishes(self) -> int:
        return sum(line.startswith("finish") for line in self.log.read_text().splitlines())

    async def add(self, count: int) -> list[str]:
        jobs = await self.queue.add_bulk([("work", {"n": n}) for n in range(count)])
        return [job.id for job in jobs]

    async def recovered(self, before: int, what: str, timeout: float = RECOVERY) -> float:
        """Seconds until the worker finishes a job after ``before`` finishes."""
        started = time.monotonic()

        async def went_on() -> bool:
            return self.finishes() > before

        await eventually(went_on, what, timeout=timeout)
        return time.monotonic() - started

    async def stop(self) -> None:
        """SIGTERM: the worker, alive all along, closes and exits 0."""
        worker = self.worker
        assert worker.proc.returncode is None, f"the worker died: {worker.stderr()}"
        worker.proc.send_signal(signal.SIGTERM)
        assert (await worker.line(timeout=RECOVERY)).startswith("processed "), worker.stderr()
        assert await worker.wait(timeout=RECOVERY) == 0, worker.stderr()

    async def idle_and_waiting(self) -> None:
        """Waits until the worker has nothing left and blocks on the marker (BZPOPMIN)."""

        async def waiting() -> bool:
            counts = await self.queue.get_job_counts("waiting", "active")
            return sum(counts.values()) == 0 and bool(self.proxy.blocking())

        await eventually(waiting, "the worker to wait for jobs", timeout=RECOVERY)

    async def all_completed(self, ids: list[str]) -> None:
        async def done() -> bool:
            return (await self.queue.get_job_counts("completed"))["completed"] == len(ids)

        await eventually(done, f"{len(ids)} jobs to complete", timeout=RECOVERY)


@pytest.fixture
async def rig(
    own_redis: MakeServer, tmp_path: Path, start_worker: StartWorker
) -> AsyncIterator[Rig]:
    server = own_redis()
    server.start()
    proxy = Proxy(server.port)
    await proxy.start()
    prefix = redis_prefix()
    log = tmp_path / "runs.log"
    worker = await start_worker(proxy.url, "net", log, *WORKER, "--prefix", prefix)
    queue = lanemq.RedisJobQueue("net", server.url, prefix=prefix)
    rig = Rig(proxy, queue, worker, log)
    try:
        yield rig
    finally:
        await queue.close()
        await proxy.close()


async def _check_and_report(
    rig: Rig, test: str, ids: list[str], recovery: list[float], **more: object
) -> None:
    await rig.stop()
    runs = Runs.read(rig.log)
    lost = [job_id for job_id in ids if job_id not in runs.finishes]
    report(
        test,
        trials=len(recovery),
        added=len(ids),
        completed=sum(job_id in runs.finishes for job_id in ids),
        duplicates=runs.duplicates,
        lost=len(lost),
        recovery_s=" ".join(f"{r:.2f}" for r in recovery),
        **more,
    )
    assert lost == []


async def test_every_connection_cut(rig: Rig) -> None:
    ids: list[str] = []
    recovery = []
    cut = 0
    for _ in range(3):
        ids += await rig.add(100)
        await rig.recovered(rig.finishes(), "the worker to start")
        cut += rig.proxy.cut_all()
        recovery.append(await rig.recovered(rig.finishes(), "the worker to go on after a cut"))
    await rig.all_completed(ids)
    await _check_and_report(
        rig, "network: cut every connection", ids, recovery, connections_cut=cut
    )


async def test_only_the_blocking_connection_cut(rig: Rig) -> None:
    ids: list[str] = []
    recovery = []
    for _ in range(3):
        await rig.idle_and_waiting()
        assert rig.proxy.cut_blocking() >= 1
        # An add at the moment of the cut may wake the dying wait on the server, whose claim
        # then takes the job and its reply is lost: the job is recovered once its lease
        # expires (at least once). The pause measures the reconnection instead.
        await asyncio.sleep(0.1)
        before = rig.finishes()
        ids += await rig.add(1)
        recovery.append(await rig.recovered(before, "the job added after the cut to run"))
    await rig.all_completed(ids)
    await _check_and_report(rig, "network: cut the blocking connection", ids, recovery)


async def test_every_connection_stalled(rig: Rig) -> None:
    """Every connection stops answering for good, and new ones are accepted and never
    answered for 2 s; then new connections work again (the old ones stay silent). The worker
    notices once a call has had no reply for the response timeout (30 s): the event-loop
    connection breaks, the command connection is replaced, and it goes on. Jobs that were
    running then run again (their leases ran out meanwhile: at least once)."""
    ids = await rig.add(50)
    await rig.recovered(0, "the worker to start")
    rig.proxy.stall_new = True
    stalled = rig.proxy.stall(rig.proxy.live())
    ids += await rig.add(50)
    await asyncio.sleep(2.0)
    rig.proxy.stall_new = False
    before = rig.finishes()
    ids += await rig.add(50)
    recovery = [await rig.recovered(before, "the worker to go on past stalled connections", 60)]
    await rig.all_completed(ids)
    await _check_and_report(rig, "network: stall every connection", ids, recovery, stalled=stalled)


async def test_a_stalled_blocking_connection_stalls_nothing_else(rig: Rig) -> None:
    """Two long jobs run while the worker waits for more (it has free capacity); its blocking
    connection stops answering for good: the two jobs' completions still go through (the
    command path; the worker interrupts its wait to report them, and gives up on a wait whose
    reply does not follow its end), and the job added next runs. Then, idle, its new blocking
    connection stops answering too: the wait fails once its reply is later than the block
    plus the connect timeout, and the job added meanwhile runs. Last, close() ends with a
    deaf wait."""
    await rig.idle_and_waiting()
    long_jobs = await rig.queue.add_bulk([("work", {"sleep": 2.0}) for _ in range(2)])
    ids = [job.id for job in long_jobs]

    async def running_and_waiting() -> bool:
        runs = Runs.read(rig.log)
        return all(job_id in runs.starts for job_id in ids) and bool(rig.proxy.blocking())

    await eventually(running_and_waiting, "the long jobs to run beside a wait", timeout=RECOVERY)
    stalled = rig.proxy.stall(rig.proxy.blocking())
    stalled_at = time.monotonic()
    await rig.all_completed(ids)  # not held up by the deaf wait
    completions = time.monotonic() - stalled_at  # the jobs' 2 s included
    recovery = []
    for _ in range(2):  # just after the interrupted wait, then idle
        before = rig.finishes()
        ids += await rig.add(1)
        recovery.append(await rig.recovered(before, "the worker to notice its stalled wait"))
        await rig.idle_and_waiting()
        stalled += rig.proxy.stall(rig.proxy.blocking())
    await rig.all_completed(ids)
    await _check_and_report(
        rig,
        "network: stall the blocking connection",
        ids,
        recovery,
        stalled=stalled,
        completions_of_2s_jobs_s=completions,
    )
