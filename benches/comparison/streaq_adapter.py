"""streaq's adapter: `streaq.Worker` (Redis Streams), which is both the producer and the
consumer; completion seen once the worker has recorded a task's result."""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack
from typing import Any

from comparison.adapter import Adapter, Hook, package_version, python_label


async def noop(i: int) -> None:
    return None


class StreaqAdapter(Adapter):
    """A producer `Worker` (entered as a context, never run) enqueues; a second `Worker` with
    the concurrency asked for runs the tasks. The worker's `finish_task` (its XACK, XDEL and
    the stored result, in one transaction) is wrapped: the hook hears a task once that has
    returned, which is when streaq itself counts it completed."""

    system = "streaq"
    bulk_note = "streaq: Worker.enqueue_many (one pipeline per batch)"

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.stack = AsyncExitStack()
        self.name = "bench"

    def version(self) -> str:
        return f"streaq {package_version('streaq')}, {python_label()}"

    def _worker(self, concurrency: int, hook: Hook | None = None) -> Any:
        from streaq import Worker

        class HookedWorker(Worker):  # type: ignore[misc]
            async def finish_task(self, msg: Any, *args: Any, **kwargs: Any) -> None:
                await super().finish_task(msg, *args, **kwargs)
                if hook is not None and kwargs.get("finish"):
                    hook(bool(kwargs.get("success")))

        worker = HookedWorker(
            redis_url=self.url,
            queue_name=self.name,
            concurrency=concurrency,
            handle_signals=False,
        )
        return worker, worker.task(noop)

    async def open(self, name: str) -> None:
        self.name = name
        self.queue, self.noop_task = self._worker(16)
        await self.stack.enter_async_context(self.queue)

    async def add(self, i: int) -> None:
        await self.noop_task.enqueue(i)

    async def add_bulk(self, start: int, stop: int) -> None:
        await self.queue.enqueue_many([self.noop_task.enqueue(i) for i in range(start, stop)])

    async def start_worker(self, concurrency: int, hook: Hook) -> None:
        self.worker, _ = self._worker(concurrency, hook)
        self.task = asyncio.get_running_loop().create_task(self.worker.run_async())
        await asyncio.sleep(0)

    async def stop_worker(self) -> None:
        if self.task is not None:
            self.task.cancel()
            await asyncio.gather(self.task, return_exceptions=True)

    async def counts(self) -> dict[str, int]:
        return {"waiting": await self.queue.queue_size()}

    async def close(self) -> None:
        await self.stack.aclose()
