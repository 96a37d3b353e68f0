"""The queue URLs the fault tests run on: a local directory in tmp_path, or a redis-server
of the test's own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lanemq
from redis_support import MakeServer
from support import redis_prefix


class Backend:
    """Where a test's queue lives, and the options a process needs to open it."""

    def __init__(self, kind: str, tmp_path: Path, own_redis: MakeServer) -> None:
        self.kind = kind
        self.prefix = redis_prefix()
        if kind == "local":
            directory = tmp_path / "data"
            directory.mkdir()
            self.url = f"local://{directory}"
        else:
            server = own_redis()
            server.start()
            self.url = server.url

    def queue(self, name: str) -> lanemq.JobQueue:
        options: dict[str, Any] = {} if self.kind == "local" else {"prefix": self.prefix}
        return lanemq.from_url(self.url, name, **options)

    def worker_options(self) -> list[str]:
        return [] if self.kind == "local" else ["--prefix", self.prefix]
