"""RedisJobQueue as a shared, multi-process backend: several worker processes on one queue,
a SIGKILLed worker's jobs recovered, stale lock tokens refused, obliterate leaving no key
behind, the one-slot key layout (Redis Cluster), reconnecting after a server restart, the
eviction-policy check, and connection errors that never show the password. The generic job
contract is covered by the conformance suite (tests/conformance), which runs on this backend
too.

Every test uses its own key prefix on the shared server (the session ``redis_url``); tests
that restart or configure a server start their own redis-server on a free port. The raw
checks of the keyspace use a tiny RESP client over a socket (no Redis client library)."""

from __future__ import annotations

import asyncio
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from lanemq import (
    BackendAuthenticationError,
    BackendConnectionError,
    Backoff,
    ConfigError,
    FlowJob,
    Job,
    JobStateError,
    JobWorker,
    LockMismatchError,
    RedisJobQueue,
)
from redis_support import MakeServer, Resp, address, free_port
from support import Spawn, eventually, race_shared_workers, redis_prefix, shared_worker

WAIT = 10.0  # upper bound for anything awaited in a test; never reached when things work


# --------------------------------------------------------------------------- helpers


def _glob_escape(text: str) -> str:
    """Escapes the glob characters of SCAN MATCH (a queue's keys contain braces only, but
    the queue name could contain anything else)."""
    return "".join("\\" + c if c in "*?[]\\" else c for c in text)


def _crc16_xmodem(data: bytes) -> int:
    crc = 0
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else crc << 1
            crc &= 0xFFFF
    return crc


def _keyslot(key: str) -> int:
    """The Redis Cluster slot of ``key``: CRC16 of the hash tag (the text between the first
    '{' and the next '}', when not empty), else of the whole key, modulo 16384."""
    raw = key.encode()
    start = raw.find(b"{")
    if start >= 0:
        end = raw.find(b"}", start + 1)
        if end > start + 1:
            raw = raw[start + 1 : end]
    return _crc16_xmodem(raw) % 16384


async def _stop(worker: JobWorker, running: asyncio.Task[None]) -> None:
    """Closes a worker started with ``create_task(worker.run())``, bounded."""
    try:
        await asyncio.wait_for(worker.close(force=True), WAIT)
    finally:
        if not running.done():
            running.cancel()
        await asyncio.gather(running, return_exceptions=True)


# ---------------------------------------------------------- two worker processes

SHARED_WORKER = shared_worker('lanemq.RedisJobQueue("shared", sys.argv[2], prefix=sys.argv[3])')


async def test_two_worker_processes_complete_every_job_once(
    redis_url: str, tmp_path: Path, spawn: Spawn
) -> None:
    prefix = redis_prefix()
    queue = RedisJobQueue("shared", redis_url, prefix=prefix)
    added = await queue.add_bulk([("task", {"i": i}) for i in range(200)])
    for i in range(200, 300):
        added.append(await queue.add("task", {"i": i}))
    all_ids = {job.id for job in added}
    assert len(all_ids) == 300

    try:
        children, runs = await race_shared_workers(
            spawn, SHARED_WORKER, [redis_url, prefix], tmp_path, all_ids
        )
        assert await queue.get_job_counts() == {
            "waiting": 0,
            "delayed": 0,
            "active": 0,
            "waiting_children": 0,
            "completed": 300,
            "failed": 0,
        }
        # Each job's return value names the process that recorded it.
        pid_of = {}
        for child, run in zip(children, runs, strict=True):
            pid_of.update(dict.fromkeys(run, child.pid))
        completed = await queue.list_jobs("completed")
        assert len(completed) == 300
        for job in completed:
            assert job.return_value == {"pid": pid_of[job.id]}
            assert job.attempts_made == 1
    finally:
        await queue.obliterate(force=True)


