"""lanemq's adapter: `lanemq.RedisJobQueue` and `lanemq.JobWorker`."""

from __future__ import annotations

import asyncio
from typing import Any

from _support import build_profile

from comparison.adapter import Adapter, Hook, package_version, python_label


class LanemqAdapter(Adapter):
    """`lanemq.RedisJobQueue` and `lanemq.JobWorker`."""

    system = "lanemq"

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.queue: Any = None
        self.worker: Any = None
        self.task: asyncio.Task[None] | None = None

    def version(self) -> str:
        return f"lanemq {package_version('lanemq')} ({build_profile()} build), {python_label()}"

    async def open(self, name: str) -> None:
        from lanemq import RedisJobQueue

        self.queue = RedisJobQueue(name, self.url, prefix="lanemqbench")

    async def add(self, i: int) -> None:
        await self.queue.add("noop", {"i": i})

    async def add_bulk(self, start: int, stop: int) -> None:
        await self.queue.add_bulk([("noop", {"i": i}) for i in range(start, stop)])

    async def start_worker(self, concurrency: int, hook: Hook) -> None:
        from lanemq import JobWorker

        async def noop(job: Any) -> None:
            return None

        self.worker = worker = JobWorker(self.queue, noop, concurrency=concurrency)
        worker.on("completed", lambda job, result: hook(True))
        worker.on("failed", lambda job, error: hook(False))
        self.task = asyncio.get_running_loop().create_task(worker.run())

    async def stop_worker(self) -> None:
        await self.worker.close()
        if self.task is not None:
            await self.task

    async def counts(self) -> dict[str, int]:
        counts: dict[str, int] = await self.queue.get_job_counts(
            "waiting", "active", "completed", "failed"
        )
        return counts

    async def close(self) -> None:
        await self.queue.close()
