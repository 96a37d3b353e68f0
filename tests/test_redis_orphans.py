"""`RedisJobQueue.remove_orphaned_jobs`: job data that no state set references, written here
with a raw client the way a crash or a bug could leave it (a job's fields without its state
set entry, fields left after the state went), is removed in batches; real jobs, in every
state, are untouched. (That it returns 0 and changes nothing on a healthy queue, on every
backend, is in tests/conformance/test_orphaned_jobs.py.)"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

import pytest
from lanemq import RedisJobQueue
from redis_support import Resp, queue_key
from support import redis_prefix


@pytest.fixture
async def queue(redis_url: str) -> AsyncIterator[RedisJobQueue]:
    made = RedisJobQueue("orphans", redis_url, prefix=redis_prefix())
    try:
        yield made
    finally:
        await made.obliterate(force=True)


def _held_by(raw: Resp, queue: RedisJobQueue, job_id: str) -> list[str]:
    """What holds something of ``job_id``: its hash (``job``) and the logs."""
    held = ["job"] if raw.command("EXISTS", queue_key(queue, f"job:{job_id}")) == 1 else []
    if raw.command("HEXISTS", queue_key(queue, "logs"), job_id) == 1:
        held.append("logs")
    return held


def _write_fields(raw: Resp, queue: RedisJobQueue, job_id: str, **fields: str) -> None:
    for field, value in fields.items():
        assert raw.command("HSET", queue_key(queue, f"job:{job_id}"), field, value) == 1


def _script_calls(raw: Resp) -> int:
    stats = raw.command("INFO", "commandstats")
    found = re.findall(r"cmdstat_(?:fcall|evalsha):calls=(\d+)", stats)
    return sum(int(n) for n in found)


async def test_orphans_are_removed_and_real_jobs_are_untouched(
    queue: RedisJobQueue, redis_url: str
) -> None:
    # Enough real jobs that the scan of job keys takes several batches, in every state.
    real = await queue.add_bulk([("real", {"i": i}) for i in range(1_200)])
    done, failed, running = await queue.claim("w1", max_jobs=3)
    await queue.complete(done.id, done.lock_token or "", "result")
    await queue.fail(failed.id, failed.lock_token or "", "broken", retry=False)
    await queue.add_log(running.id, "working")
    delayed = await queue.add("later", delay=60.0)
    last_in = await queue.add("lifo", lifo=True)
    expected_ids = {job.id for job in real} | {delayed.id, last_in.id}

    with Resp.of(redis_url) as raw:
        # A job whose fields were written, but not its entry in waiting (a create that
        # stopped half-way).
        created = {"name": "real", "data": "{}", "seq": "999999", "created": "1", "state": "0"}
        _write_fields(raw, queue, "ghost-created", **created)
        # What a removal that stopped after deleting the state left: fields and logs.
        _write_fields(raw, queue, "ghost-removed", name="real", data='{"i": -1}', progress="7")
        assert raw.command("HSET", queue_key(queue, "logs"), "ghost-removed", '["line"]') == 1
        # Fields nothing checked: a seq that is not a number, a state that is no state.
        _write_fields(raw, queue, "ghost-garbage", seq="not-a-number", state="9", ord="x")
        # A real job whose state field a bug changed: it is still in waiting, so it stays.
        waiting_one = real[-1].id
        assert raw.command("HSET", queue_key(queue, f"job:{waiting_one}"), "state", "4") == 0
        # Logs left of a job that is gone.
        assert raw.command("HSET", queue_key(queue, "logs"), "ghost-logged", '["line"]') == 1

        ghosts = ["ghost-created", "ghost-removed", "ghost-garbage", "ghost-logged"]
        assert all(_held_by(raw, queue, ghost) for ghost in ghosts)
        before = await queue.get_job_counts()
        calls = _script_calls(raw)

        assert await queue.remove_orphaned_jobs() == 4

        # Batches: more than one script call for the job keys (1,200 of them, about 500 keys
        # of the server a call), and one for the logs.
        assert _script_calls(raw) - calls > 3
        for ghost in ghosts:
            assert _held_by(raw, queue, ghost) == [], ghost
            assert await queue.get_job(ghost) is None
        assert await queue.get_job_counts() == before
        # Every real job keeps its fields.
        for job in [*real, delayed, last_in]:
            assert "job" in _held_by(raw, queue, job.id), job.id
        assert raw.command("HGET", queue_key(queue, f"job:{waiting_one}"), "name") == "real"

    assert await queue.remove_orphaned_jobs() == 0
    assert (await queue.get_logs(running.id))[0] == ["working"]
    assert (await queue.finished_result(done.id)).value == "result"
    assert (await queue.finished_result(failed.id)).reason == "broken"
    # The queue works on: the running job completes, the rest are claimed in order.
    await queue.complete(running.id, running.lock_token or "", None)
    claimed = await queue.claim("w1", max_jobs=2_000)
    assert claimed[0].id == last_in.id
    assert {job.id for job in claimed} | {done.id, failed.id, running.id, delayed.id} == (
        expected_ids
    )


async def test_an_orphan_on_a_queue_that_holds_nothing_else(
    queue: RedisJobQueue, redis_url: str
) -> None:
    with Resp.of(redis_url) as raw:
        _write_fields(raw, queue, "alone", name="x", data="null", seq="1", state="1")
        assert await queue.remove_orphaned_jobs() == 1
        assert _held_by(raw, queue, "alone") == []
    assert await queue.get_job_counts() == dict.fromkeys(
        ("waiting", "delayed", "active", "waiting_children", "completed", "failed"), 0
    )
