"""lanemq's adapter: `lanemq.RedisJobQueue` and `lanemq.JobWorker`."""

from __future__ import annotations

from typing import Any

from _support import build_profile

from comparison.adapter import Adapter, Hook, package_version, python_label


class LanemqAdapter(Adapter):
    """`lanemq.RedisJobQueue` and `lanemq.JobWorker`."""

    system = "lanemq"

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

        self.run_evented_worker(JobWorker(self.queue, noop, concurrency=concurrency), hook)

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
