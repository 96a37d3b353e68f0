"""A worker survives a backend that fails for a while (a Redis restart, a full disk): it keeps
the outcomes it could not report, backs off instead of spinning, tells its error hook, and
resumes by itself once the backend answers again."""

from __future__ import annotations

import asyncio
from typing import Any

from lanemq import InMemoryJobQueue, Job, JobWorker


class FlakyQueue(InMemoryJobQueue):
    """Fails every call to claim, complete_many and complete_and_claim while ``down`` is set."""

    def __init__(self) -> None:
        super().__init__("flaky")
        self.down = False
        self.failed_calls = 0

    def _check(self) -> None:
        if self.down:
            self.failed_calls += 1
            raise ConnectionError("backend unavailable")

    async def claim(self, *args: Any, **kwargs: Any) -> list[Job]:
        self._check()
        return await super().claim(*args, **kwargs)

    async def complete_many(self, *args: Any, **kwargs: Any) -> list[tuple[str, str]]:
        self._check()
        return await super().complete_many(*args, **kwargs)

    async def complete_and_claim(
        self, *args: Any, **kwargs: Any
    ) -> tuple[list[tuple[str, str]], list[Job]]:
        self._check()
        return await super().complete_and_claim(*args, **kwargs)


async def test_worker_backs_off_keeps_outcomes_and_resumes() -> None:
    queue = FlakyQueue()
    errors: list[BaseException] = []
    started = asyncio.Event()

    async def work(job: Job) -> str:
        started.set()
        await asyncio.sleep(0.05)
        return f"done {job.id}"

    worker = JobWorker(queue, work, concurrency=2)
    worker.on("error", errors.append)
    first = await queue.add("job", 1)
    async with worker:
        await asyncio.wait_for(started.wait(), 5)
        queue.down = True  # the job finishes while its outcome cannot be reported
        await asyncio.sleep(0.6)
        assert await queue.get_state(first.id) == "active"
        # Backing off (0.1 s, 0.2 s, 0.4 s, ...), not spinning.
        assert 1 <= queue.failed_calls <= 6, queue.failed_calls
        assert errors and isinstance(errors[0], ConnectionError)
        queue.down = False
        second = await queue.add("job", 2)
        assert await asyncio.wait_for(first.wait(), 5) == "done 1"
        assert await asyncio.wait_for(second.wait(), 5) == "done 2"
    assert worker.processed == 2
