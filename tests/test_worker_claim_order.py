"""A worker that claims ahead starts its jobs in the order its claims took them, even when the
replies of its two calls in flight come back in the other order. They do on Redis while a
queue's wire (the socket its loop drives) opens: the first calls go the ordinary way, through
the runtime, and the next one, made on the wire, may overtake them. A fresh queue object has no
wire yet, so each round below starts in that window."""

from __future__ import annotations

import asyncio

import pytest
from lanemq import Job, JobWorker, RedisJobQueue

ROUNDS = 20  # (the replies crossed in about 1 round in 5 before the worker kept claim order)


@pytest.mark.parametrize("server", ["redis_url", "redis_cluster_url"])
async def test_jobs_start_in_claim_order_while_the_queues_wire_opens(
    request: pytest.FixtureRequest, server: str
) -> None:
    url = str(request.getfixturevalue(server))
    for n in range(ROUNDS):
        queue = RedisJobQueue(f"claim-order-{n}", url, prefix=f"{{claim-order-{server}-{n}}}")
        try:
            started = await _start_order(queue)
        finally:
            await queue.obliterate(force=True)
            await queue.close()
        assert started == ["first", "second"], f"round {n}"


async def _start_order(queue: RedisJobQueue) -> list[str]:
    """Adds two jobs, then runs a worker of concurrency 1 that claims one ahead (two calls in
    flight, one job each) until both started; the jobs' data in the order they started."""
    started: list[str] = []
    both = asyncio.Event()

    async def record(job: Job) -> None:
        started.append(job.data)
        if len(started) == 2:
            both.set()

    await queue.add("j", "first")
    await queue.add("j", "second")
    worker = JobWorker(queue, record, concurrency=1, prefetch=1)
    task = asyncio.get_running_loop().create_task(worker.run())
    try:
        await asyncio.wait_for(both.wait(), 10.0)
    finally:
        await worker.close(grace=1.0)
        await task
    return started
