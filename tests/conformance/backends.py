"""The backends the conformance suite runs against. Each entry makes a fresh, empty queue
with a unique name and returns a cleanup coroutine; every backend must pass the suite
unchanged."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
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


def queue_fixture(*names: str) -> Any:
    """A ``queue`` fixture for a test module outside the suite: a fresh queue per test on each
    backend of ``names`` (the Redis one on the session's own server), cleaned up after it.
    Assign it to ``queue`` in the module."""

    @pytest.fixture(params=list(names))
    async def queue(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[JobQueue]:
        made, cleanup = await BACKENDS[request.param](
            tmp_path, lambda: str(request.getfixturevalue("redis_url"))
        )
        try:
            yield made
        finally:
            await cleanup()

    return queue
