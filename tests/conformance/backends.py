"""The backends the conformance suite runs against. Each entry makes a fresh, empty queue
with a unique name and returns a cleanup coroutine; later backends (local file, Redis) add
their entry here and must pass the suite unchanged."""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable
from pathlib import Path

from lanemq import InMemoryJobQueue, JobQueue, LocalJobQueue

_names = itertools.count(1)

Factory = Callable[[Path], Awaitable[tuple[JobQueue, Callable[[], Awaitable[None]]]]]


async def _memory(tmp_path: Path) -> tuple[JobQueue, Callable[[], Awaitable[None]]]:
    queue = InMemoryJobQueue(f"conformance-{next(_names)}")

    async def cleanup() -> None:
        await queue.obliterate(force=True)

    return queue, cleanup


async def _local(tmp_path: Path) -> tuple[JobQueue, Callable[[], Awaitable[None]]]:
    queue = LocalJobQueue(f"conformance-{next(_names)}", tmp_path)

    async def cleanup() -> None:
        await queue.obliterate(force=True)

    return queue, cleanup


BACKENDS: dict[str, Factory] = {"memory": _memory, "local": _local}
