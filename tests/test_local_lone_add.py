"""Awaited adds on a `sync="normal"` local queue are gathered for one event-loop iteration
and committed together, on the loop's thread when the queue's writer thread has nothing of that
queue to do (issue 32): a lone add is answered without the writer thread taking part, adds
gathered at once share one transaction, an add never blocks the loop on another process's lock
(the writer takes it and waits), a refused add fails alone, and adds keep the order their
callers made them in, whichever way each went. `sync="full"` keeps its adds on the writer
thread. Counted, not timed: the writer threads' context switches (Linux's /proc, in a process
of its own so no other test's work runs on them meanwhile) and the WAL's frames."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest
from lanemq import LocalJobQueue

# (below the ~140 adds whose WAL pages pass the checkpoint threshold: the writer thread
# checkpoints then, and its syncs count as switches of its own)
CALLS = 120

SCRIPT = """
import asyncio, sys
from pathlib import Path
from lanemq import LocalJobQueue

def writer_switches() -> int:
    total = 0
    for task in Path("/proc/self/task").iterdir():
        if not (task / "comm").read_text().strip().startswith("lanemq-local"):
            continue
        for line in (task / "status").read_text().splitlines():
            if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                total += int(line.split()[1])
    return total

async def main() -> None:
    queue = LocalJobQueue("lone", sys.argv[1], sync=sys.argv[3])
    await queue.get_job_counts("waiting")  # the writer has opened the file
    before = writer_switches()
    ids = [(await queue.add("job", i)).id for i in range(int(sys.argv[2]))]
    switched = writer_switches() - before
    found = [await queue.get_job(job_id) for job_id in ids]
    assert [job.data for job in found if job is not None] == list(range(len(ids)))
    await queue.close()
    print(switched)

asyncio.run(main())
"""


@pytest.mark.parametrize("sync", ["normal", "full"])
def test_lone_adds_are_answered_without_the_writer_thread(tmp_path: Path, sync: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path / "data"), str(CALLS), sync],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    switched = int(done.stdout.strip())
    if sync == "normal":
        # Through the writer, each add wakes it at least once.
        assert switched < CALLS // 4, f"the writer threads switched {switched} times"
    else:
        # A full sync's fsync stays off the loop's thread: every add goes through the writer.
        assert switched >= CALLS, f"the writer threads switched only {switched} times"


def wal_frames(queue: LocalJobQueue) -> int:
    """Frames in the queue file's write-ahead log (32-byte header, 24-byte frame headers)."""
    size = Path(f"{queue.path}-wal").stat().st_size
    return max(0, size - 32) // (4096 + 24)


async def test_adds_gathered_at_once_share_one_transaction(tmp_path: Path) -> None:
    queue = LocalJobQueue("gathered", tmp_path, sync="normal")
    await queue.add("first", {"i": -1})
    before = wal_frames(queue)
    await queue.add("lone", {"i": 0})
    one_add = wal_frames(queue) - before
    assert one_add > 0
    before = wal_frames(queue)
    added = await asyncio.gather(*(queue.add("job", {"i": i}) for i in range(100)))
    gathered = wal_frames(queue) - before
    assert [job.data for job in added] == [{"i": i} for i in range(100)]
    # One commit writes each page it changed once; 100 commits would write ~100 adds' pages.
    assert gathered < 20 * one_add, f"100 gathered adds wrote {gathered} frames ({one_add} for one)"
    assert await queue.get_job_counts("waiting") == {"waiting": 102}
    await queue.close()


