"""A live worker across short Redis outages: outcomes of jobs that finished while the server
was away go out as soon as it answers again, so work whose lease still holds is never run
twice; a completion whose lease ran out meanwhile stays refused (fencing), and the job runs
again (at least once); and a connection the server dropped while idle is replaced before
the next call, so that call does not fail.

Each test starts its own server (append-only file, fsync on every write, in tmp_path) and
kills it by the PID it started, then starts it again on the same port with the same data."""

from __future__ import annotations

import asyncio
import os
import signal
from collections import Counter
from typing import Any

from faults.tcp_proxy import Proxy
from lanemq import Job, JobWorker, LockLostWarning, RedisJobQueue
from redis_support import WAIT, MakeServer, RedisServer, Resp
from support import eventually, redis_prefix

DURABLE = ("--appendonly", "yes", "--appendfsync", "always")


def _crash(server: RedisServer) -> None:
    """SIGKILL to the server process the test started (no shutdown, no final save)."""
    assert server.proc is not None
    os.kill(server.proc.pid, signal.SIGKILL)
    server.proc.wait()


class _Gated:
    """A processor that counts its runs per job and finishes when the test opens the gate."""

    def __init__(self) -> None:
        self.runs: Counter[str] = Counter()
        self.gate = asyncio.Event()

    async def __call__(self, job: Job) -> dict[str, Any]:
        self.runs[job.id] += 1
        await self.gate.wait()
        return {"n": job.data["n"], "run": self.runs[job.id]}


async def _running(processor: _Gated, count: int) -> None:
    async def started() -> bool:
        return len(processor.runs) == count

    await eventually(started, f"{count} jobs to start", WAIT)


async def test_jobs_finished_during_a_short_outage_are_not_run_again(
    own_redis: MakeServer,
) -> None:
    """Lease 5 s, renewed every 0.5 s: an outage of 3.3 s (shorter than lease minus renewal
    interval) must not cost a finished job its result. Before the fix, the worker's backoff
    (0.1 s doubling to 5 s: tries at +3.1 s, then +6.3 s) and a first call that failed on the
    dead connection sent the results after the leases ran out, and stalled recovery ran the
    jobs again."""
    server = own_redis()
    server.start(*DURABLE)
    queue = RedisJobQueue("outage", server.url, prefix=redis_prefix())
    processor = _Gated()
    errors: list[BaseException] = []
    worker = JobWorker(
        queue, processor, concurrency=10, lease=5.0, renew_every=0.5, stalled_interval=0.5
    )
    worker.on("error", errors.append)
    jobs = await queue.add_bulk([("task", {"n": n}) for n in range(10)])
    async with worker:
        await _running(processor, 10)
        _crash(server)
        processor.gate.set()  # they finish while the server is away
        await asyncio.sleep(3.3)
        server.start(*DURABLE)  # same port, same data

        async def all_completed() -> bool:
            return (await queue.get_job_counts("completed"))["completed"] == 10

        await eventually(all_completed, "the results to be recorded", WAIT)
    assert processor.runs == Counter({job.id: 1 for job in jobs}), processor.runs
    for job in jobs:
        result = await queue.finished_result(job.id)
        assert result.value == {"n": job.data["n"], "run": 1}
    assert not [e for e in errors if isinstance(e, LockLostWarning)], errors
    assert worker.processed == 10


async def test_a_completion_after_the_lease_ran_out_stays_refused(own_redis: MakeServer) -> None:
    """Lease 1 s and an outage of 1.5 s: the lease is gone when the result arrives, so the
    result is refused (another worker may own the job), and the job runs again."""
    server = own_redis()
    server.start(*DURABLE)
    queue = RedisJobQueue("fenced", server.url, prefix=redis_prefix())
    processor = _Gated()
    errors: list[BaseException] = []
    worker = JobWorker(queue, processor, concurrency=1, lease=1.0, stalled_interval=0.3)
    worker.on("error", errors.append)
    job = await queue.add("task", {"n": 7})
    async with worker:
        await _running(processor, 1)
        _crash(server)
        await asyncio.sleep(1.5)
        processor.gate.set()
        server.start(*DURABLE)

        async def completed() -> bool:
            return (await queue.get_state(job.id)) == "completed"

        await eventually(completed, "the job to run again and complete", WAIT)
    assert processor.runs[job.id] == 2
    lost = [e for e in errors if isinstance(e, LockLostWarning)]
    assert [e.job_id for e in lost] == [job.id], errors
    assert (await queue.finished_result(job.id)).value == {"n": 7, "run": 2}


async def test_a_completion_whose_reply_was_lost_is_reported_as_done(
    own_redis: MakeServer,
) -> None:
    """The completion reaches the server and its connection breaks before the reply comes back
    (a proxy the test owns cuts it there), as a restart between the two does: the worker sends
    it again, and that repeat is answered as done (the job keeps the token that completed
    it), so the job is reported once, as completed, and never as a lost lease."""
    server = own_redis()
    server.start()
    proxy = Proxy(server.port)
    await proxy.start()
    prefix = redis_prefix()
    queue = RedisJobQueue("lost-reply", proxy.url, prefix=prefix)
    processor = _Gated()
    errors: list[BaseException] = []
    completed: list[str] = []
    worker = JobWorker(queue, processor, concurrency=1)
    worker.on("error", errors.append)
    worker.on("completed", lambda job, result: completed.append(job.id))
    job = await queue.add("task", {"n": 7})
    try:
        async with worker:
            await _running(processor, 1)
            # complete / complete_claim, as the function's name ends (lua/README.md).
            proxy.lose_reply(b"_complete")
            processor.gate.set()

            async def reported() -> bool:
                return bool(completed) or any(isinstance(e, LockLostWarning) for e in errors)

            await eventually(reported, "the worker to report the job", WAIT)
    finally:
        await proxy.close()
    assert proxy.reply_to_lose is None  # the completion went through, its reply was lost
    assert not [e for e in errors if isinstance(e, LockLostWarning)], errors
    assert completed == [job.id]
    assert worker.processed == 1
    assert processor.runs[job.id] == 1
    direct = RedisJobQueue("lost-reply", server.url, prefix=prefix)
    assert (await direct.finished_result(job.id)).value == {"n": 7, "run": 1}


async def test_the_first_call_after_the_server_dropped_the_connections_succeeds(
    own_redis: MakeServer,
) -> None:
    """The server closes every connection (as a restart or a proxy's idle timeout does) while
    the queue is idle: the next calls go out on new connections and succeed, the first one
    included."""
    server = own_redis()
    server.start()
    queue = RedisJobQueue("dropped", server.url, prefix=redis_prefix())
    await queue.connect()
    job = await queue.add("j", {"n": 1})
    for round_ in range(3):
        with Resp("127.0.0.1", server.port) as raw:
            killed = raw.command("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes")
        assert killed >= 1
        await asyncio.sleep(0.1)  # the client sees the close (its socket is readable)
        counts = await queue.get_job_counts("waiting")  # an ordinary call
        assert counts["waiting"] == 1 + round_
        await queue.add("j", {"n": 2})  # a hot call (wire, or ordinary while it reopens)
    assert (await queue.get_job(job.id)) is not None
