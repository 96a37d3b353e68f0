"""What the benches share, kept once: which build of ``lanemq._core`` is measured, a private
``redis-server`` on a free port, a minimal blocking RESP client to talk to it, and a fresh
queue per backend (`queue_factories`).

A bench imports it as ``from _support import ...``: ``python benches/<name>.py`` puts this
directory first on ``sys.path``. It does not import lanemq at module level, because
compare.py's orchestrator imports it on a Python that may not have lanemq installed.
"""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from types import TracebackType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import lanemq

# --------------------------------------------------------------------------- build profile


def build_profile() -> str:
    """``"release"`` or ``"debug"``: the build of ``lanemq._core``, as compiled into it.

    A debug build runs many times slower, so a bench must say which one it measured. An
    installed binary older than ``BUILD_PROFILE`` cannot tell: ``"unknown"``.
    """
    import lanemq._core  # here, not at the top: see the module docstring

    return str(getattr(lanemq._core, "BUILD_PROFILE", "unknown"))


# --------------------------------------------------------------------------- RESP client


class RespError(Exception):
    """An error reply (``-ERR ...``) from the server."""


class Resp:
    """A minimal, blocking RESP2 client: enough for PING, FLUSHALL, CONFIG, INFO and SLOWLOG.
    Bulk strings come back as bytes, arrays as lists. It needs no client library, so the
    orchestrator of compare.py runs on any Python."""

    def __init__(self, host: str, port: int, timeout: float = 30.0) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.reader = self.sock.makefile("rb")

    def call(self, *args: str | int | bytes) -> Any:
        parts = [b"*%d\r\n" % len(args)]
        for arg in args:
            data = arg if isinstance(arg, bytes) else str(arg).encode()
            parts.append(b"$%d\r\n%s\r\n" % (len(data), data))
        self.sock.sendall(b"".join(parts))
        return self._read()

    def _read(self) -> Any:
        line = self.reader.readline()
        if not line:
            raise ConnectionError("redis closed the connection")
        kind, rest = line[:1], line[1:-2]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            raise RespError(rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            size = int(rest)
            return None if size < 0 else self.reader.read(size + 2)[:-2]
        if kind == b"*":
            size = int(rest)
            return None if size < 0 else [self._read() for _ in range(size)]
        raise ConnectionError(f"unexpected reply {line!r}")

    def close(self) -> None:
        try:
            self.reader.close()
        finally:
            self.sock.close()


def text(value: Any) -> str:
    """A reply as text: bulk strings are bytes."""
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def tail(output: str | bytes | None, lines: int = 3) -> str:
    """The last lines of a process's output, on one line."""
    if isinstance(output, bytes):
        output = output.decode(errors="replace")
    kept = [line.strip() for line in (output or "").strip().splitlines() if line.strip()]
    return " | ".join(kept[-lines:]) or "(no output)"


# --------------------------------------------------------------------------- redis-server


class RedisServer:
    """A private redis-server on a free loopback port, no persistence, its files in a temporary
    directory; `stop()` ends it, `cleanup()` also removes the directory. A bench never uses
    6379, which may be someone's server. Also a context manager: `start()` and `cleanup()`."""

    def __init__(self, executable: str = "redis-server") -> None:
        self.executable = executable
        self.process: subprocess.Popen[bytes] | None = None
        self.port = 0
        self.directory = tempfile.mkdtemp(prefix="lanemq-bench-redis-")
        self.version = "?"

    @property
    def url(self) -> str:
        """The URL of database 0, for `RedisJobQueue`."""
        return f"redis://127.0.0.1:{self.port}/0"

    @staticmethod
    def free_port() -> int:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.bind(("127.0.0.1", 0))
            port: int = probe.getsockname()[1]
            return port

    def start(self) -> None:
        """Starts the server and waits until it answers PING; RuntimeError if it cannot."""
        last_error = "not started"
        for _ in range(3):  # a port taken between the probe and the start: try another
            self.port = self.free_port()
            self.process = subprocess.Popen(
                [
                    self.executable,
                    "--port",
                    str(self.port),
                    "--bind",
                    "127.0.0.1",
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                    "--dir",
                    self.directory,
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                if self.process.poll() is not None:
                    out = self.process.stdout.read() if self.process.stdout else b""
                    last_error = f"redis-server exited {self.process.returncode}: {tail(out)}"
                    break
                try:
                    client = Resp("127.0.0.1", self.port, timeout=2)
                    try:
                        if client.call("PING") == "PONG":
                            info = text(client.call("INFO", "server"))
                            for line in info.splitlines():
                                if line.startswith("redis_version:"):
                                    self.version = line.split(":", 1)[1].strip()
                            return
                    finally:
                        client.close()
                except OSError as error:
                    last_error = str(error)
                time.sleep(0.05)
            self.stop()
        raise RuntimeError(f"could not start redis-server: {last_error}")

    def call(self, *args: str | int) -> Any:
        """One command on a connection of its own."""
        client = Resp("127.0.0.1", self.port)
        try:
            return client.call(*args)
        finally:
            client.close()

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if process is not None and process.stdout is not None:
            process.stdout.close()

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self.directory, ignore_errors=True)

    def __enter__(self) -> RedisServer:
        try:
            self.start()
        except BaseException:
            self.cleanup()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.cleanup()


QueueFactory = Callable[[], AbstractAsyncContextManager[Any]]
"""Opens a fresh queue of one backend (and cleans up after it), for a bench's rows."""


def queue_factories(
    name: str, backends: list[str], server: RedisServer | None
) -> dict[str, QueueFactory]:
    """A fresh `name` queue per call, by backend, for those of ``backends`` among memory,
    local (a new directory under ``$TMPDIR``, removed after) and redis (on ``server``)."""
    import lanemq

    @contextlib.asynccontextmanager
    async def memory() -> AsyncIterator[lanemq.JobQueue]:
        queue = lanemq.InMemoryJobQueue(name)
        try:
            yield queue
        finally:
            await queue.close()

    @contextlib.asynccontextmanager
    async def local() -> AsyncIterator[lanemq.JobQueue]:
        directory = tempfile.mkdtemp(prefix=f"lanemq-bench-{name}-")
        queue = lanemq.LocalJobQueue(name, directory)
        try:
            yield queue
        finally:
            await queue.close()
            shutil.rmtree(directory, ignore_errors=True)

    @contextlib.asynccontextmanager
    async def redis() -> AsyncIterator[lanemq.JobQueue]:
        assert server is not None
        queue = lanemq.RedisJobQueue(name, server.url)
        try:
            yield queue
        finally:
            await queue.close()

    made = {"memory": memory, "local": local, "redis": redis}
    return {backend: made[backend] for backend in made if backend in backends}


async def timed_run(
    queue: Any, worker: Any, n: int, label: str, limit: float
) -> tuple[float, list[str]]:
    """Runs ``worker`` until it has finished ``n`` jobs (its ``completed`` and ``failed`` hooks,
    counted) or ``limit`` seconds passed (a stuck worker must not hang a bench), closes it, and
    returns the seconds it ran and the problems found: counts other than ``n`` completed and
    nothing waiting, active or failed (``label`` names the run in them)."""
    import asyncio

    all_done = asyncio.Event()
    seen = 0

    def counted(*_: Any) -> None:
        nonlocal seen
        seen += 1
        if seen == n:
            all_done.set()

    worker.on("completed", counted)
    worker.on("failed", counted)  # not expected: the check below says so
    loop = asyncio.get_running_loop()
    t0 = time.perf_counter()
    runner = loop.create_task(worker.run())
    waiter = loop.create_task(all_done.wait())
    await asyncio.wait({runner, waiter}, timeout=limit, return_when=asyncio.FIRST_COMPLETED)
    elapsed = time.perf_counter() - t0
    waiter.cancel()
    await worker.close()
    await asyncio.gather(runner, waiter, return_exceptions=True)
    problems: list[str] = []
    counts = await queue.get_job_counts("completed", "waiting", "active", "failed")
    if counts != {"completed": n, "waiting": 0, "active": 0, "failed": 0}:
        problems.append(f"{label}: counts after the run {counts}")
    return elapsed, problems


def start_plain_redis(port: int, prefix: list[str]) -> tuple[subprocess.Popen[bytes], Any]:
    """A `redis-server` on ``port`` with nothing kept on disk, started behind ``prefix`` (a
    valgrind command line, or none), and a redis-py client once it answers: the instruction
    benches (`lua_cost.py`, `call_cost.py`) run their server this way."""
    import redis

    server = subprocess.Popen(
        [*prefix, "redis-server", "--port", str(port), "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    client = redis.Redis(port=port)
    for _ in range(200):  # valgrind takes seconds to start a server
        try:
            client.ping()
            break
        except redis.ConnectionError:
            time.sleep(0.3)
    return server, client
