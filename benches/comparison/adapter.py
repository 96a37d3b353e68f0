"""What a Python system's adapter provides to the workloads of runner mode."""

from __future__ import annotations

import asyncio
import platform
from collections.abc import Callable
from typing import Any

Hook = Callable[[bool], None]  # called once per finished job: True = completed


class Adapter:
    """One system's queue operations, as the workloads use them."""

    system = "?"
    bulk_note: str | None = None

    def __init__(self, url: str) -> None:
        self.url = url
        self.queue: Any = None
        self.worker: Any = None
        self.task: asyncio.Task[Any] | None = None

    def version(self) -> str:
        raise NotImplementedError

    async def open(self, name: str) -> None:
        raise NotImplementedError

    async def add(self, i: int) -> None:
        raise NotImplementedError

    async def add_bulk(self, start: int, stop: int) -> None:
        raise NotImplementedError

    async def start_worker(self, concurrency: int, hook: Hook) -> None:
        """Creates and starts one worker; returns once it runs (in the background)."""
        raise NotImplementedError

    async def stop_worker(self) -> None:
        raise NotImplementedError

    async def counts(self) -> dict[str, int]:
        """Counts of waiting, active, completed, failed (whatever the system can tell)."""
        raise NotImplementedError

    async def close(self) -> None:
        raise NotImplementedError

    def run_evented_worker(self, worker: Any, hook: Hook) -> None:
        """Starts a worker with BullMQ's ``completed`` and ``failed`` events (lanemq's
        `JobWorker` has them too) in a task of its own; `hook` hears each finished job."""
        self.worker = worker
        worker.on("completed", lambda job, result: hook(True))
        worker.on("failed", lambda job, error: hook(False))
        self.task = asyncio.get_running_loop().create_task(worker.run())

    def script_names(self) -> dict[str, str]:
        """SHA1 of each Lua script the system loads -> a readable name, for the SLOWLOG
        profile's per-script lines; empty where the system names its calls itself."""
        return {}


def package_version(name: str) -> str:
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "?"


def python_label() -> str:
    return f"Python {platform.python_version()}"
