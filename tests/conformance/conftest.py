"""Fixtures of the conformance suite: every test that takes ``queue`` runs once per backend."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from lanemq import JobQueue

from .backends import BACKENDS, LOCAL_NORMAL_MODULES


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselects the ``local-normal`` runs outside `LOCAL_NORMAL_MODULES`."""
    kept: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        spec = getattr(item, "callspec", None)
        normal = spec is not None and spec.params.get("backend") == "local-normal"
        in_suite = item.path.parent == Path(__file__).parent
        if normal and in_suite and item.path.name not in LOCAL_NORMAL_MODULES:
            dropped.append(item)
        else:
            kept.append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


@pytest.fixture(params=sorted(BACKENDS))
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def queue(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> AsyncIterator[JobQueue]:
    """A fresh, empty queue on the backend under test."""

    def fixture(name: str) -> str:  # a server starts only for the backends that need it
        return str(request.getfixturevalue(name))

    made, cleanup = await BACKENDS[backend](tmp_path, fixture)
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
