"""LocalJobQueue as a durable, multi-process backend: what reopening keeps, what a SIGKILL
cannot lose, several processes sharing one file (claims, stalled recovery, wake-ups), the files
it refuses to open, and group commit. The generic job contract is covered by the conformance
suite (tests/conformance), which runs on this backend too."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import hashlib
import os
import signal
import sqlite3
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from lanemq import ConfigError, FlowJob, Job, JobWorker, LocalJobQueue, StorageError
from support import Spawn, eventually, race_shared_workers, shared_worker

WAIT = 10.0  # upper bound for anything awaited in a test; never reached when things work


# --------------------------------------------------------------------------- helpers


def _wal(path: Path) -> Path:
    return path.with_name(path.name + "-wal")


def _held_open(path: Path) -> bool:
    """Whether a file descriptor of this process refers to the database or its -wal/-shm."""
    names = {str(path), f"{path}-wal", f"{path}-shm"}
    for fd in Path("/proc/self/fd").iterdir():
        try:
            if os.readlink(fd) in names:
                return True
        except OSError:  # closed meanwhile
            continue
    return False


async def _closed(path: Path) -> None:
    """Waits until no connection of this process holds ``path`` open, then makes sure the
    ``-wal`` file is gone. The last connection to close checkpoints the WAL and deletes it, but
    two connections closing at once (two handles' threads) can each see the other and leave it,
    so a ``-wal`` left once nothing holds the file is checkpointed away by a connection of the
    test's own, as that last close would have done. Yields to the event loop between looks, so
    references held by the loop's current callback are let go."""
    deadline = time.monotonic() + WAIT
    while True:
        gc.collect()
        held = _held_open(path) if sys.platform.startswith("linux") else _wal(path).exists()
        if not held:
            break
        if time.monotonic() > deadline:
            raise AssertionError(f"{path} still open after {WAIT}s")
        await asyncio.sleep(0.01)
    if _wal(path).exists():
        conn = sqlite3.connect(path)
        try:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        finally:
            conn.close()
    assert not _wal(path).exists(), f"{path}: the -wal file stays after a checkpoint"


@dataclass(frozen=True)
class FileState:
    size: int
    mtime_ns: int
    sha256: str


def _file_state(path: Path) -> FileState:
    stat = path.stat()
    return FileState(stat.st_size, stat.st_mtime_ns, hashlib.sha256(path.read_bytes()).hexdigest())


def _view(job: Job) -> dict[str, Any]:
    """What a job snapshot says, minus the lock token (a claim carries it, a read may not)."""
    return {
        "id": job.id,
        "name": job.name,
        "data": job.data,
        "state": job.state,
        "priority": job.priority,
        "attempts_made": job.attempts_made,
        "stalled_count": job.stalled_count,
        "created_at": job.created_at,
        "delay_until": job.delay_until,
        "processed_on": job.processed_on,
        "finished_on": job.finished_on,
        "progress": job.progress,
        "return_value": job.return_value,
        "failed_reason": job.failed_reason,
        "stacktrace": job.stacktrace,
    }


# ------------------------------------------------------------------ scenario 40: reopen


async def _build(directory: Path) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """Fills a queue with a job in every state and some settings; returns job snapshots and
    what else the queue says, then lets the queue go."""
    queue = LocalJobQueue("orders", directory)
    done = await queue.add("done", {"n": 1})
    bad = await queue.add("bad", {"n": 2}, attempts=1)
    held = await queue.add("held", {"n": 3})
    claimed = await queue.claim("worker-a", lease=3600.0, max_jobs=3)
    assert [job.id for job in claimed] == [done.id, bad.id, held.id]
    token = {job.id: job.lock_token or "" for job in claimed}
    await queue.complete(done.id, token[done.id], {"total": 42, "items": ["a", "b"]})
    assert await queue.fail(bad.id, token[bad.id], "card declined") is False
    waiting = await queue.add("plain", {"n": 4}, priority=5)
    delayed = await queue.add("later", {"n": 5}, delay=3600.0)
    await queue.update_progress(waiting.id, {"pct": 50})
    await queue.update_progress(held.id, 75)
    assert await queue.add_log(waiting.id, "first line") == 1
    assert await queue.add_log(waiting.id, "second line") == 2
    await queue.add_log(held.id, "working")
    await queue.pause()
    await queue.set_max_active(7)
    await queue.set_rate_limit(100, 2.0)
    snapshots = {}
    for job_id in (done.id, bad.id, held.id, waiting.id, delayed.id):
        job = await queue.get_job(job_id)
        assert job is not None
        snapshots[job_id] = _view(job)
    assert {v["name"]: v["state"] for v in snapshots.values()} == {
        "done": "completed",
        "bad": "failed",
        "held": "active",
        "plain": "waiting",
        "later": "delayed",
    }
    info = {
        "ids": {"done": done.id, "bad": bad.id, "held": held.id, "waiting": waiting.id},
        "held_token": token[held.id],
        "counts": await queue.get_job_counts(),
        "events": await queue.read_events(),
        "path": queue.path,
    }
    return snapshots, info


async def test_reopen_keeps_jobs_state_progress_logs_and_settings(tmp_path: Path) -> None:
    snapshots, info = await _build(tmp_path)
    path: Path = info["path"]
    assert path == tmp_path / "orders.sqlite3"
    await _closed(path)

    queue = LocalJobQueue("orders", tmp_path)
    ids = info["ids"]
    for job_id, before in snapshots.items():
        job = await queue.get_job(job_id)
        assert job is not None, f"job {job_id} lost on reopen"
        assert _view(job) == before
    assert (
        await queue.get_job_counts()
        == info["counts"]
        == {
            "waiting": 1,
            "delayed": 1,
            "active": 1,
            "waiting_children": 0,
            "completed": 1,
            "failed": 1,
        }
    )
    done = await queue.finished_result(ids["done"])
    assert (done.status, done.value) == ("completed", {"total": 42, "items": ["a", "b"]})
    bad = await queue.finished_result(ids["bad"])
    assert (bad.status, bad.reason) == ("failed", "card declined")
    assert await queue.get_logs(ids["waiting"]) == (["first line", "second line"], 2)
    assert await queue.get_logs(ids["held"]) == (["working"], 1)
    assert await queue.read_events() == info["events"]
    assert await queue.is_paused() is True
    assert await queue.get_max_active() == 7
    assert await queue.get_rate_limit() == (100, 2.0)

    # The pause holds after reopening; the lock of the active job still holds too.
    assert await queue.claim("worker-b", lease=10.0) == []
    await queue.complete(ids["held"], info["held_token"], "finished after reopen")
    assert (await queue.finished_result(ids["held"])).value == "finished after reopen"
    await queue.resume()
    [claimed] = await queue.claim("worker-b", lease=10.0)
    assert claimed.id == ids["waiting"]
    assert claimed.progress == {"pct": 50}

    # Auto ids go on; an old id is never handed out again.
    fresh = await queue.add("fresh", {"n": 6})
    assert fresh.id not in snapshots
    assert int(fresh.id) > max(int(i) for i in snapshots)
    assert fresh.data == {"n": 6}
    # New events follow the old ones.
    last_before = info["events"][-1].id
    assert all(ev.id > last_before for ev in await queue.read_events(last_before + 1))
    del queue, job, claimed, fresh
    await _closed(path)


async def test_reopen_under_another_name_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    _, info = await _build(tmp_path)
    path: Path = info["path"]
    await _closed(path)
    before = _file_state(path)

    with pytest.raises(ConfigError) as raised:
        LocalJobQueue("invoices", path)
    assert isinstance(raised.value, ValueError)
    message = str(raised.value)
    assert "orders" in message and "invoices" in message
    assert _file_state(path) == before
    assert not _wal(path).exists()

    # The directory form under another name is simply another file.
    other = LocalJobQueue("invoices", tmp_path)
    assert other.path == tmp_path / "invoices.sqlite3"
    assert await other.get_job_counts("waiting") == {"waiting": 0}
    del other
    await _closed(tmp_path / "invoices.sqlite3")
    assert _file_state(path) == before

    queue = LocalJobQueue("orders", path)
    assert await queue.get_job_counts() == info["counts"]
    assert await queue.is_paused() is True


# --------------------------------------------------------------- durability: SIGKILL

ADDER = """
import asyncio, sys, time
from lanemq import LocalJobQueue

async def main() -> None:
    queue = LocalJobQueue("durable", sys.argv[1])
    for i in range(50):
        job = await queue.add("single", {"i": i})
        print(job.id, "single", i, flush=True)
    jobs = await queue.add_bulk([("bulk", {"i": i}) for i in range(50)])
    for i, job in enumerate(jobs):
        print(job.id, "bulk", i, flush=True)
    i = 0
    deadline = time.monotonic() + 20  # never reached: the test kills this process
    while time.monotonic() < deadline:
        job = await queue.add("more", {"i": i})
        print(job.id, "more", i, flush=True)
        i += 1

asyncio.run(main())
"""


async def test_acknowledged_adds_survive_sigkill(tmp_path: Path, spawn: Spawn) -> None:
    child = await spawn(ADDER, str(tmp_path))
    acknowledged: list[tuple[str, str, int]] = []

    def record(line: str) -> None:
        job_id, name, i = line.split()
        acknowledged.append((job_id, name, int(i)))

    while len(acknowledged) < 130:  # 50 single, 50 in the bulk, then more single adds
        record(await child.line())
    assert child.proc.returncode is None, "the child must still be adding when killed"
    child.kill()
    assert child.proc.stdout is not None
    rest = await asyncio.wait_for(child.proc.stdout.read(), WAIT)
    assert await child.wait() == -signal.SIGKILL
    for line in rest.decode().split("\n")[:-1]:  # a last line without newline is dropped
        record(line)

    ids = [job_id for job_id, _, _ in acknowledged]
    assert len(set(ids)) == len(ids), "an id was handed out twice"
    assert [name for _, name, _ in acknowledged[:100]] == ["single"] * 50 + ["bulk"] * 50

    queue = LocalJobQueue("durable", tmp_path)  # the child left a -wal file behind
    missing = []
    for job_id, name, i in acknowledged:
        job = await queue.get_job(job_id)
        if job is None:
            missing.append(job_id)
            continue
        assert (job.name, job.data, job.state) == (name, {"i": i}, "waiting")
    assert missing == [], f"acknowledged adds lost after SIGKILL: {missing}"
    # Adds run one at a time after the bulk: at most the one in flight may be there unprinted.
    waiting = (await queue.get_job_counts("waiting"))["waiting"]
    assert len(acknowledged) <= waiting <= len(acknowledged) + 1


# ---------------------------------------------------------- two workers, one file

SHARED_WORKER = shared_worker('lanemq.LocalJobQueue("shared", sys.argv[2])')


async def test_two_worker_processes_complete_every_job_once(tmp_path: Path, spawn: Spawn) -> None:
    queue = LocalJobQueue("shared", tmp_path)
    added = await queue.add_bulk([("task", {"i": i}) for i in range(150)])
    for i in range(150, 200):
        added.append(await queue.add("task", {"i": i}))
    all_ids = {job.id for job in added}
    assert len(all_ids) == 200

    children, runs = await race_shared_workers(
        spawn, SHARED_WORKER, [str(tmp_path)], tmp_path, all_ids
    )
    assert await queue.get_job_counts() == {
        "waiting": 0,
        "delayed": 0,
        "active": 0,
        "waiting_children": 0,
        "completed": 200,
        "failed": 0,
    }
    # Each job's return value names the process that recorded it.
    pid_of = {}
    for child, run in zip(children, runs, strict=True):
        pid_of.update(dict.fromkeys(run, child.pid))
    for job in await queue.list_jobs("completed"):
        assert job.return_value == {"pid": pid_of[job.id]}


# ------------------------------------------------------------ flows across queue files


async def test_two_processes_work_children_of_a_parent_in_another_file(
    tmp_path: Path, spawn: Spawn
) -> None:
    parents = LocalJobQueue("parents", tmp_path)
    kids = [FlowJob("kid", {"i": i}, queue="shared") for i in range(120)]
    root = await parents.add_flow(FlowJob("root", children=kids))
    ids = {child.job.id for child in root.children}
    assert len(ids) == 120
    await race_shared_workers(spawn, SHARED_WORKER, [str(tmp_path)], tmp_path, ids)
    assert await parents.get_state(root.job.id) == "waiting"
    assert len(await parents.get_children_values(root.job.id)) == 120
    released = [
        e
        for e in await parents.read_events()
        if e.job_id == root.job.id and e.event == "waiting" and e.fields.get("prev")
    ]
    assert len(released) == 1


#: Holds the write lock of the queue file argv[1] until the file argv[2] exists. Another
#: process: two SQLite libraries in one process (Python's and the extension's) would not see
#: each other's locks, as POSIX locks belong to the process.
LOCKER = """
import sqlite3, sys, time
from pathlib import Path

conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
deadline = time.monotonic() + 30
while not Path(sys.argv[2]).exists() and time.monotonic() < deadline:
    time.sleep(0.01)
conn.execute("ROLLBACK")
print("released", flush=True)
"""


@contextlib.asynccontextmanager
async def _locked(spawn: Spawn, path: Path) -> AsyncIterator[None]:
    """Holds the write lock of the queue file ``path`` from another process, for longer than a
    flow message's delivery waits for it."""
    release = path.with_name(path.name + ".release")
    locker = await spawn(LOCKER, str(path), str(release))
    assert await locker.line() == "locked", locker.stderr()
    try:
        yield
    finally:
        release.touch()
        assert await locker.line() == "released", locker.stderr()


@dataclass
class _OneKidFlow:
    """A parent in queue "parents" with one child in queue "kids" (its own file), claimed."""

    parents: LocalJobQueue
    kids: LocalJobQueue
    root: str
    kid: Job

    @classmethod
    async def add(cls, tmp_path: Path) -> _OneKidFlow:
        parents, kids = LocalJobQueue("parents", tmp_path), LocalJobQueue("kids", tmp_path)
        root = await parents.add_flow(FlowJob("root", children=[FlowJob("kid", queue="kids")]))
        (kid,) = await kids.claim("w", lease=60.0)
        return cls(parents, kids, root.job.id, kid)

    async def complete_kid(self) -> None:
        await self.kids.complete(self.kid.id, self.kid.lock_token or "", "done")


async def test_a_flow_message_held_back_is_delivered_by_a_later_pass(
    tmp_path: Path, spawn: Spawn
) -> None:
    flow = await _OneKidFlow.add(tmp_path)
    async with _locked(spawn, flow.parents.path):
        await flow.complete_kid()
    # The completion is durable; what it means for the parent waits in the kids' outbox until
    # the kids' writer runs again (any operation, or the stall pass every worker runs).
    assert await flow.parents.get_state(flow.root) == "waiting_children"
    await flow.kids.recover_stalled()
    assert await flow.parents.get_state(flow.root) == "waiting"
    assert await flow.parents.get_children_values(flow.root) == {f"kids:{flow.kid.id}": "done"}
    await flow.parents.close()
    await flow.kids.close()


async def test_a_flow_message_left_by_a_closed_writer_is_delivered_when_reopened(
    tmp_path: Path, spawn: Spawn
) -> None:
    flow = await _OneKidFlow.add(tmp_path)
    async with _locked(spawn, flow.parents.path):
        await flow.complete_kid()
        await flow.kids.close()  # as a crash would, the writer stops with the message undelivered
    assert await flow.parents.get_state(flow.root) == "waiting_children"
    reopened = LocalJobQueue("kids", tmp_path)
    assert await reopened.get_state(flow.kid.id) == "completed"  # its writer delivered on start
    assert await flow.parents.get_state(flow.root) == "waiting"
    await reopened.close()
    await flow.parents.close()


# ------------------------------------------------- a killed worker's jobs are recovered

HOLDER = """
import asyncio, sys
from lanemq import JobWorker, LocalJobQueue

async def main() -> None:
    queue = LocalJobQueue("recover", sys.argv[1])

    async def hold(job):
        print("holding", job.id, flush=True)
        await asyncio.sleep(3600)

    worker = JobWorker(queue, hold, concurrency=int(sys.argv[2]), lease=1.0,
                       renew_every=0.5, stalled_interval=60.0)
    await asyncio.wait_for(worker.run(), 30)  # never reached: the test kills this process

asyncio.run(main())
"""


async def test_jobs_of_a_killed_worker_process_are_recovered(tmp_path: Path, spawn: Spawn) -> None:
    queue = LocalJobQueue("recover", tmp_path)
    ids = {job.id for job in await queue.add_bulk([("hold", {"i": i}) for i in range(5)])}
    child = await spawn(HOLDER, str(tmp_path), "5")
    held = {(await child.line()).split()[1] for _ in range(5)}
    assert held == ids

    async def all_active() -> bool:
        return (await queue.get_job_counts("active"))["active"] == 5

    await eventually(all_active, "the child to hold 5 jobs")
    # Past one lease: the live child renews across processes, so nothing is stalled yet.
    await asyncio.sleep(1.4)
    assert await queue.recover_stalled() == ([], [])
    assert await all_active()

    child.kill()
    assert await child.wait() == -signal.SIGKILL

    stalled: list[str] = []

    async def finish(job: Job) -> str:
        return f"recovered {job.id}"

    worker = JobWorker(queue, finish, concurrency=5, lease=1.0, stalled_interval=0.2)
    worker.on("stalled", stalled.append)
    started = time.monotonic()
    async with worker:

        async def all_completed() -> bool:
            return (await queue.get_job_counts("completed"))["completed"] == 5

        await eventually(all_completed, "the recovered jobs to complete")
    took = time.monotonic() - started
    assert took < 5.0, f"recovery took {took:.2f}s with lease 1.0s and stalled_interval 0.2s"
    assert sorted(stalled) == sorted(ids)
    assert worker.processed == 5
    for job_id in ids:
        job = await queue.get_job(job_id)
        assert job is not None
        assert job.state == "completed"
        assert job.return_value == f"recovered {job_id}"
        assert job.stalled_count >= 1
        assert job.attempts_made == 1  # the stalled attempt was given back


# ------------------------------------------------------------------ refused files


async def _make_queue_file(path: Path, jobs: int) -> FileState:
    async def fill() -> None:
        queue = LocalJobQueue("orders", path)
        pad = "x" * 200
        await queue.add_bulk([("order", {"i": i, "pad": pad}) for i in range(jobs)])
        await queue.pause()

    await fill()
    await _closed(path)
    return _file_state(path)


def _set_meta(path: Path, key: str, value: str) -> None:
    conn = sqlite3.connect(path)
    try:
        conn.execute("UPDATE meta SET value = ? WHERE key = ?", (value, key))
        conn.commit()
    finally:
        conn.close()
    assert not _wal(path).exists()


async def test_newer_format_is_refused_without_change(tmp_path: Path) -> None:
    path = tmp_path / "orders.db"
    await _make_queue_file(path, 3)
    _set_meta(path, "format", "999")
    before = _file_state(path)
    with pytest.raises(ConfigError, match="newer") as raised:
        LocalJobQueue("orders", path)
    assert isinstance(raised.value, ValueError)
    assert _file_state(path) == before
    assert not _wal(path).exists()


async def test_unknown_format_is_refused_without_change(tmp_path: Path) -> None:
    path = tmp_path / "orders.sqlite"
    await _make_queue_file(path, 3)
    _set_meta(path, "format", "abc")
    before = _file_state(path)
    with pytest.raises(ConfigError, match="format"):
        LocalJobQueue("orders", path)
    assert _file_state(path) == before
    assert not _wal(path).exists()

    # Put back, the file opens again with its jobs.
    _set_meta(path, "format", "1")
    queue = LocalJobQueue("orders", path)
    assert (await queue.get_job_counts("waiting"))["waiting"] == 3


async def test_foreign_files_are_refused_as_storage_errors(tmp_path: Path) -> None:
    other = tmp_path / "app.db"
    conn = sqlite3.connect(other)
    try:
        conn.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
        conn.execute("INSERT INTO users (name) VALUES ('ada')")
        conn.commit()
    finally:
        conn.close()
    before = _file_state(other)
    with pytest.raises(StorageError) as raised:
        LocalJobQueue("orders", other)
    assert isinstance(raised.value, OSError)
    assert "not a lanemq queue file" in str(raised.value)
    assert _file_state(other) == before

    text = tmp_path / "notes.sqlite3"
    text.write_text("these are notes, not a database\n" * 200)
    before = _file_state(text)
    with pytest.raises(StorageError):
        LocalJobQueue("orders", text)
    assert _file_state(text) == before


@pytest.mark.parametrize("damage", ["garbage", "truncated"])
async def test_corrupted_file_is_refused_not_emptied(tmp_path: Path, damage: str) -> None:
    path = tmp_path / "orders.sqlite3"
    healthy = await _make_queue_file(path, 400)
    assert healthy.size > 64 * 1024
    size = healthy.size
    if damage == "garbage":
        with path.open("r+b") as f:
            f.seek(size // 2 // 4096 * 4096)
            f.write(b"\xde\xad\xbe\xef" * 4096)  # 16 KiB of garbage over whole pages
    else:
        os.truncate(path, size // 2)
    before = _file_state(path)
    assert before.sha256 != healthy.sha256

    for _ in range(2):  # refused every time, never opened as an empty (or partial) queue
        with pytest.raises(StorageError) as raised:
            queue = LocalJobQueue("orders", tmp_path)
            counts = await queue.get_job_counts()
            raise AssertionError(f"a corrupted file opened, counts: {counts}")
        assert isinstance(raised.value, OSError)
        assert _file_state(path) == before, "the damaged file was rewritten"
        assert not _wal(path).exists()


# ---------------------------------------------------------- cross-process wake-up

IDLE_WORKER = """
import asyncio, os, sys
from lanemq import JobWorker, LocalJobQueue

async def main() -> None:
    queue = LocalJobQueue("wake", sys.argv[1])

    async def process(job):
        return {"pid": os.getpid(), "i": job.data["i"]}

    async with JobWorker(queue, process):
        print("ready", flush=True)
        await asyncio.sleep(30)  # never reached: the test kills this process

asyncio.run(main())
"""


async def test_worker_in_another_process_wakes_for_a_new_job(tmp_path: Path, spawn: Spawn) -> None:
    queue = LocalJobQueue("wake", tmp_path)
    child = await spawn(IDLE_WORKER, str(tmp_path))
    assert await child.line() == "ready", child.stderr()
    await asyncio.sleep(0.5)  # the worker is idle, waiting on an empty queue
    assert await queue.get_job_counts("waiting", "active") == {"waiting": 0, "active": 0}

    for i in range(3):
        started = time.monotonic()
        job = await queue.add("ping", {"i": i})
        result = await asyncio.wait_for(job.wait(timeout=5.0), 6.0)
        took = time.monotonic() - started
        assert result == {"pid": child.pid, "i": i}
        assert took < 2.0, f"the idle worker took {took:.2f}s to run a job added elsewhere"
        assert child.proc.returncode is None
        await asyncio.sleep(0.2)  # idle again before the next one


# ---------------------------------------------------------------------------- flows


async def test_a_flow_is_shared_by_handles_on_one_file_and_survives_reopening(
    tmp_path: Path,
) -> None:
    async def build() -> tuple[str, list[str], Path]:
        first = LocalJobQueue("flows", tmp_path)
        second = LocalJobQueue("flows", tmp_path)
        root = await first.add_flow(
            FlowJob("root", children=[FlowJob("a", 1), FlowJob("b", 2), FlowJob("c", 3)])
        )
        kids = [node.job.id for node in root.children]
        # Another connection to the file finishes the children; the parent is told at once.
        jobs = await second.claim("w", lease=10.0, max_jobs=2)
        for job in jobs:
            assert job.lock_token is not None
            await second.complete(job.id, job.lock_token, job.data * 10)
        assert await first.get_state(root.job.id) == "waiting_children"
        return root.job.id, kids, first.path

    root_id, kids, path = await build()
    await _closed(path)

    queue = LocalJobQueue("flows", tmp_path)
    counts = await queue.get_dependencies_count(root_id)
    assert counts == {"processed": 2, "unprocessed": 1, "failed": 0, "ignored": 0, "missing": 0}
    assert sorted((await queue.get_children_values(root_id)).values()) == [10, 20]
    [last] = await queue.claim("w", lease=10.0)
    assert last.id == kids[2] and last.lock_token is not None
    await queue.complete(last.id, last.lock_token, "done")
    assert await queue.get_state(root_id) == "waiting"
    assert sorted(map(str, (await queue.get_children_values(root_id)).values())) == [
        "10",
        "20",
        "done",
    ]
    del queue, last
    await _closed(path)


# ------------------------------------------------------------------- group commit


async def test_concurrent_adds_are_all_committed(tmp_path: Path) -> None:
    async def burst() -> tuple[list[tuple[str, str, Any]], Path]:
        queue = LocalJobQueue("burst", tmp_path, max_payload_bytes=1000)
        calls: list[Awaitable[Job]] = []
        for i in range(200):
            calls.append(queue.add("burst", {"i": i}))
            if i % 50 == 25:  # refused in the middle of the batch; the others stand
                calls.append(queue.add("huge", "x" * 5000))
        calls.append(queue.add("same", {"first": True}, job_id="same"))
        calls.append(queue.add("same", {"first": False}, job_id="same"))
        results = await asyncio.wait_for(asyncio.gather(*calls, return_exceptions=True), 30)
        # Plain values only: neither a Job nor an exception (its traceback holds the queue)
        # may keep the queue, and so its file, open.
        return [
            (r.id, r.name, r.data) if isinstance(r, Job) else ("error", type(r).__name__, str(r))
            for r in results
        ], queue.path

    results, path = await burst()
    await _closed(path)
    errors = [(kind, text) for job_id, kind, text in results if job_id == "error"]
    added = [result for result in results if result[0] != "error"]
    assert len(errors) == 4, errors
    for kind, text in errors:
        assert kind == "ConfigError" and "max_payload_bytes" in text
    burst_jobs = [(job_id, data) for job_id, name, data in added if name == "burst"]
    assert [data for _, data in burst_jobs] == [{"i": i} for i in range(200)]
    assert len({job_id for job_id, _ in burst_jobs}) == 200
    same = [(job_id, data) for job_id, name, data in added if name == "same"]
    assert same == [("same", {"first": True}), ("same", {"first": True})]

    queue = LocalJobQueue("burst", tmp_path)
    assert await queue.get_job_counts("waiting") == {"waiting": 201}
    for job_id, data in burst_jobs:
        stored = await queue.get_job(job_id)
        assert stored is not None
        assert (stored.name, stored.data) == ("burst", data)
    names = Counter(job.name for job in await queue.list_jobs("waiting"))
    assert names == {"burst": 200, "same": 1}


async def test_local_flows_across_queues_need_one_directory(tmp_path: Path) -> None:
    # Another queue's file is found beside this one's: a queue opened by its file path (not a
    # directory) cannot reach other queues; the refusal writes nothing.
    queue = LocalJobQueue("flows", tmp_path / "flows.db")
    try:
        flow = FlowJob("root", children=[FlowJob("ok"), FlowJob("kid", queue="kids")])
        with pytest.raises(ConfigError, match=r"kids.*need the queues' files in one directory"):
            await queue.add_flow(flow)
        assert await queue.get_job_counts() == dict.fromkeys(
            ("waiting", "delayed", "active", "waiting_children", "completed", "failed"), 0
        )
        job = await queue.add("p")
        (claimed,) = await queue.claim("w", lease=60.0)
        assert claimed.id == job.id
        with pytest.raises(ConfigError, match="in one directory"):
            await claimed.add_children([FlowJob("kid", queue="kids")])
        assert await queue.get_state(job.id) == "active"
        assert await queue.get_job_counts("waiting_children") == {"waiting_children": 0}
    finally:
        await queue.close()