async def test_worker_processes_release_a_parent_in_a_queue_they_never_opened(
    redis_url: str, tmp_path: Path, spawn: Spawn
) -> None:
    # The workers only know the queue "shared": completing a child asks for its parent's
    # queue's keys (LANEMQ_NEED_QUEUE), which their client links before anything is written.
    prefix = redis_prefix()
    parents = RedisJobQueue("parents", redis_url, prefix=prefix)
    kids = RedisJobQueue("shared", redis_url, prefix=prefix)
    flows = [
        await parents.add_flow(
            FlowJob(
                "root", {"n": n}, children=[FlowJob("kid", i, queue="shared") for i in range(60)]
            )
        )
        for n in range(3)
    ]
    ids = {kid.job.id for root in flows for kid in root.children}
    assert len(ids) == 180
    try:
        await race_shared_workers(spawn, SHARED_WORKER, [redis_url, prefix], tmp_path, ids)
        for root in flows:
            assert await parents.get_state(root.job.id) == "waiting"
            assert len(await parents.get_children_values(root.job.id)) == 60
        released = [
            e.job_id
            for e in await parents.read_events()
            if e.event == "waiting" and e.fields.get("prev") == "waiting-children"
        ]
        assert sorted(released) == sorted(root.job.id for root in flows)
    finally:
        await parents.obliterate(force=True)
        await kids.obliterate(force=True)


# ---------------------------------------------- a killed worker's jobs are recovered

HOLDER = """
import asyncio, sys
from lanemq import JobWorker, RedisJobQueue

async def main() -> None:
    queue = RedisJobQueue("recover", sys.argv[1], prefix=sys.argv[2])

    async def hold(job):
        print("holding", job.id, flush=True)
        await asyncio.sleep(3600)

    worker = JobWorker(queue, hold, concurrency=int(sys.argv[3]), lease=1.0,
                       renew_every=0.3, stalled_interval=60.0)
    await asyncio.wait_for(worker.run(), 30)  # never reached: the test kills this process

asyncio.run(main())
"""


async def test_jobs_of_a_sigkilled_worker_process_are_recovered(
    redis_url: str, spawn: Spawn
) -> None:
    prefix = redis_prefix()
    queue = RedisJobQueue("recover", redis_url, prefix=prefix)
    ids = {job.id for job in await queue.add_bulk([("hold", {"i": i}) for i in range(5)])}
    child = await spawn(HOLDER, redis_url, prefix, "5")
    held = {(await child.line()).split()[1] for _ in range(5)}
    assert held == ids

    async def all_active() -> bool:
        return (await queue.get_job_counts("active"))["active"] == 5

    await eventually(all_active, "the child to hold 5 jobs")
    # Past one lease: the live child renews its leases, so nothing is stalled yet.
    await asyncio.sleep(1.3)
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
    try:
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
    finally:
        await queue.obliterate(force=True)


# ------------------------------------------------------------------ stale tokens


async def test_stale_token_is_refused_after_the_job_moved_on(redis_url: str) -> None:
    queue = RedisJobQueue("stale", redis_url, prefix=redis_prefix())
    try:
        job = await queue.add("task", {"n": 1})
        [first] = await queue.claim("worker-a", lease=0.2)
        assert first.id == job.id
        old_token = first.lock_token
        assert old_token
        await asyncio.sleep(0.35)  # the lease expires (real time)
        assert await queue.recover_stalled() == ([job.id], [])
        assert await queue.get_state(job.id) == "waiting"

        [second] = await queue.claim("worker-b", lease=30.0)
        assert second.id == job.id
        new_token = second.lock_token
        assert new_token and new_token != old_token
        assert second.stalled_count == 1

        with pytest.raises(LockMismatchError):
            await queue.complete(job.id, old_token, "from the old holder")
        with pytest.raises(LockMismatchError):
            await queue.renew(job.id, old_token, 30.0)
        with pytest.raises(LockMismatchError):
            await queue.fail(job.id, old_token, "late failure")
        assert await queue.renew_many([(job.id, old_token)], 30.0) == [job.id]
        assert await queue.get_state(job.id) == "active"  # still held by worker-b

        await queue.complete(job.id, new_token, "from the new holder")
        done = await queue.get_job(job.id)
        assert done is not None
        assert (done.state, done.return_value) == ("completed", "from the new holder")
        with pytest.raises(JobStateError):  # finished: not active any more
            await queue.complete(job.id, old_token, "too late")
    finally:
        await queue.obliterate(force=True)


