"""Groups on the local backend across processes: the turns, the active counts and the rate
windows live in the queue's file, so processes claiming from one file keep the turns and a
group's concurrency limit together; and a file written before groups opens and keeps its
grouped jobs' groups."""

from __future__ import annotations

import itertools
import json
import sqlite3
from pathlib import Path

from lanemq import LocalJobQueue
from support import EPOCH_MS as T
from support import WAIT_FOR_GO, Spawn, start_together

#: One claim or completion on the queue ``groups`` in ``sys.argv[1]``, by a process of its
#: own, printed as JSON: ``claim N`` prints ``[[name, id, token], ...]``.
STEP = f"""
import asyncio, json, sys
from lanemq import LocalJobQueue

async def main() -> None:
    queue = LocalJobQueue("groups", sys.argv[1])
    if sys.argv[2] == "claim":
        jobs = await queue.claim("child", max_jobs=int(sys.argv[3]), now={T})
        print(json.dumps([[j.name, j.id, j.lock_token] for j in jobs]), flush=True)
    else:
        await queue.complete(sys.argv[3], sys.argv[4], None, now={T})
        print("[]", flush=True)

asyncio.run(main())
"""


async def _step(spawn: Spawn, directory: Path, *args: str) -> list[list[str]]:
    child = await spawn(STEP, str(directory), *args)
    line = await child.line(timeout=20.0)
    assert await child.wait() == 0, child.stderr()
    result: list[list[str]] = json.loads(line)
    return result


async def test_processes_claiming_one_file_keep_the_turns_and_the_limit(
    tmp_path: Path, spawn: Spawn
) -> None:
    queue = LocalJobQueue("groups", tmp_path)
    await queue.set_group_limits("A", concurrency=1)
    await queue.add_bulk([(f"A-{i}", i, {"group": "A"}) for i in range(3)], now=T)
    await queue.add_bulk([(f"B-{i}", i, {"group": "B"}) for i in range(3)], now=T)
    await queue.add("C-0", 0, group="C", now=T)

    first = await _step(spawn, tmp_path, "claim", "1")
    assert [name for name, _, _ in first] == ["A-0"]
    # Another process: A is at its limit, B and C take their turns as this file says.
    second = await _step(spawn, tmp_path, "claim", "3")
    assert [name for name, _, _ in second] == ["B-0", "C-0", "B-1"]
    _, done_id, token = first[0]
    assert await _step(spawn, tmp_path, "complete", done_id, token) == []
    # A is back, behind B (which went on taking turns while A was held).
    third = await _step(spawn, tmp_path, "claim", "3")
    assert [name for name, _, _ in third] == ["B-2", "A-1"]
    assert await queue.get_group_counts("A", "active", "waiting", "completed") == {
        "active": 1,
        "waiting": 1,
        "completed": 1,
    }


#: A worker on the queue ``groups`` in ``sys.argv[1]`` that records each job's start and end
#: (wall clock) to ``sys.argv[2]`` and stops once the queue is empty.
RECORDER = (
    WAIT_FOR_GO
    + """
import json, time
import lanemq

async def main() -> None:
    queue = lanemq.LocalJobQueue("groups", sys.argv[1])
    out = open(sys.argv[2], "a", encoding="utf-8")
    await wait_for_go()

    async def process(job):
        start = time.time()
        await asyncio.sleep(0.03)
        out.write(json.dumps([job.group, start, time.time()]) + "\\n")
        out.flush()

    worker = lanemq.JobWorker(queue, process, concurrency=4)
    running = asyncio.create_task(worker.run())
    deadline = time.monotonic() + 30
    while True:
        await asyncio.sleep(0.05)
        counts = await queue.get_job_counts("waiting", "active")
        if counts == {"waiting": 0, "active": 0} or time.monotonic() > deadline:
            break
    await asyncio.wait_for(worker.close(), 10)
    await asyncio.wait_for(running, 10)
    print("done", flush=True)

asyncio.run(main())
"""
)


async def test_two_worker_processes_hold_a_group_to_its_concurrency(
    tmp_path: Path, spawn: Spawn
) -> None:
    queue = LocalJobQueue("groups", tmp_path)
    await queue.set_group_limits("A", concurrency=1)
    await queue.add_bulk([(f"A-{i}", i, {"group": "A"}) for i in range(6)])
    await queue.add_bulk([(f"B-{i}", i, {"group": "B"}) for i in range(6)])
    outputs = [tmp_path / "one.out", tmp_path / "two.out"]
    children = await start_together(
        spawn, RECORDER, [(str(tmp_path), str(out)) for out in outputs], tmp_path / "go"
    )
    for child in children:
        assert await child.line(timeout=40.0) == "done", child.stderr()
        assert await child.wait() == 0, child.stderr()
    runs = [json.loads(line) for out in outputs for line in out.read_text().splitlines()]
    assert len(runs) == 12
    spans = sorted((start, end) for group, start, end in runs if group == "A")
    assert len(spans) == 6
    for (_, end), (start, _) in itertools.pairwise(spans):
        assert start >= end, spans  # never two jobs of A at once, across the processes
    assert await queue.get_group_counts("A", "completed") == {"completed": 6}


#: Writes the queue ``old`` in ``sys.argv[1]``: a job of group A, an ungrouped one.
OLD_WRITER = f"""
import asyncio, sys
from lanemq import LocalJobQueue

async def main() -> None:
    queue = LocalJobQueue("old", sys.argv[1])
    await queue.add("a", 1, group="A", now={T})
    await queue.add("plain", 2, now={T})
    print(queue.path, flush=True)

asyncio.run(main())
"""


async def test_a_file_from_before_groups_opens_and_keeps_its_groups(
    tmp_path: Path, spawn: Spawn
) -> None:
    writer = await spawn(OLD_WRITER, str(tmp_path))
    path = await writer.line(timeout=20.0)
    assert await writer.wait() == 0, writer.stderr()
    # As an older lanemq wrote it: no `grp` column, no group tables or indexes.
    with sqlite3.connect(path) as conn:
        for index in ("jobs_waiting_first", "jobs_group_waiting", "jobs_group"):
            conn.execute(f"DROP INDEX {index}")
        conn.execute("CREATE INDEX jobs_waiting ON jobs (priority, ord) WHERE state = 0")
        conn.execute("DROP TABLE group_settings")
        conn.execute("DROP TABLE group_runs")
        conn.execute("ALTER TABLE jobs DROP COLUMN grp")
    conn.close()
    reopened = LocalJobQueue("old", tmp_path)
    await reopened.add("b", 3, group="A", now=T)
    assert await reopened.get_group_counts("A", "waiting") == {"waiting": 2}
    claimed = await reopened.claim("w", max_jobs=3, now=T)
    assert [job.name for job in claimed] == ["plain", "a", "b"]
    assert [job.group for job in claimed] == [None, "A", "A"]
    with sqlite3.connect(path) as conn:
        indexes = {name for (name,) in conn.execute("SELECT name FROM sqlite_master")}
    conn.close()
    # The waiting index of before groups gave way to the one that puts ungrouped jobs first.
    assert "jobs_waiting_first" in indexes and "jobs_waiting" not in indexes
