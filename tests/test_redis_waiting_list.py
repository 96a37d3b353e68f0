"""On Redis, waiting jobs of priority 0 are a list (`<queue keys>:waiting:0`), the others the
sorted set `waiting` (lua/README.md). Checked with a raw client: where each job is, that a
queue of layout 2 (every waiting job in the sorted set, and a hash per field) moves its jobs
over in order when it is opened, that a removal on such a queue leaves nothing behind, and
that orphan repair and obliterate see the list."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from lanemq import RedisJobQueue
from redis_support import Resp, queue_key
from support import EPOCH_MS as T
from support import redis_prefix


@pytest.fixture
async def queue(redis_url: str) -> AsyncIterator[RedisJobQueue]:
    made = RedisJobQueue("waitlist", redis_url, prefix=redis_prefix())
    try:
        yield made
    finally:
        await made.obliterate(force=True)


def _ids(members: list[str]) -> list[str]:
    return [m[14:] for m in members]


def _to_layout_2(raw: Resp, queue: RedisJobQueue, url: str) -> RedisJobQueue:
    """Rewrites the queue as layout 2 kept it: each job field in a hash per field
    (`j:<field>`, job id -> value), the list's members in the sorted set, scored 0 (their
    member order is the list's). Returns the queue opened again, as a process started after
    the upgrade would."""
    for key in raw.scan(queue_key(queue, "job:*")):
        job_id = key[len(queue_key(queue, "job:")) :]
        values = raw.command("HGETALL", key)
        for field, value in zip(values[::2], values[1::2], strict=True):
            raw.command("HSET", queue_key(queue, f"j:{field}"), job_id, value)
        raw.command("DEL", key)
    listed = raw.command("LRANGE", queue_key(queue, "waiting:0"), 0, -1)
    for m in listed:
        raw.command("ZADD", queue_key(queue, "waiting"), 0, m)
    raw.command("DEL", queue_key(queue, "waiting:0"))
    raw.command("HSET", queue_key(queue, "meta"), "layout", "2")
    return RedisJobQueue(queue.name, url, prefix=queue.prefix)


async def test_priority_0_is_the_list_and_the_rest_the_set(
    queue: RedisJobQueue, redis_url: str
) -> None:
    a = await queue.add("a", None, now=T)
    b = await queue.add("b", None, lifo=True, now=T)
    c = await queue.add("c", None, priority=2, now=T)
    with Resp.of(redis_url) as raw:
        assert raw.command("TYPE", queue_key(queue, "waiting:0")) == "list"
        assert _ids(raw.command("LRANGE", queue_key(queue, "waiting:0"), 0, -1)) == [b.id, a.id]
        assert _ids(raw.command("ZRANGE", queue_key(queue, "waiting"), 0, -1)) == [c.id]
        assert raw.command("HGET", queue_key(queue, "meta"), "layout") == "4"
    claimed = await queue.claim("w", max_jobs=3, now=T)
    assert [job.id for job in claimed] == [b.id, a.id, c.id]
    with Resp.of(redis_url) as raw:
        # An empty list is no key at all.
        assert raw.command("EXISTS", queue_key(queue, "waiting:0")) == 0


async def test_a_queue_of_the_layout_before_moves_over_in_order(
    queue: RedisJobQueue, redis_url: str
) -> None:
    old = [(await queue.add("old", {"i": i}, now=T)).id for i in range(3)]
    low = (await queue.add("low", None, priority=5, now=T)).id
    with Resp.of(redis_url) as raw:
        reopened = _to_layout_2(raw, queue, redis_url)
    # Its first read moves the queue over, before reading.
    assert [job.id for job in await reopened.list_jobs("waiting")] == [*old, low]
    assert await reopened.get_counts_per_priority(0, 5) == {0: 3, 5: 1}
    with Resp.of(redis_url) as raw:
        assert raw.command("HGET", queue_key(queue, "meta"), "layout") == "4"
        assert raw.scan(queue_key(queue, "j:*")) == []
        assert _ids(raw.command("LRANGE", queue_key(queue, "waiting:0"), 0, -1)) == old
    new = (await reopened.add("new", None, now=T)).id
    with Resp.of(redis_url) as raw:
        assert _ids(raw.command("LRANGE", queue_key(queue, "waiting:0"), 0, -1)) == [*old, new]
        assert _ids(raw.command("ZRANGE", queue_key(queue, "waiting"), 0, -1)) == [low]
    claimed = await reopened.claim("w", max_jobs=10, now=T)
    assert [job.id for job in claimed] == [*old, new, low]
    assert [job.data for job in claimed[:3]] == [{"i": i} for i in range(3)]


async def test_a_removal_on_the_layout_before_leaves_nothing(
    queue: RedisJobQueue, redis_url: str
) -> None:
    ids = [(await queue.add("j", None, now=T)).id for _ in range(3)]
    with Resp.of(redis_url) as raw:
        queue = _to_layout_2(raw, queue, redis_url)
    await queue.remove(ids[1])
    with Resp.of(redis_url) as raw:
        members = raw.command("LRANGE", queue_key(queue, "waiting:0"), 0, -1)
        members += raw.command("ZRANGE", queue_key(queue, "waiting"), 0, -1)
        assert _ids(members) == [ids[0], ids[2]]
    assert await queue.get_job_counts("waiting") == {"waiting": 2}


async def test_orphan_repair_finds_listed_jobs_and_the_one_that_is_not(
    queue: RedisJobQueue, redis_url: str
) -> None:
    kept = [(await queue.add("k", {"i": i}, now=T)).id for i in range(5)]
    lost = (await queue.add("lost", None, now=T)).id
    with Resp.of(redis_url) as raw:
        # The job's entry in the list goes, its fields stay: an orphan.
        listed = raw.command("LRANGE", queue_key(queue, "waiting:0"), 0, -1)
        (entry,) = [m for m in listed if m[14:] == lost]
        assert raw.command("LREM", queue_key(queue, "waiting:0"), 1, entry) == 1
    assert await queue.remove_orphaned_jobs() == 1
    assert await queue.get_job(lost) is None
    assert [job.id for job in await queue.list_jobs("waiting")] == kept


async def test_obliterate_deletes_the_list(queue: RedisJobQueue, redis_url: str) -> None:
    for i in range(3):
        await queue.add("j", {"i": i}, now=T)
    await queue.obliterate()
    with Resp.of(redis_url) as raw:
        assert raw.scan(queue_key(queue, "*")) == []
