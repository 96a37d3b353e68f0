"""What a Python system's adapter provides to the workloads of runner mode."""

from __future__ import annotations

import platform
from collections.abc import Callable

Hook = Callable[[bool], None]  # called once per finished job: True = completed


class Adapter:
    """One system's queue operations, as the workloads use them."""

    system = "?"
    bulk_note: str | None = None

    def __init__(self, url: str) -> None:
        self.url = url

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
