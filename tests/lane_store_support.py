"""The ``lane_store`` fixture: stores of the shared lanes' contract (`LaneStore`,
python/lanemq/lanes/_store.py), on every backend of ``BACKENDS``. A test gets a factory,
``await make(name)``, so it can open several stores on one backend and name (several
"processes" sharing one store). Another backend is one entry of ``BACKENDS`` and one opener in
``OPENERS`` (an opener may take its server from other fixtures through ``request``)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
from lanemq._core import LocalLaneStore, RedisLaneStore
from lanemq.lanes._store import LaneSpec, LaneStore

MakeStore = Callable[[str], Awaitable[LaneStore]]
Opener = Callable[[pytest.FixtureRequest, Path, str], Awaitable[LaneStore]]


async def open_local(request: pytest.FixtureRequest, tmp_path: Path, name: str) -> LaneStore:
    """The SQLite store ``name`` of the test's own directory (made by the store itself)."""
    return await LocalLaneStore.open(tmp_path / "lanes", name)


#: A test's own suffix of its Redis stores' names: the session's redis-server is shared, and
#: the same name opened twice in one test is one store.
_REDIS_SUFFIX = pytest.StashKey[str]()


async def open_redis(request: pytest.FixtureRequest, tmp_path: Path, name: str) -> LaneStore:
    """The Redis store ``name`` (made the test's own) on the session's redis-server."""
    url: str = request.getfixturevalue("redis_url")
    suffix = request.node.stash.setdefault(_REDIS_SUFFIX, uuid.uuid4().hex[:12])
    return await RedisLaneStore.open(url, f"{name}-{suffix}")


BACKENDS = ["local", "redis"]
OPENERS: dict[str, Opener] = {"local": open_local, "redis": open_redis}


@pytest.fixture(name="lane_store", params=BACKENDS)
async def lane_store_factory(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[MakeStore]:
    """``make(name)`` opens the store ``name`` of the test's backend; every store opened is
    closed at teardown."""
    opener = OPENERS[request.param]
    opened: list[LaneStore] = []

    async def make(name: str) -> LaneStore:
        store = await opener(request, tmp_path, name)
        opened.append(store)
        return store

    try:
        yield make
    finally:
        for store in opened:
            store.close()


def spec(
    lane_id: str,
    priority: int,
    max_concurrency: int,
    min_concurrency: int = 0,
    rate: tuple[int, int] | None = None,
    boost: tuple[int, list[tuple[float, int]]] | None = None,
) -> LaneSpec:
    """A lane as `LaneStore.setup` takes it: ``rate`` is (permits, per_ms), ``boost`` is
    (deadline_ms, steps)."""
    permits, per_ms = rate if rate is not None else (None, None)
    deadline, steps = boost if boost is not None else (None, [])
    return (
        lane_id,
        priority,
        min_concurrency,
        max_concurrency,
        permits,
        per_ms,
        deadline,
        steps,
    )
