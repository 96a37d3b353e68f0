"""The disk-fault scenario of `test_disk_full.py`, in a process of its own (a file-size limit
is per process): a local queue in ``directory`` runs out of room, ``tmpfs`` (the directory
is a small tmpfs: a filler file takes the rest of it) or ``fsize`` (RLIMIT_FSIZE at the
files' current sizes: no file may grow; SIGXFSZ ignored, so writes fail with EFBIG). Adds and
completions meet the full disk, then room comes back, then the queue is opened again.
Prints its figures as one JSON line."""

from __future__ import annotations

import asyncio
import json
import resource
import signal
import sys
from pathlib import Path
from typing import Any

import lanemq

PAYLOAD = "x" * 2048  # a job that takes room
TRIES = 5000  # adds tried before the disk must have refused one


class Room:
    """Takes the room away and gives it back."""

    def __init__(self, mode: str, directory: Path) -> None:
        self.mode = mode
        self.filler = directory / "filler"
        self.directory = directory

    def take(self) -> None:
        if self.mode == "tmpfs":
            chunk = b"\0" * 4096
            with self.filler.open("wb", buffering=0) as out:
                try:
                    while True:
                        out.write(chunk)
                except OSError:
                    pass  # ENOSPC: the disk is full
        else:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            largest = max(path.stat().st_size for path in self.directory.iterdir())
            _, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
            resource.setrlimit(resource.RLIMIT_FSIZE, (largest, hard))

    def give_back(self) -> None:
        if self.mode == "tmpfs":
            self.filler.unlink()
        else:
            _, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
            resource.setrlimit(resource.RLIMIT_FSIZE, (hard, hard))


async def main() -> None:
    mode, directory = sys.argv[1], Path(sys.argv[2])
    figures: dict[str, Any] = {"mode": mode}
    queue = lanemq.LocalJobQueue("disk", directory)
    acknowledged = [job.id for job in await queue.add_bulk([("work", PAYLOAD)] * 20)]
    held = await queue.claim("w", 60.0, 5)  # finished while the disk is full
    room = Room(mode, directory)
    room.take()
    errors: list[str] = []
    for _ in range(TRIES):
        try:
            acknowledged.append((await queue.add("work", PAYLOAD)).id)
        except Exception as error:  # what a full disk raises is what this test reports
            errors.append(f"{type(error).__name__}: {error}")
            break
    figures["acknowledged_while_full"] = len(acknowledged) - 20
    for _ in range(3):  # still full: refused again, and nothing half-written
        try:
            acknowledged.append((await queue.add("work", PAYLOAD)).id)
        except Exception as error:
            errors.append(f"{type(error).__name__}: {error}")
    completed: list[str] = []
    try:
        await queue.complete_many([(job.id, job.lock_token, {"ok": 1}) for job in held])
        completed = [job.id for job in held]
        figures["complete_while_full"] = "recorded"
    except Exception as error:
        errors.append(f"{type(error).__name__}: {error}")
        figures["complete_while_full"] = "raised"
    figures["errors"] = errors
    room.give_back()
    acknowledged += [job.id for job in await queue.add_bulk([("work", PAYLOAD)] * 10)]
    if not completed:
        await queue.complete_many([(job.id, job.lock_token, {"ok": 1}) for job in held])
        completed = [job.id for job in held]
    await queue.close()
    reopened = lanemq.LocalJobQueue("disk", directory)
    states = {job_id: await reopened.get_state(job_id) for job_id in acknowledged}
    figures["acknowledged"] = len(acknowledged)
    figures["lost"] = [job_id for job_id, state in states.items() if state == "unknown"]
    figures["not_completed"] = [job_id for job_id in completed if states[job_id] != "completed"]
    figures["counts"] = await reopened.get_job_counts("waiting", "active", "completed")
    await reopened.close()
    print(json.dumps(figures), flush=True)


asyncio.run(main())