async def test_a_completed_job_holds_no_lock_while_its_lease_would_last(redis_url: str) -> None:
    """A completion writes the job with one command (lua/README.md, "Redis work per job"): it
    keeps its worker, its expiry becomes 0, and only an active job's token is a lock. So a
    job completed well within its lease reads without a lock, a repeat of its completion is
    answered, and removing or cleaning it is not refused as locked."""
    prefix = redis_prefix()
    queue = RedisJobQueue("completed-lock", redis_url, prefix=prefix)
    try:
        kept, removed, cleaned = [await queue.add("task", {"n": n}) for n in range(3)]
        claimed = await queue.claim("worker-a", lease=3600.0, max_jobs=3)
        token = {job.id: job.lock_token or "" for job in claimed}
        assert set(token) == {kept.id, removed.id, cleaned.id}
        for job_id, held in token.items():
            await queue.complete(job_id, held, "ok")

        done = await queue.get_job(kept.id)
        assert done is not None
        assert (done.state, done.lock_token, done.return_value) == ("completed", None, "ok")
        await queue.complete(kept.id, token[kept.id], "ok")  # a repeat: answered, no change
        with Resp.of(redis_url) as raw:
            record = f"{prefix}:{{completed-lock}}:job:{kept.id}"
            assert raw.command("HGET", record, "expires") == "0"
            assert raw.command("HGET", record, "worker") == "worker-a"

        await queue.remove(removed.id)
        assert await queue.get_job(removed.id) is None
        assert sorted(await queue.clean(0.0, state="completed")) == sorted([kept.id, cleaned.id])
        assert await queue.get_job_counts() == {
            "waiting": 0,
            "delayed": 0,
            "active": 0,
            "waiting_children": 0,
            "completed": 0,
            "failed": 0,
        }
    finally:
        await queue.obliterate(force=True)


# ------------------------------------------------------- jobs of every kind, keys


async def _fill(queue: RedisJobQueue) -> dict[str, str]:
    """Puts jobs in every state (with progress, logs, a stack trace, events) and sets every
    queue setting; returns the job ids by role."""
    waiting = await queue.add("plain", {"n": 1})
    await queue.add("urgent", {"n": 2}, priority=3)
    await queue.add("stack", {"n": 3}, lifo=True)
    await queue.add("custom", {"n": 4}, job_id="order-42")
    await queue.add("custom", {"n": 4}, job_id="order-42")  # duplicated
    delayed = await queue.add("later", {"n": 5}, delay=3600.0)
    retried = await queue.add("flaky", {"n": 6}, attempts=3, backoff=Backoff.fixed(60.0))
    done = await queue.add("done", {"n": 7})
    bad = await queue.add("bad", {"n": 8}, attempts=1)
    held = await queue.add("held", {"n": 9})
    ids = {job.id for job in (retried, done, bad, held)}
    claimed = await queue.claim("worker-a", lease=3600.0, max_jobs=20)
    token = {job.id: job.lock_token or "" for job in claimed if job.id in ids}
    assert set(token) == ids
    for job in claimed:  # the others go back to waiting
        if job.id not in ids:
            await queue.release(job.id, job.lock_token or "")
    await queue.update_progress(done.id, {"pct": 100})
    await queue.add_log(done.id, "done: line 1")
    await queue.add_log(bad.id, "bad: line 1")
    await queue.add_log(bad.id, "bad: line 2")
    await queue.add_log(held.id, "held: working")
    await queue.update_progress(held.id, 50)
    await queue.complete(done.id, token[done.id], {"total": 42})
    assert await queue.fail(bad.id, token[bad.id], RuntimeError("card declined"), "trace") is False
    await queue.save_stacktrace(bad.id, ["frame 1", "frame 2"], "card declined")
    assert await queue.fail(retried.id, token[retried.id], "try again") is True
    await queue.set_rate_limit(1000, 1.0)
    await queue.set_max_active(50)
    await queue.pause()
    await queue.resume()
    assert await queue.wait_for_job(timeout=0.05) is True
    counts = await queue.get_job_counts()
    assert counts == {
        "waiting": 4,
        "delayed": 2,
        "active": 1,
        "waiting_children": 0,
        "completed": 1,
        "failed": 1,
    }, counts
    assert {ev.event for ev in await queue.read_events()} >= {
        "added",
        "waiting",
        "delayed",
        "active",
        "progress",
        "completed",
        "failed",
        "retries-exhausted",
        "duplicated",
        "paused",
        "resumed",
    }
    assert await queue.get_logs(bad.id) == (["bad: line 1", "bad: line 2"], 2)
    return {"waiting": waiting.id, "delayed": delayed.id, "held": held.id, "bad": bad.id}


