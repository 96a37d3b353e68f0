"""taskiq's adapter: taskiq-redis's `RedisStreamBroker` (Redis Streams with acknowledgements,
the broker taskiq-redis's README starts with) and taskiq's `Receiver`, the loop its worker
command runs; no result backend (the no-op task's None result is not needed)."""

from __future__ import annotations

import asyncio
from typing import Any

from comparison.adapter import Adapter, Hook, package_version, python_label


async def noop(i: int) -> None:
    return None


class TaskiqAdapter(Adapter):
    """One broker per side: the producer's `kiq`s an XADD each; the worker's `Receiver` with
    ``max_async_tasks`` = the concurrency. A job is complete when its XACK has returned: the
    broker's ack callable is wrapped to call the hook then (the receiver acks after the task
    ran and its result went to the result backend, a no-op here)."""

    system = "taskiq"
    bulk_note = "taskiq has no bulk kick: asyncio.gather of kiq() per batch"

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.name = "bench"
        self.worker_broker: Any = None
        self.finish: asyncio.Event | None = None

    def version(self) -> str:
        return (
            f"taskiq {package_version('taskiq')}, taskiq-redis {package_version('taskiq-redis')}"
            f", {python_label()}"
        )

    def _broker(self, hook: Hook | None = None) -> tuple[Any, Any]:
        from taskiq_redis import RedisStreamBroker

        class HookedBroker(RedisStreamBroker):  # type: ignore[misc]
            def _ack_generator(self, id: str, queue_name: str) -> Any:
                ack = super()._ack_generator(id=id, queue_name=queue_name)
                if hook is None:
                    return ack

                async def ack_and_tell() -> None:
                    await ack()
                    hook(True)

                return ack_and_tell

        broker = HookedBroker(self.url, queue_name=f"taskiq-{self.name}")
        return broker, broker.task(task_name="noop")(noop)

    async def open(self, name: str) -> None:
        self.name = name
        self.queue, self.noop_task = self._broker()
        await self.queue.startup()  # creates the consumer group, from the stream's end

    async def add(self, i: int) -> None:
        await self.noop_task.kiq(i)

    async def add_bulk(self, start: int, stop: int) -> None:
        await asyncio.gather(*(self.noop_task.kiq(i) for i in range(start, stop)))

    async def start_worker(self, concurrency: int, hook: Hook) -> None:
        from taskiq.receiver import Receiver

        broker, _ = self._broker(hook)
        broker.is_worker_process = True
        await broker.startup()
        self.worker_broker = broker
        self.finish = asyncio.Event()
        receiver = Receiver(broker, max_async_tasks=concurrency, run_startup=False)
        self.task = asyncio.get_running_loop().create_task(receiver.listen(self.finish))
        await asyncio.sleep(0)

    async def stop_worker(self) -> None:
        # The receiver's listen() does not return while its XREADGROUP blocks, nor always on
        # cancellation: bounded waits, as the clock has stopped already.
        if self.finish is not None:
            self.finish.set()
        if self.task is not None:
            self.task.cancel()
            await asyncio.wait({self.task}, timeout=3)
        if self.worker_broker is not None:
            try:
                await asyncio.wait_for(self.worker_broker.shutdown(), 3)
            except (asyncio.TimeoutError, Exception):
                pass
            self.worker_broker = None

    async def counts(self) -> dict[str, int]:
        from redis.asyncio import Redis

        async with Redis(connection_pool=self.queue.connection_pool) as redis:
            stream = f"taskiq-{self.name}"
            groups = await redis.xinfo_groups(stream)
            lag = sum(int(group.get("lag") or 0) for group in groups)
            pending = sum(int(group.get("pending") or 0) for group in groups)
        return {"waiting": lag, "active": pending}

    async def close(self) -> None:
        await self.queue.shutdown()
