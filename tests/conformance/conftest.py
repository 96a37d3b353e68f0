"""Fixtures of the conformance suite: every test that takes ``queue`` runs once per backend."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from lanemq import JobQueue

from .backends import BACKENDS


@pytest.fixture(params=sorted(BACKENDS))
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def queue(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> AsyncIterator[JobQueue]:
    """A fresh, empty queue on the backend under test."""

    def redis_url() -> str:  # started only for the backends that need it
        return str(request.getfixturevalue("redis_url"))

    made, cleanup = await BACKENDS[backend](tmp_path, redis_url)
    try:
        yield made
    finally:
        await cleanup()


@pytest.fixture
async def sibling(queue: JobQueue) -> AsyncIterator[Callable[[str], JobQueue]]:
    """Makes another queue of the queue's backend (``<queue name>-<suffix>``), emptied after
    the test: flows may span the two."""
    made: list[JobQueue] = []

    def make(suffix: str) -> JobQueue:
        other = queue.sibling(f"{queue.name}-{suffix}")
        made.append(other)
        return other

    try:
        yield make
    finally:
        for other in made:
            # Through the open object of that queue (a test may have closed the one it made).
            await queue.sibling(other.name).obliterate(force=True)