async def test_obliterate_force_leaves_no_key_behind(redis_url: str) -> None:
    prefix = redis_prefix()
    queue = RedisJobQueue("wipe", redis_url, prefix=prefix)
    other = RedisJobQueue("neighbour", redis_url, prefix=prefix)
    await other.add("keep", {"n": 1})
    with Resp.of(redis_url) as raw:
        try:
            ids = await _fill(queue)
            before = raw.scan(f"{_glob_escape(prefix)}:*")
            mine = f"{prefix}:{{wipe}}:"
            theirs = f"{prefix}:{{neighbour}}:"
            assert all(key.startswith((mine, theirs)) for key in before), before
            kinds = {key[len(mine) :] for key in before if key.startswith(mine)}
            assert {"meta", "waiting", "delayed", "active", "completed", "failed"} <= kinds
            assert {"logs", "events"} <= kinds
            assert {f"job:{job_id}" for job_id in ids.values()} <= kinds

            await queue.obliterate(force=True)
            left = raw.scan(f"{_glob_escape(mine)}*")
            assert left == [], f"obliterate(force=True) left keys behind: {left}"
            for job_id in ids.values():
                assert await queue.get_job(job_id) is None
            assert await queue.get_job_counts() == dict.fromkeys(
                ("waiting", "delayed", "active", "waiting_children", "completed", "failed"), 0
            )
            # The neighbouring queue under the same prefix is untouched.
            assert (await other.get_job_counts("waiting"))["waiting"] == 1
            assert raw.scan(f"{_glob_escape(theirs)}*") != []
            await other.obliterate(force=True)
            assert raw.scan(f"{_glob_escape(prefix)}:*") == []
        finally:
            await queue.obliterate(force=True)
            await other.obliterate(force=True)


