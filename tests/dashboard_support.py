"""Helpers of the dashboard tests: jobs in a given state, the forms of a page, and
``lanemq dashboard`` run as a subprocess on a port of its own."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
from lanemq import Job, JobQueue
from redis_support import free_port
from starlette.testclient import TestClient

#: The origin of `client`'s requests: what a page of the dashboard itself would send. (Not
#: TestClient's own "testserver": without a token the app answers only to loopback names.)
ORIGIN = "http://localhost"
SERVER_WAIT = 20.0  # upper bound for the command to listen; never reached when things work


async def failed_job(
    queue: JobQueue,
    name: str = "send",
    data: Any = None,
    reason: str = "ValueError: boom",
    stacktrace: str | None = "Traceback (most recent call last):\n  ...\nValueError: boom",
    **options: Any,
) -> Job:
    """A job (added with ``options``) that failed for good. The queue must hold no other
    waiting job (the claim takes the oldest)."""
    added = await queue.add(name, data, **options)
    [claimed] = await queue.claim("test-worker", 30, 1)
    assert claimed.id == added.id, "failed_job needs a queue without other waiting jobs"
    assert claimed.lock_token is not None
    await queue.fail(claimed.id, claimed.lock_token, reason, stacktrace, retry=False)
    return await added.refresh()


async def completed_job(queue: JobQueue, name: str = "send", result: Any = None) -> Job:
    """A completed job (the same condition as `failed_job`)."""
    added = await queue.add(name, {"n": 1})
    [claimed] = await queue.claim("test-worker", 30, 1)
    assert claimed.id == added.id and claimed.lock_token is not None
    await queue.complete(claimed.id, claimed.lock_token, result)
    return await added.refresh()


def local_client(application: Any) -> TestClient:
    """A TestClient of ``application`` whose requests name the host ``localhost``."""
    return TestClient(application, base_url=ORIGIN)


def csrf_of(html: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', html)
    assert found is not None, "the page has no form with a CSRF token"
    return found.group(1)


def count_shown(html: str, state: str) -> int:
    """The count of ``state`` a queue's row (or page) shows."""
    found = re.findall(rf'data-state="{state}">(\d+)</a>', html)
    assert found, f"no count of {state} on the page"
    return int(found[0])


def act(
    client: TestClient, path: str, *, origin: str | None = ORIGIN, home: str = "/", **fields: str
) -> Any:
    """POSTs an action's form as the dashboard's own page would (the CSRF token of its page
    ``home``, its Origin), unless told otherwise; does not follow the redirect."""
    if "csrf" not in fields:
        fields["csrf"] = csrf_of(client.get(home).text)
    headers = {} if origin is None else {"origin": origin}
    return client.post(path, data=fields, headers=headers, follow_redirects=False)


@dataclass
class Server:
    """A running ``lanemq dashboard``."""

    proc: subprocess.Popen[str]
    url: str
    log: Path

    def output(self) -> str:
        return self.log.read_text(errors="replace")


@contextmanager
def serve(
    *args: str, cwd: Path, env: dict[str, str] | None = None, host: str = "127.0.0.1"
) -> Iterator[Server]:
    """Runs ``python -m lanemq dashboard args... --port <free>`` in ``cwd`` until it
    listens at ``host`` (another one is passed as ``--host``); stops it (SIGTERM, then
    SIGKILL) at the end. Its stdout and stderr go to one file (`Server.output`)."""
    port = free_port()
    log = cwd / f"dashboard-{port}.log"
    command = [sys.executable, "-m", "lanemq", "dashboard", *args, "--port", str(port)]
    if host != "127.0.0.1":
        command += ["--host", host]
    with log.open("w") as out:
        proc = subprocess.Popen(
            command,
            cwd=cwd,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
            env={**os.environ, **(env or {})},
        )
    server = Server(proc, f"http://{host}:{port}", log)
    try:
        deadline = time.monotonic() + SERVER_WAIT
        while True:
            try:
                socket.create_connection((host, port), timeout=0.5).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(
                        f"lanemq dashboard did not listen on {port}:\n{server.output()}"
                    ) from None
                time.sleep(0.05)
        yield server
    finally:
        stop(proc)


def stop(proc: subprocess.Popen[str]) -> int:
    """Stops ``proc`` with SIGTERM (SIGKILL if it lingers); its exit code."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=SERVER_WAIT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=SERVER_WAIT)
    assert proc.returncode is not None
    return proc.returncode


def http(server: Server) -> httpx2.Client:
    """A client of the server, with a timeout on every request."""
    return httpx2.Client(base_url=server.url, timeout=10.0, follow_redirects=False)
