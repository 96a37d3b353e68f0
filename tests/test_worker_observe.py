"""A worker's heartbeats and metrics records (`lanemq.worker._observe`) against a backend that
refuses them for a while: the worker goes on processing, each failure reaches the ``error``
hooks, and the counts taken meanwhile are recorded once the backend answers again."""

from __future__ import annotations

import asyncio
from typing import Any

from lanemq import InMemoryJobQueue, Job, JobWorker, QueueMetrics
from support import eventually

LIMIT = 10.0


class Unobservable(InMemoryJobQueue):
    """Refuses heartbeats and metrics records while ``down`` is set (jobs go on as usual)."""

    def __init__(self) -> None:
        super().__init__("unobservable")
        self.down = True

    def _check(self) -> None:
        if self.down:
            raise ConnectionError("backend unavailable")

    async def heartbeat_worker(self, *args: Any, **kwargs: Any) -> None:
        self._check()
        await super().heartbeat_worker(*args, **kwargs)

    async def record_metrics(self, *args: Any, **kwargs: Any) -> None:
        self._check()
        await super().record_metrics(*args, **kwargs)


async def test_refused_observation_goes_to_the_error_hooks_and_the_counts_wait() -> None:
    queue = Unobservable()
    errors: list[BaseException] = []

    async def work(job: Job) -> int:
        return int(job.data)

    worker = JobWorker(queue, work, metrics_max_data_points=10, heartbeat_interval=1.0)
    worker.on("error", errors.append)
    jobs = await queue.add_bulk([("w", i) for i in range(3)])
    async with worker:
        assert await asyncio.wait_for(asyncio.gather(*(j.wait() for j in jobs)), LIMIT) == [0, 1, 2]

        async def refused_twice() -> bool:  # the first heartbeat, then a record
            return len(errors) >= 2

        await eventually(refused_twice, "refused heartbeats and records", LIMIT)
        assert all(isinstance(e, ConnectionError) for e in errors)
        assert await queue.get_metrics("completed") == QueueMetrics(0, [], 0, None)
        assert await queue.get_workers() == []

        queue.down = False

        async def recorded() -> bool:
            metrics = await queue.get_metrics("completed")
            return metrics.count == 3 and bool(await queue.get_workers())

        await eventually(recorded, "the waiting counts and a heartbeat", LIMIT)
        # Later jobs are counted too.
        more = await queue.add("w", 3)
        assert await asyncio.wait_for(more.wait(), LIMIT) == 3
    assert (await queue.get_metrics("completed")).count == 4
    assert await queue.get_workers() == []
    assert worker.processed == 4