async def test_every_key_of_a_queue_is_on_the_slot_of_its_name(
    redis_url: str, own_redis: MakeServer
) -> None:
    # The Python slot function against known values, and against a cluster-mode server.
    assert _crc16_xmodem(b"123456789") == 0x31C3
    assert _keyslot("foo") == 12182
    assert _keyslot("{user1000}.following") == _keyslot("user1000")
    assert _keyslot("foo{}{bar}") == _crc16_xmodem(b"foo{}{bar}") % 16384  # empty tag
    assert _keyslot("foo{{bar}}zap") == _keyslot("{bar")
    cluster = own_redis()
    cluster.start(
        "--cluster-enabled", "yes", "--cluster-config-file", str(cluster.directory / "nodes.conf")
    )

    prefix = redis_prefix()
    name = "orders.eu-1"
    queue = RedisJobQueue(name, redis_url, prefix=prefix)
    try:
        await _fill(queue)
        with Resp.of(redis_url) as raw:
            keys = raw.scan(f"{_glob_escape(prefix)}:*")
        assert len(keys) >= 10, keys
        base = f"{prefix}:{{{name}}}:"
        assert [key for key in keys if not key.startswith(base)] == []
        slot = _keyslot(name)
        slots = {key: _keyslot(key) for key in keys}
        assert set(slots.values()) == {slot}, {k: s for k, s in slots.items() if s != slot}
        with Resp("127.0.0.1", cluster.port) as server:
            assert server.command("CLUSTER", "KEYSLOT", name) == slot
            for sample in ("foo", "foo{}{bar}", "foo{{bar}}zap", "{user1000}.following"):
                assert server.command("CLUSTER", "KEYSLOT", sample) == _keyslot(sample)
            for key, mine in slots.items():
                assert server.command("CLUSTER", "KEYSLOT", key) == mine, key
    finally:
        await queue.obliterate(force=True)


async def test_small_sets_that_take_every_claim_are_not_listpacks(redis_url: str) -> None:
    """A listpack finds a member by scanning it: the active set is made a skiplist from the
    first add, while a job's own hash stays a small listpack (performance and memory
    properties, checked here because nothing else would notice them regress)."""
    prefix = redis_prefix()
    queue = RedisJobQueue("encodings", redis_url, prefix=prefix)
    try:
        job = await queue.add("j", {"n": 1})
        [claimed] = await queue.claim("w1")
        assert claimed.id == job.id
        with Resp.of(redis_url) as server:
            base = f"{prefix}:{{encodings}}:"
            assert server.command("OBJECT", "ENCODING", base + "active") == "skiplist"
            assert server.command("OBJECT", "ENCODING", base + f"job:{job.id}") == "listpack"
    finally:
        await queue.obliterate(force=True)


# ------------------------------------------------------------------- reconnection


async def test_worker_resumes_after_the_server_restarts(own_redis: MakeServer) -> None:
    server = own_redis()
    server.start()
    prefix = redis_prefix()
    queue = RedisJobQueue("restart", server.url, prefix=prefix)
    errors: list[BaseException] = []

    async def process(job: Job) -> dict[str, Any]:
        return {"n": job.data["n"]}

    worker = JobWorker(queue, process, concurrency=4, lease=2.0, stalled_interval=0.5)
    worker.on("error", errors.append)
    running = asyncio.create_task(worker.run())
    try:
        before = [await queue.add("task", {"n": n}) for n in range(5)]
        for job in before:
            assert await asyncio.wait_for(job.wait(timeout=5.0), 6.0) == {"n": job.data["n"]}

        server.stop()
        await asyncio.sleep(0.5)
        if running.done():
            raise AssertionError(
                f"the worker died while the server was down: {running.exception()!r}"
            )
        server.start()  # same port, empty (--save "")

        fresh = RedisJobQueue("restart", server.url, prefix=prefix)
        after = [await fresh.add("task", {"n": n}) for n in range(100, 105)]

        async def all_completed() -> bool:
            if running.done():
                raise AssertionError(
                    f"the worker died after the restart: {running.exception()!r} "
                    f"(error hooks: {errors!r})"
                )
            return (await fresh.get_job_counts("completed"))["completed"] == len(after)

        await eventually(all_completed, "the worker to resume after the restart", 8.0)
        for job in after:
            assert (await fresh.finished_result(job.id)).value == {"n": job.data["n"]}
        assert not running.done()
        # The queue object the worker holds works again too.
        assert (await queue.get_job_counts("completed"))["completed"] == len(after)
    finally:
        await _stop(worker, running)


