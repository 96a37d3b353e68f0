"""What LocalJobQueue does with its file: an empty (0-byte) file is refused and left as it is,
not made a new empty queue; processes creating a new queue at the same moment all get the one
file; close() returns once the file is closed (its -wal checkpointed and gone)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from lanemq import InMemoryJobQueue, LocalJobQueue, StorageError
from support import Spawn

OPEN_AND_ADD = """
import asyncio, os, sys, time
from lanemq import LocalJobQueue

async def main() -> None:
    print("ready", flush=True)
    # All children open the new file at (nearly) the same moment: when "go" appears.
    while not os.path.exists(sys.argv[2]):
        time.sleep(0.001)
    queue = LocalJobQueue("race", sys.argv[1])
    job = await queue.add("hello", {"pid": __import__("os").getpid()})
    print(job.id, flush=True)
    await queue.close()

asyncio.run(main())
"""


def test_an_empty_file_is_refused_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "emptied.sqlite3"
    path.touch()
    with pytest.raises(StorageError, match=r"empty \(0 bytes\)") as refused:
        LocalJobQueue("emptied", tmp_path)
    assert str(path) in str(refused.value)
    assert path.stat().st_size == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["emptied.sqlite3"]


async def test_processes_creating_one_new_queue_at_once_share_it(
    tmp_path: Path, spawn: Spawn
) -> None:
    data, go = tmp_path / "data", tmp_path / "go"
    children = [await spawn(OPEN_AND_ADD, str(data), str(go)) for _ in range(4)]
    for child in children:
        assert await child.line() == "ready", child.stderr()
    go.touch()
    ids = [await child.line() for child in children]
    assert all(ids), [child.stderr() for child in children]
    queue = LocalJobQueue("race", data)
    assert await queue.get_job_counts("waiting") == {"waiting": 4}
    assert sorted(ids) == sorted(job.id for job in await queue.list_jobs("waiting"))
    assert [p.name for p in data.iterdir() if ".new-" in p.name] == []  # no draft left
    await queue.close()


async def test_close_returns_once_the_file_is_closed(tmp_path: Path) -> None:
    for round_ in range(20):
        queue = LocalJobQueue(f"closing-{round_}", tmp_path)
        await queue.add("job", {"round": round_})
        wal = tmp_path / f"closing-{round_}.sqlite3-wal"
        assert wal.exists()
        await queue.close()
        assert not wal.exists(), f"round {round_}: the -wal is still there after close()"
    await asyncio.sleep(0)


def test_queues_show_their_name_and_where_they_live(tmp_path: Path) -> None:
    local = LocalJobQueue("reports", tmp_path)
    assert repr(local) == f"LocalJobQueue('reports', path={str(tmp_path / 'reports.sqlite3')!r})"
    assert repr(InMemoryJobQueue("scratch")) == "InMemoryJobQueue('scratch')"
