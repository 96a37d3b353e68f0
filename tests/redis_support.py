"""Redis servers of a test's own and a tiny RESP client over a socket (no Redis client
library), for tests that restart or configure a server, or look at its keyspace raw."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from lanemq import RedisJobQueue

WAIT = 10.0  # upper bound for a server to start or stop; never reached when things work


def free_port() -> int:
    """A free loopback port below 55536 whose port + 10000 is free too: a cluster-mode server
    also listens there (the cluster bus), and exits at start when it cannot (above 65535, or
    taken: with many servers and clients on the machine, a bus port that is some connection's
    ephemeral port made a cluster fixture fail now and then)."""
    while True:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = int(probe.getsockname()[1])
        if port >= 55536:
            continue
        with socket.socket() as bus:
            try:
                bus.bind(("127.0.0.1", port + 10000))
            except OSError:
                continue
        return port


def queue_key(queue: RedisJobQueue, name: str) -> str:
    """The Redis key ``name`` of ``queue`` (``meta``, ``job:<id>``...), under the queue's hash
    tag as lua/README.md lays them out."""
    return f"{queue.prefix}:{{{queue.name}}}:{name}"


def address(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    return parts.hostname or "127.0.0.1", parts.port or 6379


class RespError(Exception):
    """An error reply of the server."""


class Resp:
    """A minimal RESP2 client: enough for SCAN, TYPE, CONFIG and CLUSTER KEYSLOT."""

    def __init__(self, host: str, port: int, timeout: float = 5.0) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.file = self.sock.makefile("rb")

    @classmethod
    def of(cls, url: str) -> Resp:
        return cls(*address(url))

    def close(self) -> None:
        self.file.close()
        self.sock.close()

    def __enter__(self) -> Resp:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def command(self, *args: str | int) -> Any:
        out = [f"*{len(args)}\r\n".encode()]
        for arg in args:
            raw = str(arg).encode()
            out.append(b"$%d\r\n%s\r\n" % (len(raw), raw))
        self.sock.sendall(b"".join(out))
        return self._reply()

    def _reply(self) -> Any:
        line = self.file.readline()
        if not line.endswith(b"\r\n"):
            raise ConnectionError(f"connection closed mid-reply: {line!r}")
        kind, rest = line[:1], line[1:-2]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            raise RespError(rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            size = int(rest)
            if size < 0:
                return None
            data = self.file.read(size + 2)
            return data[:-2].decode()
        if kind == b"*":
            size = int(rest)
            return None if size < 0 else [self._reply() for _ in range(size)]
        raise ConnectionError(f"unexpected reply line {line!r}")

    def scan(self, pattern: str) -> list[str]:
        keys: set[str] = set()
        cursor = "0"
        while True:
            cursor, batch = self.command("SCAN", cursor, "MATCH", pattern, "COUNT", 1000)
            keys.update(batch)
            if cursor == "0":
                return sorted(keys)


class RedisServer:
    """A redis-server of a test's own, on a port of its choosing (restartable on the same
    port), or another server that takes its arguments (``binary``: valkey-server). Stopped by
    PID."""

    def __init__(self, directory: Path, port: int | None = None, binary: str | None = None) -> None:
        if binary is None:
            binary = shutil.which("redis-server")
            if binary is None:
                pytest.fail("redis-server is not on PATH (scripts/test installs it)")
        self.binary = binary
        self.directory = directory
        self.port = port or free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, *extra: str) -> None:
        assert self.proc is None or self.proc.poll() is not None, "already running"
        self.directory.mkdir(parents=True, exist_ok=True)
        # (no --save and no append-only file: nothing survives a restart)
        args = [self.binary, "--port", str(self.port), "--bind", "127.0.0.1"]
        args += ["--save", "", "--appendonly", "no", "--dir", str(self.directory), *extra]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + WAIT
        while True:
            try:
                with Resp("127.0.0.1", self.port, timeout=0.5) as probe:
                    if probe.command("PING") == "PONG":
                        return
            except (OSError, RespError):
                pass
            if time.monotonic() > deadline or self.proc.poll() is not None:
                self.stop()
                pytest.fail(f"{Path(self.binary).name} did not start on port {self.port}")
            time.sleep(0.02)

    def stop(self) -> None:
        proc = self.proc
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(timeout=WAIT)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=WAIT)


MakeServer = Callable[[], RedisServer]


def valkey_server() -> str:
    """The valkey-server binary: ``LANEMQ_VALKEY_SERVER``, else one on PATH, else the one
    scripts/valkey-server installs (and prints). Fails the test when there is none: the Valkey
    runs are never skipped."""
    binary = os.environ.get("LANEMQ_VALKEY_SERVER") or shutil.which("valkey-server")
    if binary:
        return binary
    script = Path(__file__).parent.parent / "scripts" / "valkey-server"
    installed = subprocess.run(
        [str(script)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHON": sys.executable},
        check=False,
    )
    if installed.returncode != 0:
        pytest.fail(f"no valkey-server: scripts/valkey-server failed:\n{installed.stderr}")
    return installed.stdout.strip()
