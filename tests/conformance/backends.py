"""The backends the conformance suite runs against. Each entry makes a fresh, empty queue
with a unique name and returns a cleanup coroutine; every backend must pass the suite
unchanged."""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable
from pathlib import Path

from lanemq import InMemoryJobQueue, JobQueue, LocalJobQueue, RedisJobQueue

_names = itertools.count(1)

Cleanup = Callable[[], Awaitable[None]]
Factory = Callable[[Path, Callable[[], str]], Awaitable[tuple[JobQueue, Cleanup]]]


async def _memory(tmp_path: Path, redis_url: Callable[[], str]) -> tuple[JobQueue, Cleanup]:
    queue = InMemoryJobQueue(f"conformance-{next(_names)}")

    async def cleanup() -> None:
        await queue.obliterate(force=True)

    return queue, cleanup


async def _local(tmp_path: Path, redis_url: Callable[[], str]) -> tuple[JobQueue, Cleanup]:
    queue = LocalJobQueue(f"conformance-{next(_names)}", tmp_path)

    async def cleanup() -> None:
        await queue.obliterate(force=True)

    return queue, cleanup


async def _redis(tmp_path: Path, redis_url: Callable[[], str]) -> tuple[JobQueue, Cleanup]:
    n = next(_names)
    # A prefix per test: tests never see each other's keys on the shared server.
    queue = RedisJobQueue(f"conformance-{n}", redis_url(), prefix=f"t{n}")

    async def cleanup() -> None:
        await queue.obliterate(force=True)

    return queue, cleanup


BACKENDS: dict[str, Factory] = {"memory": _memory, "local": _local, "redis": _redis}

Sibling = Callable[[JobQueue, str], JobQueue]


def _memory_sibling(queue: JobQueue, name: str) -> JobQueue:
    assert isinstance(queue, InMemoryJobQueue)
    return InMemoryJobQueue(name, group=queue.group)


def _redis_sibling(queue: JobQueue, name: str) -> JobQueue:
    assert isinstance(queue, RedisJobQueue)
    return RedisJobQueue(name, queue.url, prefix=queue.prefix)


def _local_sibling(queue: JobQueue, name: str) -> JobQueue:
    assert isinstance(queue, LocalJobQueue)
    return LocalJobQueue(name, queue.path.parent)


#: Another queue of the same backend as ``queue`` (for flows spanning queues).
SIBLINGS: dict[str, Sibling] = {
    "memory": _memory_sibling,
    "local": _local_sibling,
    "redis": _redis_sibling,
}
