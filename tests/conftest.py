"""Session-wide fixtures: a redis-server the suite starts itself on a free loopback port
(`LANEMQ_REDIS_URL` uses an existing server instead), and a valkey-server likewise. A missing
server fails the tests that need it; they are never skipped."""

from __future__ import annotations

import asyncio
import itertools
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from redis_cluster_support import RedisCluster
from redis_support import MakeServer, RedisServer, Resp, valkey_server
from support import Child, Spawn, kill_all


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    existing = os.environ.get("LANEMQ_REDIS_URL")
    if existing:
        yield existing
        return
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.fail("redis-server is not on PATH (scripts/test installs it)")
    port = _free_port()
    server = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    pytest.fail(f"redis-server did not start on port {port}")
                time.sleep(0.02)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        server.terminate()
        server.wait(timeout=10)


@pytest.fixture(scope="session")
def valkey_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Valkey server (8.1, `redis_support.valkey_server`) the suite starts itself on a free
    loopback port: the Redis backend's suite runs on it too, as the README promises Valkey."""
    server = RedisServer(tmp_path_factory.mktemp("valkey"), binary=valkey_server())
    server.start()
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture(scope="session")
def redis_cluster_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Redis Cluster of one node that serves all 16384 slots: the cluster's key rules in
    force (a script may touch only keys of the slot its call was given) on one server the
    suite starts itself."""
    server = RedisServer(tmp_path_factory.mktemp("redis-cluster"))
    server.start(
        "--cluster-enabled", "yes", "--cluster-config-file", str(server.directory / "nodes.conf")
    )
    try:
        with Resp("127.0.0.1", server.port) as node:
            assert node.command("CLUSTER", "ADDSLOTSRANGE", 0, 16383) == "OK"
            deadline = time.monotonic() + 10
            while "cluster_state:ok" not in node.command("CLUSTER", "INFO"):
                if time.monotonic() > deadline:
                    pytest.fail("the one-node cluster did not reach cluster_state:ok")
                time.sleep(0.02)
        yield server.url
    finally:
        server.stop()


@pytest.fixture(scope="session")
def redis_cluster3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisCluster]:
    """A real Redis Cluster the session shares: 3 masters with a replica each
    (tests/redis_cluster_support.py). Tests that move slots or kill nodes use `own_cluster`."""
    cluster = RedisCluster(tmp_path_factory.mktemp("redis-cluster3"))
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def redis_cluster3_url(redis_cluster3: RedisCluster) -> str:
    """The ``redis+cluster://`` URL of `redis_cluster3` (its six nodes as seeds)."""
    return redis_cluster3.url


@pytest.fixture
def own_cluster(tmp_path: Path) -> Iterator[RedisCluster]:
    """A real Redis Cluster of the test's own (3 masters, 1 replica each), started; stopped at
    teardown."""
    cluster = RedisCluster(tmp_path / "cluster")
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
async def spawn(tmp_path: Path) -> AsyncIterator[Spawn]:
    """Starts ``python <script> args...``; every child still running at teardown is killed."""
    children: list[Child] = []
    numbers = itertools.count(1)

    async def start(script: str, *args: str) -> Child:
        number = next(numbers)
        file = tmp_path / f"child-{number}.py"
        file.write_text(textwrap.dedent(script))
        stderr_path = tmp_path / f"child-{number}.stderr"
        with stderr_path.open("wb") as stderr:
            proc = await asyncio.create_subprocess_exec(
                sys.executable,
                str(file),
                *args,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=stderr,
                cwd=tmp_path,
            )
        child = Child(proc, stderr_path)
        children.append(child)
        return child

    try:
        yield start
    finally:
        await kill_all(children)


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[MakeServer]:
    """Makes redis-servers of the test's own; every one still running at teardown is stopped."""
    servers: list[RedisServer] = []
    numbers = itertools.count(1)

    def make() -> RedisServer:
        server = RedisServer(tmp_path / f"redis-{next(numbers)}")
        servers.append(server)
        return server

    try:
        yield make
    finally:
        for server in servers:
            server.stop()