async def test_a_refused_add_among_gathered_ones_fails_alone(tmp_path: Path) -> None:
    queue = LocalJobQueue("refused", tmp_path, sync="normal", max_payload_bytes=100)
    first = await queue.add("kept", {"i": 0}, job_id="custom")
    outcomes = await asyncio.gather(
        queue.add("job", {"i": 1}),
        queue.add("job", {"big": "x" * 500}),
        queue.add("again", {"i": 2}, job_id="custom"),  # the existing job, unchanged
        queue.add("job", {"i": 3}),
        return_exceptions=True,
    )
    assert isinstance(outcomes[1], Exception) and "100" in str(outcomes[1])
    kept = [o for i, o in enumerate(outcomes) if i != 1]
    assert not any(isinstance(o, BaseException) for o in kept), kept
    assert [o.data for o in kept if not isinstance(o, BaseException)] == [
        {"i": 1},
        {"i": 0},
        {"i": 3},
    ]
    assert not isinstance(outcomes[2], BaseException) and outcomes[2].id == first.id
    assert await queue.get_job_counts("waiting") == {"waiting": 3}
    await queue.close()


async def test_the_wal_is_checkpointed_though_adds_commit_on_the_loop(tmp_path: Path) -> None:
    queue = LocalJobQueue("checkpointed", tmp_path, sync="normal")
    for i in range(600):  # about 7 frames each: ~4,000 frames without a checkpoint
        await queue.add("job", {"i": i})
    # The writer thread checkpoints once 1,000 frames are passed; the log then starts over.
    await queue.get_job_counts("waiting")
    assert wal_frames(queue) < 2000, f"the WAL holds {wal_frames(queue)} frames"
    assert await queue.get_job_counts("waiting") == {"waiting": 600}
    await queue.close()


# Holds the file's write lock in a process of its own: two SQLite libraries in one process
# (Python's and the one lanemq links) do not see each other's POSIX locks.
LOCKER = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
conn.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
sys.stdin.readline()
conn.execute("ROLLBACK")
"""


@pytest.mark.parametrize("sync", ["normal", "full"])
async def test_an_add_waits_for_a_lock_held_elsewhere_without_blocking_the_loop(
    tmp_path: Path, sync: str
) -> None:
    queue = LocalJobQueue("locked", tmp_path, sync=sync)
    await queue.add("before", {"i": 0})
    locker = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        LOCKER,
        str(queue.path),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    assert locker.stdin is not None and locker.stdout is not None
    try:
        assert await asyncio.wait_for(locker.stdout.readline(), 30) == b"locked\n"
        adding = asyncio.ensure_future(queue.add("during", {"i": 1}))
        ticks = 0
        for _ in range(50):  # the loop keeps running while the add waits for the lock
            await asyncio.sleep(0)
            ticks += 1
        assert ticks == 50
        assert not adding.done(), "an add cannot commit while another process holds the lock"
    finally:
        locker.stdin.write(b"go\n")
        await locker.stdin.drain()
        assert await asyncio.wait_for(locker.wait(), 30) == 0
    added = await asyncio.wait_for(adding, 30)
    assert (added.name, added.data) == ("during", {"i": 1})
    assert await queue.get_job_counts("waiting") == {"waiting": 2}
    after = await queue.add("after", {"i": 2})  # and the next lone add goes on as before
    stored = await queue.get_job(after.id)
    assert stored is not None and stored.data == {"i": 2}
    await queue.close()


@pytest.mark.parametrize("sync", ["normal", "full"])
async def test_adds_keep_their_callers_order_whichever_thread_commits_them(
    tmp_path: Path, sync: str
) -> None:
    queue = LocalJobQueue("order", tmp_path, sync=sync)
    expected: list[int] = []
    i = 0
    for _round in range(5):
        # A bulk (through the writer thread) followed at once by single adds: those wait
        # behind it; then adds from many tasks at once; then one task's awaited adds.
        bulk = queue.add_bulk([("job", {"i": i + k}) for k in range(20)])
        singles = [queue.add("job", {"i": i + 20 + k}) for k in range(5)]
        await asyncio.gather(bulk, *singles)
        expected += list(range(i, i + 25))
        i += 25
        await asyncio.gather(*(queue.add("job", {"i": i + k}) for k in range(30)))
        expected += list(range(i, i + 30))
        i += 30
        for k in range(10):
            await queue.add("job", {"i": i + k})
        expected += list(range(i, i + 10))
        i += 10
    claimed = await queue.claim("w", max_jobs=len(expected))
    assert [job.data["i"] for job in claimed] == expected
    await queue.close()
