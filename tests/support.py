"""Helpers shared by the test modules."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Awaitable, Callable
from pathlib import Path

from lanemq import Event, Subscription

WAIT = 5.0  # upper bound for anything a test awaits; never reached when things work
CHILD_WAIT = 10.0  # the same for child processes, which start a Python interpreter first


async def wait_until(
    predicate: Callable[[], bool], what: str = "a condition", timeout: float = WAIT
) -> None:
    """Waits for ``predicate`` to hold; fails the test after ``timeout`` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(0.002)


async def collect(sub: Subscription) -> list[Event]:
    """Closes ``sub`` and returns the events still buffered in it."""
    sub.close()
    return [event async for event in sub]


class Child:
    """A Python child process running a script; stdout is read line by line, stderr goes to a
    file (shown when something goes wrong)."""

    def __init__(self, proc: asyncio.subprocess.Process, stderr_path: Path) -> None:
        self.proc = proc
        self.pid = proc.pid
        self.stderr_path = stderr_path

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    async def line(self, timeout: float = CHILD_WAIT) -> str:
        assert self.proc.stdout is not None
        raw = await asyncio.wait_for(self.proc.stdout.readline(), timeout)
        if not raw.endswith(b"\n"):
            await asyncio.wait_for(self.proc.wait(), timeout)
            raise AssertionError(
                f"child {self.pid} ended (rc={self.proc.returncode}) before printing a line; "
                f"stderr:\n{self.stderr()}"
            )
        return raw.decode().rstrip("\n")

    def kill(self) -> None:
        """SIGKILL, by PID, unless it is already known to have exited."""
        if self.proc.returncode is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    async def wait(self, timeout: float = CHILD_WAIT) -> int:
        return await asyncio.wait_for(self.proc.wait(), timeout)


Spawn = Callable[..., Awaitable["Child"]]
