"""BullMQ (Python)'s adapter: `bullmq.Queue` and `bullmq.Worker`, the official Python port."""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path
from typing import Any

from comparison.adapter import Adapter, Hook, package_version, python_label
from comparison.specs import QUEUE


class BullmqPythonAdapter(Adapter):
    """`bullmq.Queue` and `bullmq.Worker` (the official Python port)."""

    system = "bullmq-python"

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.name = QUEUE

    def version(self) -> str:
        return f"bullmq {package_version('bullmq')}, {python_label()}"

    async def open(self, name: str) -> None:
        from bullmq import Queue

        self.name = name
        self.queue = Queue(name, {"connection": self.url})

    async def add(self, i: int) -> None:
        await self.queue.add("noop", {"i": i})

    async def add_bulk(self, start: int, stop: int) -> None:
        await self.queue.addBulk([{"name": "noop", "data": {"i": i}} for i in range(start, stop)])

    async def start_worker(self, concurrency: int, hook: Hook) -> None:
        from bullmq import Worker

        async def noop(job: Any, token: str) -> None:
            return None

        options = {"connection": self.url, "concurrency": concurrency, "autorun": False}
        self.run_evented_worker(Worker(self.name, noop, options), hook)

    async def stop_worker(self) -> None:
        await self.worker.close()
        if self.task is not None:
            await asyncio.gather(self.task, return_exceptions=True)

    async def counts(self) -> dict[str, int]:
        counts: dict[str, int] = await self.queue.getJobCounts(
            "waiting", "active", "completed", "failed"
        )
        return counts

    async def close(self) -> None:
        await self.queue.close()

    def script_names(self) -> dict[str, str]:
        """The package's Lua files, by the SHA1 its EVALSHA calls use."""
        try:
            import bullmq

            commands = Path(bullmq.__file__).parent / "commands"
            return {
                hashlib.sha1(path.read_bytes()).hexdigest(): path.name
                for path in sorted(commands.glob("*.lua"))
            }
        except (ImportError, OSError):
            return {}
