"""The worker's cancel road under a network fault: a worker process on Redis hears cancel
requests on a connection of its own (a blocking XREAD of the queue's ``cancels`` stream),
with the lease renewal's answer as the fallback. Through a TCP proxy the test owns, that
listening connection is stalled (accepted, never answered, as a partition leaves it), so the
push is lost: the running job is stopped all the same by the next renewal (every second
here), its processor sees the cancellation, the job fails for good with the reason, no retry,
and the worker goes on with the next job. Then the push road itself, once the listener is
cut and has reconnected: a second cancel stops its job too."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path

import lanemq
import pytest
from redis_support import MakeServer
from support import eventually, redis_prefix

from .conftest import StartWorker
from .execlog import Runs, report
from .tcp_proxy import Proxy

WORKER = ("--concurrency", "2", "--lease", "5.0", "--renew-every", "1.0")
WAIT = 30.0  # seconds a step may take; never reached when things work
LONG = {"sleep": 600}  # a job that runs until it is cancelled


@pytest.fixture
async def proxy(own_redis: MakeServer) -> AsyncIterator[tuple[Proxy, str]]:
    server = own_redis()
    server.start()
    proxy = Proxy(server.port)
    await proxy.start()
    try:
        yield proxy, server.url
    finally:
        await proxy.close()


async def _running(queue: lanemq.JobQueue, job_id: str, log: Path) -> None:
    async def started() -> bool:
        return bool(Runs.read(log).starts.get(job_id))

    await eventually(started, f"job {job_id} to start", timeout=WAIT)


async def _stopped(queue: lanemq.JobQueue, job_id: str, reason: str, log: Path) -> float:
    """Seconds until the job failed with ``reason`` and its processor saw the cancellation."""
    began = time.monotonic()

    async def failed() -> bool:
        job = await queue.get_job(job_id)
        return job is not None and job.state == "failed" and bool(Runs.read(log).cancelled[job_id])

    await eventually(failed, f"job {job_id} to be stopped", timeout=WAIT)
    job = await queue.get_job(job_id)
    assert job is not None and job.failed_reason == reason
    return time.monotonic() - began


async def test_a_lost_push_is_answered_by_the_renewal(
    proxy: tuple[Proxy, str], tmp_path: Path, start_worker: StartWorker
) -> None:
    tcp, server_url = proxy
    prefix = redis_prefix()
    log = tmp_path / "runs.log"
    worker = await start_worker(tcp.url, "road", log, *WORKER, "--prefix", prefix)
    queue = lanemq.RedisJobQueue("road", server_url, prefix=prefix)
    try:
        first = await queue.add("work", LONG, attempts=3)
        await _running(queue, first.id, log)

        async def listening() -> bool:
            return bool(tcp.listening())

        await eventually(listening, "the worker's cancel listener", timeout=WAIT)
        assert tcp.stall(tcp.listening()) >= 1  # the push can no longer reach the worker
        assert await queue.cancel(first.id, reason="user left") == "requested"
        by_renewal = await _stopped(queue, first.id, "user left", log)

        # The worker goes on: the next job runs and completes.
        quick = await queue.add("work", {"sleep": 0.01})
        assert await quick.wait(timeout=WAIT) == {"pid": worker.proc.pid, "attempt": 1}

        # The push road again: the stalled listener is cut, the worker listens anew.
        tcp.cut_all()
        second = await queue.add("work", LONG)
        await _running(queue, second.id, log)
        await eventually(listening, "the cancel listener to reconnect", timeout=WAIT)
        assert await queue.cancel(second.id, reason="again") == "requested"
        by_push = await _stopped(queue, second.id, "again", log)

        runs = Runs.read(log)
        assert runs.starts[first.id] == [worker.proc.pid]  # cancelled for good: no retry
        assert first.id not in runs.finishes and second.id not in runs.finishes
        with pytest.raises(lanemq.JobCancelledError, match="user left"):
            await first.wait(timeout=WAIT)
        report(
            "cancel road: the listener stalled, then cut",
            by_renewal_s=f"{by_renewal:.2f}",
            by_push_s=f"{by_push:.2f}",
            retries=len(runs.starts[first.id]) - 1,
        )
    finally:
        await queue.close()
