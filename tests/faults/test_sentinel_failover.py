"""A Redis Sentinel failover mid-run (a master, a replica, three sentinels of the test's own:
tests/redis_sentinel_support.py) while a worker process and a producer run on a
``redis+sentinel://`` URL: the sentinels promote the replica, the worker and the producer
follow the new master by themselves (the old one answers READONLY once demoted, or is gone),
no worker stops silently (it completes the jobs added after the failover) and every job the
new master has completes. What an acknowledged add can lose is counted: after a SIGKILL, the
adds the replica had not received yet (asynchronous replication); after ``SENTINEL failover``
nothing, as a coordinated failover waits for the replica to catch up (asserted); and after a
SIGKILL with ``min_replicas_ack=1`` nothing either (asserted): every acknowledged add had
reached the replica (``WAIT``) before the add returned, and adds are refused while the new
master has no replica (until the old server comes back as one)."""

from __future__ import annotations

import asyncio
import signal
import time
from pathlib import Path

import lanemq
import pytest
from producer_support import Producer
from redis_sentinel_support import RedisSentinelSet
from redis_support import RedisServer
from support import eventually, redis_prefix

from .conftest import StartWorker
from .execlog import Runs, report

LIMIT = 60.0  # upper bound of a wait that ends at once when things work
WORKER = ("--concurrency", "10", "--lease", "5.0", "--renew-every", "0.5")
WORKER += ("--stalled-interval", "0.5", "--work", "0.02")


@pytest.fixture
def sentinel_set(tmp_path: Path) -> object:
    found = RedisSentinelSet(tmp_path / "sentinel")
    found.start()
    try:
        yield found
    finally:
        found.stop()


@pytest.mark.parametrize(
    "how", ["SENTINEL failover", "master SIGKILL", "master SIGKILL, min_replicas_ack=1"]
)
async def test_the_worker_and_producer_follow_the_new_master_through_a_failover(
    how: str, sentinel_set: RedisSentinelSet, tmp_path: Path, start_worker: StartWorker
) -> None:
    prefix = redis_prefix()
    log = tmp_path / "runs.log"
    url = sentinel_set.url
    worker = await start_worker(url, "failover", log, *WORKER, "--prefix", prefix)
    acked = how.endswith("min_replicas_ack=1")
    queue = lanemq.RedisJobQueue(
        "failover", url, prefix=prefix, connect_timeout=1.0, min_replicas_ack=1 if acked else 0
    )
    adds = Producer(queue)
    acknowledged = adds.acknowledged

    async def added(n: int) -> bool:
        return len(acknowledged) >= n

    producer = asyncio.create_task(adds.run())
    try:
        await eventually(lambda: added(200), "jobs added before the failover", LIMIT)
        old: RedisServer = sentinel_set.master()
        started = time.monotonic()
        if how == "SENTINEL failover":
            await asyncio.to_thread(sentinel_set.failover)
        else:
            await asyncio.to_thread(sentinel_set.kill_master)
        new = await asyncio.to_thread(sentinel_set.wait_promoted, old)
        promotion = time.monotonic() - started
        if acked:
            # The new master has no replica left, so every add is refused (WAIT 1 cannot be
            # met) until one syncs: the old server comes back as the new master's replica.
            sync = ("--repl-diskless-sync-delay", "0")
            await asyncio.to_thread(old.start, *sync, "--replicaof", "127.0.0.1", str(new.port))
            await asyncio.to_thread(sentinel_set.wait_synced, old)
        first_after = len(acknowledged)  # (adds acknowledged from here on are the new master's)
        await eventually(lambda: added(first_after + 1), "an add after the failover", LIMIT)

        async def first_after_done() -> bool:
            return await queue.get_state(acknowledged[first_after]) == "completed"

        await eventually(first_after_done, "a job added after the failover to complete", LIMIT)
        recovery = time.monotonic() - started
        await eventually(lambda: added(first_after + 200), "adds after the failover", LIMIT)
    finally:
        adds.producing = False
        await producer
    # What asynchronous replication lost: acknowledged adds the promoted replica never got.
    missing = [job_id for job_id in acknowledged if await queue.get_job(job_id) is None]
    kept = [job_id for job_id in acknowledged if job_id not in set(missing)]

    async def states() -> dict[str, int]:
        counts: dict[str, int] = {}
        for job_id in kept:
            state = await queue.get_state(job_id)
            counts[state] = counts.get(state, 0) + 1
        return counts

    async def all_completed() -> bool:
        # (jobs active on a killed master come back once their lease runs out)
        return (await states()).get("completed", 0) == len(kept)

    try:
        await eventually(all_completed, "every job the new master has to complete", LIMIT)
    except AssertionError:
        pass  # the assertions below name what is left
    final = await states()
    assert worker.proc.returncode is None, f"the worker stopped: {worker.stderr()}"
    worker.proc.send_signal(signal.SIGTERM)
    assert (await worker.line()).startswith("processed "), worker.stderr()
    assert await worker.wait() == 0, worker.stderr()
    runs = Runs.read(log)
    report(
        f"sentinel {how}",
        trials=1,
        old_master=old.port,
        new_master=new.port,
        added=len(acknowledged),
        refused_during_failover=adds.refused,
        acknowledged=len(acknowledged),
        completed=final.get("completed", 0),
        lost=len(missing),
        duplicates=runs.duplicates,
        promotion_s=round(promotion, 2),
        recovery_s=round(recovery, 2),
        worker_errors=dict(runs.error_kinds()),
    )
    assert final.get("completed", 0) == len(kept), f"not completed: {final}"
    assert all(job_id in kept for job_id in acknowledged[first_after:]), (
        "an add acknowledged by the new master is missing"
    )
    if how == "SENTINEL failover":
        assert missing == [], "a coordinated failover lost acknowledged adds"
    if acked:
        assert missing == [], "an add acknowledged by a replica (WAIT) was lost"
    await queue.close()
