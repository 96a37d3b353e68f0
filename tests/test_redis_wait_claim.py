"""An idle worker on Redis sends its claim behind its blocking wait, in one write, so the server
claims the moment the wait ends (crates/lanemq-redis/src/waits.rs, lua/claim-2.lua). Checked:
the claim rides on the waiting connection, right behind the wait (MONITOR); interrupting the
wait (a slot freeing, close()) never leaves a job claimed and forgotten (every job runs once,
none stalls); and where an ACL forbids CLIENT, the worker waits and claims the ordinary way."""

from __future__ import annotations

import asyncio
import random
import re
import threading
from collections.abc import AsyncIterator, Iterator

import pytest
from lanemq import Job, JobWorker, RedisJobQueue
from redis_support import MakeServer, Resp, queue_key
from support import redis_prefix


@pytest.fixture
async def queue(redis_url: str) -> AsyncIterator[RedisJobQueue]:
    made = RedisJobQueue("waitclaim", redis_url, prefix=redis_prefix())
    try:
        yield made
    finally:
        await made.obliterate(force=True)


class Monitor:
    """MONITOR on a connection of its own, read by a thread: (client address, command, first
    argument) of every command the server runs outside scripts."""

    LINE = re.compile(r'^\+[\d.]+ \[\d+ ([^\]]+)\] "(\w+)"(?: "([^"]*)")?')

    def __init__(self, url: str) -> None:
        self.raw = Resp.of(url)
        assert self.raw.command("MONITOR") == "OK"
        self.seen: list[tuple[str, str, str]] = []
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        try:
            for line in self.raw.file:
                found = self.LINE.match(line.decode(errors="replace"))
                if found and found.group(1) != "lua":
                    self.seen.append((found.group(1), found.group(2).upper(), found.group(3) or ""))
        except (OSError, ValueError):
            pass

    def close(self) -> list[tuple[str, str, str]]:
        self.raw.sock.close()
        self.thread.join(timeout=5)
        return list(self.seen)


@pytest.fixture
def monitor(redis_url: str) -> Iterator[Monitor]:
    made = Monitor(redis_url)
    try:
        yield made
    finally:
        made.close()


async def test_the_claim_rides_behind_the_wait(queue: RedisJobQueue, monitor: Monitor) -> None:
    done: list[str] = []
    finished = asyncio.Event()

    async def work(job: Job) -> None:
        done.append(job.id)
        if len(done) == 3:
            finished.set()

    worker = JobWorker(queue, work)
    runner = asyncio.create_task(worker.run())
    for _ in range(3):
        await asyncio.sleep(0.2)  # the worker is idle in its wait by then
        await queue.add("j", None)
    await asyncio.wait_for(finished.wait(), 30)
    await worker.close()
    await runner
    seen = monitor.close()
    # Each add is followed by a claim on a connection whose previous command was the wait.
    adds = [
        k for k, (_, command, arg) in enumerate(seen) if command == "FCALL" and arg.endswith("_add")
    ]
    assert len(adds) == 3, seen
    for k in adds:
        claim = next(
            i
            for i in range(k + 1, len(seen))
            if seen[i][1] == "FCALL" and seen[i][2].endswith("_claim")
        )
        client = seen[claim][0]
        before = [command for c, command, _ in seen[:claim] if c == client]
        assert before and before[-1] == "BZPOPMIN", (claim, before[-3:])


def _unblocks(url: str) -> int:
    """CLIENT UNBLOCK calls the server has run (each interrupted wait makes one)."""
    with Resp.of(url) as raw:
        stats = raw.command("INFO", "commandstats")
    found = re.search(r"cmdstat_client\|unblock:calls=(\d+)", stats)
    return int(found.group(1)) if found else 0