async def test_idle_waits_reuse_one_blocking_connection(own_redis: MakeServer) -> None:
    """An idle worker waits once per job it gets: each wait must not open a connection."""
    server = own_redis()
    server.start()
    queue = RedisJobQueue("idle", server.url, prefix=redis_prefix())

    def connections_received() -> int:
        with Resp("127.0.0.1", server.port) as probe:
            stats = probe.command("INFO", "stats")
        line = next(x for x in stats.splitlines() if x.startswith("total_connections_received:"))
        return int(line.split(":")[1])

    try:
        await queue.connect()  # the command connection and the wire
        assert await queue.wait_for_job(timeout=0.01) is False  # opens the blocking connection
        before = connections_received()
        for _ in range(20):
            assert await queue.wait_for_job(timeout=0.01) is False
        job = await queue.add("j")
        claimed, _ = queue._wait_and_claim("w1", 30.0, 1, 1.0)
        assert [j.id for j in await claimed] == [job.id]
        for _ in range(5):
            claimed, _ = queue._wait_and_claim("w1", 30.0, 1, 0.01)
            assert await claimed == []
        # The one connection more is the probe reading the count.
        assert connections_received() - before == 1
    finally:
        await queue.close()


# ----------------------------------------------------------------- eviction policy


async def test_evicting_server_is_refused_unless_allowed(own_redis: MakeServer) -> None:
    server = own_redis()
    server.start("--maxmemory-policy", "allkeys-lru")

    with pytest.raises(ConfigError) as raised:
        await RedisJobQueue("evict", server.url, prefix=redis_prefix()).connect()
    assert isinstance(raised.value, ValueError)
    assert "allkeys-lru" in str(raised.value)
    assert "maxmemory-policy" in str(raised.value)

    queue = RedisJobQueue("evict", server.url, prefix=redis_prefix(), allow_eviction=True)
    job = await queue.add("task", {"n": 1})
    stored = await queue.get_job(job.id)
    assert stored is not None and stored.data == {"n": 1}

    with Resp("127.0.0.1", server.port) as raw:
        assert raw.command("CONFIG", "SET", "maxmemory-policy", "volatile-ttl") == "OK"
        with pytest.raises(ConfigError, match="volatile-ttl"):
            await RedisJobQueue("evict", server.url, prefix=redis_prefix()).add("never")
        assert raw.command("CONFIG", "SET", "maxmemory-policy", "noeviction") == "OK"
    safe = RedisJobQueue("evict", server.url, prefix=redis_prefix())
    assert (await safe.get_job_counts("waiting"))["waiting"] == 0


# ------------------------------------------------------------- connection errors


def _texts(error: BaseException) -> str:
    """Everything an error says: its text, repr and args, and those of its causes."""
    parts: list[str] = []
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        parts += [str(current), repr(current), *map(repr, current.args)]
        current = current.__cause__ or current.__context__
    return "\n".join(parts)


async def test_connection_error_names_the_address_but_not_the_password() -> None:
    port = free_port()  # nothing listens there
    queue = RedisJobQueue("q", f"redis://user:s3cret@127.0.0.1:{port}/0")  # no I/O yet
    with pytest.raises(BackendConnectionError) as raised:
        await queue.add("never")
    text = _texts(raised.value)
    assert f"127.0.0.1:{port}" in str(raised.value), text
    assert "s3cret" not in text, text
    assert "user:" not in text, text


async def test_refused_credentials_name_the_address_but_not_the_password(redis_url: str) -> None:
    host, port = address(redis_url)
    queue = RedisJobQueue("q", f"redis://nobody:s3cret@{host}:{port}/0", prefix=redis_prefix())
    with pytest.raises(BackendAuthenticationError) as raised:
        await queue.connect()
    text = _texts(raised.value)
    assert f"{host}:{port}" in str(raised.value), text
    assert "s3cret" not in text, text


def test_unparsable_url_does_not_echo_the_password() -> None:
    with pytest.raises(ConfigError) as raised:
        RedisJobQueue("q", "redis://user:s3cret@127.0.0.1:notaport/0")
    assert "s3cret" not in _texts(raised.value)
