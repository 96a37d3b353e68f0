"""A producer for fault and failover tests: adds jobs until told to stop, counting the adds
the server acknowledged and those refused (not acknowledged: each may or may not be there)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import lanemq


@dataclass
class Producer:
    queue: lanemq.JobQueue
    #: seconds between adds, and after a refused one
    pace: float = 0.005
    pause: float = 0.05
    #: the errors that count as a refused add (any other ends the producer, and the test)
    refusals: tuple[type[Exception], ...] = (lanemq.BackendConnectionError, lanemq.StorageError)
    acknowledged: list[str] = field(default_factory=list)
    refused: int = 0
    errors: list[str] = field(default_factory=list)
    producing: bool = True

    async def run(self) -> None:
        n = 0
        while self.producing:
            try:
                job = await self.queue.add("work", {"n": n})
            except self.refusals as error:
                self.refused += 1
                self.errors.append(f"add: {error}")
                await asyncio.sleep(self.pause)
                continue
            self.acknowledged.append(job.id)
            n += 1
            await asyncio.sleep(self.pace)