async def test_interrupted_waits_lose_no_job(queue: RedisJobQueue, redis_url: str) -> None:
    """Three slots, jobs of a few ms added at random moments: the idle wait is interrupted over
    and over (a slot frees while the worker waits for more). Every job runs exactly once, and
    none is left locked until its lease runs out (no stall)."""
    total = 300
    runs: dict[str, int] = {}
    all_done = asyncio.Event()
    rng = random.Random(7)

    async def work(job: Job) -> None:
        job_id = job.id
        runs[job_id] = runs.get(job_id, 0) + 1
        await asyncio.sleep(rng.random() * 0.003)
        if len(runs) == total:
            all_done.set()

    unblocks = _unblocks(redis_url)
    worker = JobWorker(queue, work, concurrency=3, lease=60.0)
    runner = asyncio.create_task(worker.run())
    ids = []
    for _ in range(total):
        ids.append((await queue.add("j", None)).id)
        await asyncio.sleep(rng.random() * 0.003)
    await asyncio.wait_for(all_done.wait(), 120)
    await worker.close()
    await runner
    # The waits were interrupted, many times (else this checked nothing).
    assert _unblocks(redis_url) - unblocks > 10
    assert sorted(runs) == sorted(ids)
    assert set(runs.values()) == {1}
    counts = await queue.get_job_counts("waiting", "active", "completed")
    assert counts == {"waiting": 0, "active": 0, "completed": total}
    for job_id in ids[:: total // 30]:
        job = await queue.get_job(job_id)
        assert job is not None
        assert (job.attempts_made, job.stalled_count) == (1, 0)


async def test_close_while_waiting_claims_nothing(queue: RedisJobQueue) -> None:
    for _ in range(5):
        worker = JobWorker(queue, lambda job: asyncio.sleep(0))
        runner = asyncio.create_task(worker.run())
        await asyncio.sleep(0.05)
        await worker.close()
        await runner
    job = await queue.add("later", None)
    assert await queue.get_job_counts("waiting", "active") == {"waiting": 1, "active": 0}
    fetched = await queue.get_job(job.id)
    assert fetched is not None and fetched.attempts_made == 0


async def test_a_claim_halted_by_close_takes_nothing_and_leaves_the_marker(
    queue: RedisJobQueue, redis_url: str
) -> None:
    """The claim behind the wait runs when close() ends the wait: with the halt key written
    first, it claims nothing, and puts the marker back for the job left waiting. The job is
    made claimable without waking the wait: added while the queue is paused (no marker), then
    the pause flag dropped by hand (no resume, which would wake it)."""
    await queue.pause()
    job = await queue.add("waiting", None)
    worker = JobWorker(queue, lambda job: asyncio.sleep(0))
    runner = asyncio.create_task(worker.run())
    await asyncio.sleep(0.3)  # in its wait by then (paused: nothing to claim)
    meta = queue_key(queue, "meta")
    marker = queue_key(queue, "marker")
    with Resp.of(redis_url) as raw:
        assert raw.command("HDEL", meta, "paused") == 1
        assert raw.command("ZSCORE", marker, "w") is None
        unblocks = _unblocks(redis_url)
        await worker.close()
        await runner
        assert _unblocks(redis_url) > unblocks  # the wait was ended, its claim ran
        assert raw.command("ZSCORE", marker, "w") == "0"
    fetched = await queue.get_job(job.id)
    assert fetched is not None
    assert (fetched.state, fetched.attempts_made) == ("waiting", 0)


async def test_without_client_commands_the_worker_waits_then_claims(
    own_redis: MakeServer,
) -> None:
    server = own_redis()
    server.start()
    with Resp.of(server.url) as raw:
        assert (
            raw.command("ACL", "SETUSER", "noclient", "on", ">pw", "~*", "&*", "+@all", "-client")
            == "OK"
        )
    url = f"redis://noclient:pw@127.0.0.1:{server.port}/0"
    queue = RedisJobQueue("noclient", url)
    done: list[str] = []
    finished = asyncio.Event()

    async def work(job: Job) -> None:
        done.append(job.id)
        if len(done) == 3:
            finished.set()

    worker = JobWorker(queue, work, concurrency=2)
    runner = asyncio.create_task(worker.run())
    for _ in range(3):
        await asyncio.sleep(0.1)
        await queue.add("j", None)
    await asyncio.wait_for(finished.wait(), 30)
    await worker.close()
    await runner
    assert await queue.get_job_counts("completed") == {"completed": 3}
    await queue.close()
