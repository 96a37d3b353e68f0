"""Processes sharing lanes, for the tests of `QueueManager(backend=...)`: a worker script that
runs a manager until SIGTERM, the commands it registers (they log their own start and end,
so a test counts what ran at once from the commands' own clocks), and readers of that log."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from lanemq import LaneConfig, QueueManager
from support import Child, Spawn

# A child: argv = backend, name, lanes as JSON ([[id, priority, min, max, rate_permits|null]]),
# global cap (or "none"), lease seconds, log path. It prints "ready <pid>" once it shares the
# lanes, and leaves gracefully on SIGTERM.
WORKER = """
import asyncio, json, os, signal, sys, time
sys.path.insert(0, {tests!r})
from lanes_shared_support import build_manager, register_commands

async def main():
    backend, name, lanes, cap, lease, log = sys.argv[1:7]
    manager = build_manager(backend, name, json.loads(lanes), cap, float(lease))
    register_commands(manager, log)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    async with manager:
        print("ready", os.getpid(), flush=True)
        await stop.wait()

asyncio.run(main())
"""


def build_manager(
    backend: str, name: str, lanes: list[list[Any]], cap: str, lease: float
) -> QueueManager:
    from lanemq import RateLimit

    configs = [
        LaneConfig(
            lane_id,
            priority,
            min_concurrency,
            max_concurrency,
            rate_limit=None if permits is None else RateLimit(permits, 1.0),
        )
        for lane_id, priority, min_concurrency, max_concurrency, permits in lanes
    ]
    global_cap = None if cap == "none" else int(cap)
    return QueueManager(configs, global_cap, backend=backend, name=name, lease=lease)


def register_commands(manager: QueueManager, log: str) -> None:
    """``work``: logs its start, sleeps ``seconds``, logs its end, returns its label and pid;
    ``boom``: raises ValueError(``message``)."""
    import asyncio
    import os
    import time

    def note(label: str, event: str) -> None:
        line = json.dumps({"label": label, "event": event, "pid": os.getpid(), "t": time.time()})
        with open(log, "a") as out:
            out.write(line + "\n")

    async def work(payload: dict[str, Any]) -> dict[str, Any]:
        note(payload["label"], "start")
        await asyncio.sleep(payload.get("seconds", 0))
        note(payload["label"], "end")
        return {"label": payload["label"], "pid": os.getpid()}

    async def boom(payload: dict[str, Any]) -> None:
        raise ValueError(payload["message"])

    manager.register("work", work)
    manager.register("boom", boom)


@dataclass
class Run:
    label: str
    pid: int
    start: float
    end: float | None


def runs(log: Path) -> list[Run]:
    """The commands' runs in the log, in order of start (one per start: a command run twice
    shows twice)."""
    found: list[Run] = []
    open_runs: dict[tuple[str, int], Run] = {}
    if not log.exists():
        return found
    for line in log.read_text().splitlines():
        entry = json.loads(line)
        key = (entry["label"], entry["pid"])
        if entry["event"] == "start":
            run = Run(entry["label"], entry["pid"], entry["t"], None)
            found.append(run)
            open_runs[key] = run
        else:
            open_runs.pop(key).end = entry["t"]
    return sorted(found, key=lambda run: run.start)


def most_at_once(found: list[Run]) -> int:
    """The most runs that overlapped in time."""
    moments = []
    for run in found:
        assert run.end is not None, f"{run.label} never ended"
        moments.append((run.start, 1))
        moments.append((run.end, -1))
    now = best = 0
    for _, step in sorted(moments, key=lambda m: (m[0], m[1])):  # ends before starts at a tie
        now += step
        best = max(best, now)
    return best


class Workers:
    """Worker processes of one test, sharing one backend and name."""

    def __init__(self, spawn: Spawn, backend: str, tmp: Path) -> None:
        self.spawn = spawn
        self.backend = backend
        self.name = f"lanes-{uuid.uuid4().hex[:8]}"
        self.log = tmp / "runs.log"
        self.children: list[Child] = []

    async def start(
        self, count: int, lanes: list[list[Any]], cap: int | None = None, lease: float = 10.0
    ) -> list[Child]:
        tests = str(Path(__file__).parent)
        script = WORKER.format(tests=tests)
        started = []
        for _ in range(count):
            child = await self.spawn(
                script,
                self.backend,
                self.name,
                json.dumps(lanes),
                "none" if cap is None else str(cap),
                str(lease),
                str(self.log),
            )
            started.append(child)
        for child in started:
            line = await child.line()
            assert line.startswith("ready"), (line, child.stderr())
        self.children += started
        return started

    def submitter(
        self, lanes: list[list[Any]], cap: int | None = None, lease: float = 10.0
    ) -> QueueManager:
        """A manager of the test's own process on the same lanes; it registers nothing."""
        return build_manager(
            self.backend, self.name, lanes, "none" if cap is None else str(cap), lease
        )


@pytest.fixture(params=["local", "redis"])
def shared_backend(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A backend for shared lanes: a directory of the test's own, or the suite's redis-server
    (each test uses lanes of its own name)."""
    if request.param == "local":
        return f"local:{tmp_path / 'lanes'}"
    url: str = request.getfixturevalue("redis_url")
    return url
