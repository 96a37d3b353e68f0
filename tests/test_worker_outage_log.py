"""A worker whose Redis goes away logs the outage of its chores (heartbeat, renewals, stalled
recovery) once as it starts and once as it ends, with no traceback, however many heartbeats
fail meanwhile; the ``error`` hooks still get every failure."""

from __future__ import annotations

import asyncio
import logging
import time

import pytest
from lanemq import BackendConnectionError, Job, JobWorker, RedisJobQueue
from redis_support import WAIT, MakeServer
from support import eventually, redis_prefix

#: Heartbeats every second: an outage of OUTAGE seconds fails several of them.
HEARTBEAT = 1.0
OUTAGE = 3.5


async def _noop(job: Job) -> None:
    return None


async def test_a_redis_outage_is_logged_once_as_it_starts_and_once_as_it_ends(
    own_redis: MakeServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="lanemq")
    server = own_redis()
    server.start()
    queue = RedisJobQueue("outage-log", server.url, prefix=redis_prefix())
    worker = JobWorker(queue, _noop, name="w-outage", heartbeat_interval=HEARTBEAT)
    errors: list[BaseException] = []
    worker.on("error", errors.append)

    async def heartbeat_after(since_ms: int) -> bool:
        try:
            infos = await queue.get_workers()
        except BackendConnectionError:
            return False
        return any(i.id == worker.id and i.last_heartbeat > since_ms for i in infos)

    async with worker:
        await eventually(lambda: heartbeat_after(0), "the first heartbeat", WAIT)
        server.stop()
        await asyncio.sleep(OUTAGE)
        server.start()  # same port (and an empty keyspace: the worker registers again)
        restarted = int(time.time() * 1000)
        await eventually(lambda: heartbeat_after(restarted), "a heartbeat after the outage", WAIT)
    lines = [r for r in caplog.records if r.name == "lanemq.worker"]
    assert [r for r in lines if r.exc_info] == [], "no traceback for an unreachable backend"
    outage = [r.getMessage() for r in lines if "backend unreachable" in r.getMessage()]
    back = [r.getMessage() for r in lines if "backend reachable again" in r.getMessage()]
    assert len(outage) == 1, outage
    assert outage[0].startswith("worker w-outage: backend unreachable (heartbeat failed: ")
    assert back == ["worker w-outage: backend reachable again (heartbeat)"]
    failures = [e for e in errors if isinstance(e, BackendConnectionError)]
    assert len(failures) >= 2, errors  # the hooks heard of each failed heartbeat (and more)
