"""ChasquiMQ's adapter: `chasquimq.Queue` and `chasquimq.Worker` (a Rust engine on Redis
Streams, asyncio handlers). It acknowledges with XACKDEL, a Redis 8.2 command, so on an
older server its smoke test fails and the system is reported unavailable."""

from __future__ import annotations

import asyncio
from typing import Any

from comparison.adapter import Adapter, Hook, package_version, python_label


class ChasquimqAdapter(Adapter):
    """Completion is seen when the handler has returned (the engine acks after that, off the
    Python side): on the loop's next turn, a little before the ack is in Redis."""

    system = "chasquimq"

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.name = "bench"

    def version(self) -> str:
        return f"chasquimq {package_version('chasquimq')}, {python_label()}"

    async def open(self, name: str) -> None:
        from chasquimq import Queue

        self.name = name
        self.queue = Queue(name, redis_url=self.url)

    async def add(self, i: int) -> None:
        await self.queue.add("noop", {"i": i})

    async def add_bulk(self, start: int, stop: int) -> None:
        await self.queue.add_bulk([{"name": "noop", "data": {"i": i}} for i in range(start, stop)])

    async def start_worker(self, concurrency: int, hook: Hook) -> None:
        from chasquimq import Worker

        loop = asyncio.get_running_loop()

        async def noop(job: Any) -> None:
            loop.call_soon(hook, True)
            return None

        self.worker = Worker(self.name, noop, redis_url=self.url, concurrency=concurrency)
        self.task = loop.create_task(self.worker.run())
        await asyncio.sleep(0)

    async def stop_worker(self) -> None:
        await self.worker.close()
        if self.task is not None:
            await asyncio.gather(self.task, return_exceptions=True)

    async def counts(self) -> dict[str, int]:
        return {}  # no count API; the completion hook's count is the check

    async def close(self) -> None:
        await self.queue.close()
