"""Fixtures of the fault suite: worker processes (`worker_child.py`) started and killed by
PID, and redis-servers of the suite's own (never the one LANEMQ_REDIS_URL names, never
127.0.0.1:6379), durable ones with an append-only file fsynced on every write."""

from __future__ import annotations

import os
import random
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from redis_support import MakeServer, RedisServer
from support import Child, Spawn

AOF_ALWAYS = ("--appendonly", "yes", "--appendfsync", "always")
WORKER_SCRIPT = (Path(__file__).parent / "worker_child.py").read_text()

StartWorker = Callable[..., Awaitable[Child]]


def soak_seconds() -> float:
    """How long the soak runs: LANEMQ_SOAK_SECONDS, else 60 s (the CI bound)."""
    return float(os.environ.get("LANEMQ_SOAK_SECONDS", "60"))


@pytest.fixture
def rng() -> random.Random:
    """Random moments of a test, from a seed it prints (LANEMQ_FAULT_SEED replays one)."""
    seed = int(os.environ.get("LANEMQ_FAULT_SEED") or random.randrange(1 << 30))
    print(f"\nseed={seed}")
    return random.Random(seed)


@pytest.fixture
def start_worker(spawn: Spawn) -> StartWorker:
    """Starts ``worker_child.py url queue log options...`` and waits for its ``ready``."""

    async def start(url: str, queue: str, log: Path, *options: str) -> Child:
        child = await spawn(WORKER_SCRIPT, url, queue, str(log), *options)
        line = await child.line()
        assert line == "ready", child.stderr()
        return child

    return start


@pytest.fixture
def aof_redis(own_redis: MakeServer) -> RedisServer:
    """A started redis-server with an append-only file, fsynced on every write, in tmp_path."""
    server = own_redis()
    server.start(*AOF_ALWAYS)
    return server
