"""A process holds thousands of local queues at once: they share a few writer threads and a
bounded set of open files (a file is opened on use and closed to make room), where a thread
and 3 open files per queue stopped a process at about 330 queues under the usual limit of
1024 open files ("cannot enable WAL: unable to open database file"). (The figures, open rate,
threads, files and memory per queue, are measured by `benches/many_queues.py`.)"""

from __future__ import annotations

import json
from pathlib import Path

from support import Spawn

QUEUES = 2_000
# A hang guard, not a speed assertion: the child takes a few seconds.
EXIT_WITHIN = 120.0

MANY_QUEUES = """
import asyncio, json, resource, sys
from lanemq import LocalJobQueue

QUEUES = int(sys.argv[2])

async def main() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 1024))
    queues = [LocalJobQueue(f"q{i}", sys.argv[1]) for i in range(QUEUES)]
    await asyncio.gather(*(queue.add("hello", {"i": i}) for i, queue in enumerate(queues)))
    counts = [(await queue.get_job_counts("waiting"))["waiting"] for queue in queues]
    # Read again, from the first queue on: files closed to make room are opened again.
    again = [await queue.get_job_count("waiting") for queue in queues]
    print(json.dumps({"counts": counts, "again": again}), flush=True)
    # Exits with every queue still open: nothing may keep the process alive.

asyncio.run(main())
"""


async def test_a_process_limited_to_1024_files_holds_2000_local_queues_and_exits(
    tmp_path: Path, spawn: Spawn
) -> None:
    data = tmp_path / "data"
    child = await spawn(MANY_QUEUES, str(data), str(QUEUES))
    line = await child.line(timeout=EXIT_WITHIN)
    seen = json.loads(line)
    assert seen["counts"] == [1] * QUEUES, child.stderr()
    assert seen["again"] == [1] * QUEUES
    assert await child.wait(timeout=EXIT_WITHIN) == 0, child.stderr()
    assert len(list(data.glob("q*.sqlite3"))) == QUEUES
