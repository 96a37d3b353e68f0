"""The backends the conformance suite runs against. Each entry makes a fresh, empty queue
with a unique name and returns a cleanup coroutine; every backend must pass the suite
unchanged. A factory gets the test's directory and a function that gives a session fixture's
value by name (the servers start only for the backends that need them)."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from lanemq import InMemoryJobQueue, JobQueue, LocalJobQueue, RedisJobQueue

_names = itertools.count(1)

Cleanup = Callable[[], Awaitable[None]]
Fixture = Callable[[str], str]
Factory = Callable[[Path, Fixture], Awaitable[tuple[JobQueue, Cleanup]]]


def _obliterated_after(queue: JobQueue) -> tuple[JobQueue, Cleanup]:
    """The queue, with the cleanup that empties it after the test (every backend's)."""

    async def cleanup() -> None:
        await queue.obliterate(force=True)

    return queue, cleanup


async def _memory(tmp_path: Path, fixture: Fixture) -> tuple[JobQueue, Cleanup]:
    queue = InMemoryJobQueue(f"conformance-{next(_names)}")
    return _obliterated_after(queue)


async def _local(tmp_path: Path, fixture: Fixture) -> tuple[JobQueue, Cleanup]:
    queue = LocalJobQueue(f"conformance-{next(_names)}", tmp_path)
    return _obliterated_after(queue)


async def _local_normal(tmp_path: Path, fixture: Fixture) -> tuple[JobQueue, Cleanup]:
    # sync="normal" changes when commits reach the disk, never what they hold.
    queue = LocalJobQueue(f"conformance-{next(_names)}", tmp_path, sync="normal")
    return _obliterated_after(queue)


async def _redis(tmp_path: Path, fixture: Fixture) -> tuple[JobQueue, Cleanup]:
    n = next(_names)
    # A prefix per test: tests never see each other's keys on the shared server.
    queue = RedisJobQueue(f"conformance-{n}", fixture("redis_url"), prefix=f"t{n}")
    return _obliterated_after(queue)


async def _valkey(tmp_path: Path, fixture: Fixture) -> tuple[JobQueue, Cleanup]:
    # The Redis backend on Valkey 8.1 (the README says "Redis or Valkey"): the same client, the
    # same scripts (a FUNCTION library, as on Redis 7).
    n = next(_names)
    queue = RedisJobQueue(f"conformance-{n}", fixture("valkey_url"), prefix=f"t{n}")
    return _obliterated_after(queue)


async def _redis_cluster(tmp_path: Path, fixture: Fixture) -> tuple[JobQueue, Cleanup]:
    # A node of a Redis Cluster that serves every slot (tests/conftest.py): it enforces the
    # cluster's rule on every key a script touches, declared or built (job hashes, the list
    # `waiting:0`): all in the slot of the keys the call was given, else the script fails.
    # The prefix's hash tag puts every queue of the test in one slot, so flows may span them,
    # as the README tells Redis Cluster users.
    n = next(_names)
    queue = RedisJobQueue(f"conformance-{n}", fixture("redis_cluster_url"), prefix=f"{{t{n}}}")
    return _obliterated_after(queue)


async def _redis_cluster3(tmp_path: Path, fixture: Fixture) -> tuple[JobQueue, Cleanup]:
    # A real cluster of 3 masters (tests/redis_cluster_support.py), by its redis+cluster://
    # URL: each test's prefix is its own hash tag, so the tests' queues land on different
    # masters, and a test's queues share its slot (flows may span them).
    n = next(_names)
    queue = RedisJobQueue(f"conformance-{n}", fixture("redis_cluster3_url"), prefix=f"{{t{n}}}")
    return _obliterated_after(queue)


BACKENDS: dict[str, Factory] = {
    "memory": _memory,
    "local": _local,
    "local-normal": _local_normal,
    "redis": _redis,
    "redis-cluster": _redis_cluster,
    "redis-cluster3": _redis_cluster3,
    "valkey": _valkey,
}

#: The modules that run on ``local-normal`` too (conftest.py deselects it elsewhere): the
#: writes, claims, leases and flows (across files too) that the sync level could change,
#: bounded so the variant costs the suite seconds, not another full local run.
LOCAL_NORMAL_MODULES = frozenset(
    {
        "test_smoke.py",
        "test_batches.py",
        "test_finish_order.py",
        "test_orphaned_jobs.py",
        "test_leases.py",
        "test_worker.py",
        "test_flows.py",
    }
)


def queue_fixture(*names: str) -> Any:
    """A ``queue`` fixture for a test module outside the suite: a fresh queue per test on each
    backend of ``names`` (the Redis one on the session's own server), cleaned up after it.
    Assign it to ``queue`` in the module."""

    @pytest.fixture(params=list(names))
    async def queue(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[JobQueue]:
        made, cleanup = await BACKENDS[request.param](
            tmp_path, lambda name: str(request.getfixturevalue(name))
        )
        try:
            yield made
        finally:
            await cleanup()

    return queue
