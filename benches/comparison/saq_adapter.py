"""saq's adapter: `saq.Queue` (Redis) and `saq.Worker`."""

from __future__ import annotations

import asyncio
from typing import Any

from comparison.adapter import Adapter, Hook, package_version, python_label


class SaqAdapter(Adapter):
    """`saq.Queue` (Redis) and `saq.Worker`; completion seen by the ``after_process`` hook."""

    system = "saq"
    bulk_note = "saq has no bulk enqueue: asyncio.gather of enqueue() per batch"

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.completed = 0
        self.failed = 0

    def version(self) -> str:
        return f"saq {package_version('saq')}, {python_label()}"

    async def open(self, name: str) -> None:
        from saq import Queue

        self.queue = Queue.from_url(self.url, name=name)
        await self.queue.connect()

    async def add(self, i: int) -> None:
        await self.queue.enqueue("noop", i=i)

    async def add_bulk(self, start: int, stop: int) -> None:
        await asyncio.gather(*(self.queue.enqueue("noop", i=i) for i in range(start, stop)))

    async def start_worker(self, concurrency: int, hook: Hook) -> None:
        from saq import Worker
        from saq.job import Status

        async def noop(ctx: Any, **kwargs: Any) -> None:
            return None

        async def after_process(ctx: Any) -> None:  # async: a plain function runs in a thread
            job = ctx.get("job")
            if job is None:
                return
            ok = job.status == Status.COMPLETE
            if ok:
                self.completed += 1
            else:
                self.failed += 1
            hook(ok)

        self.worker = worker = Worker(
            self.queue,
            functions=[("noop", noop)],
            concurrency=concurrency,
            after_process=[after_process],
        )
        self.task = asyncio.get_running_loop().create_task(worker.start())
        await asyncio.sleep(0)

    async def stop_worker(self) -> None:
        await self.worker.stop()
        if self.task is not None:
            await asyncio.gather(self.task, return_exceptions=True)

    async def counts(self) -> dict[str, int]:
        return {
            "waiting": await self.queue.count("queued"),
            "active": await self.queue.count("active"),
            "incomplete": await self.queue.count("incomplete"),
        }

    async def close(self) -> None:
        await self.queue.disconnect()
