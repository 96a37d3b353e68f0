"""RedisJobQueue behind Redis Sentinel (a master, a replica and three sentinels, started by
the tests: tests/redis_sentinel_support.py): URLs checked without I/O with every password
masked, and the basic calls (add, claim, complete, a flow, events, reads) through a
``redis+sentinel://`` URL, on the master the sentinels name. The failover mid-run is in
tests/faults/test_sentinel_failover.py."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import lanemq
import pytest
from lanemq import FlowJob, Job, JobWorker, RedisJobQueue
from redis_sentinel_support import RedisSentinelSet
from redis_support import Resp
from support import redis_prefix


@pytest.fixture(scope="module")
def sentinel_set(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisSentinelSet]:
    found = RedisSentinelSet(tmp_path_factory.mktemp("redis-sentinel"))
    found.start()
    try:
        yield found
    finally:
        found.stop()


def test_sentinel_urls_are_checked_without_io_and_keep_every_password_out() -> None:
    url = "redis+sentinel://u:s3cret@127.0.0.1:26379,127.0.0.1:26380/mymaster/2"
    queue = RedisJobQueue("q", f"{url}?sentinel_password=p4ss")
    assert "s3cret" not in repr(queue) and "p4ss" not in repr(queue), repr(queue)
    assert queue.url == (
        "redis+sentinel://u:***@127.0.0.1:26379,127.0.0.1:26380/mymaster/2?sentinel_password=***"
    )
    for bad, why in [
        ("redis+sentinel://:s3cret@127.0.0.1:26379", "no master name"),
        ("redis+sentinel://:s3cret@127.0.0.1:26379/m/x?sentinel_password=p4ss", "database"),
        ("redis+sentinel:///m", "no sentinel"),
        ("redis+sentinel://:s3cret@127.0.0.1:notaport/m", "sentinel"),
    ]:
        with pytest.raises(lanemq.ConfigError, match=why) as refused:
            RedisJobQueue("q", bad)
        assert "s3cret" not in str(refused.value) and "p4ss" not in str(refused.value)
    assert isinstance(lanemq.from_url("redis+sentinel://127.0.0.1/m", "q"), RedisJobQueue)


async def test_an_unknown_master_name_is_a_connection_error_naming_it(
    sentinel_set: RedisSentinelSet,
) -> None:
    url = sentinel_set.url.rsplit("/", 1)[0] + "/nosuchmaster?sentinel_password=p4ss"
    queue = RedisJobQueue("q", url, connect_timeout=1.0)
    try:
        with pytest.raises(lanemq.BackendConnectionError, match="nosuchmaster") as refused:
            await queue.add("x")
        assert "p4ss" not in str(refused.value)
    finally:
        await queue.close()


async def test_jobs_flows_and_events_go_to_the_master_the_sentinels_name(
    sentinel_set: RedisSentinelSet,
) -> None:
    prefix = redis_prefix()
    queue = RedisJobQueue("basic", sentinel_set.url, prefix=prefix, connect_timeout=2.0)
    children = queue.sibling("children")
    try:
        events = queue.events(after=0)
        added = [await queue.add("work", {"n": n}) for n in range(5)]
        flow = await queue.add_flow(
            FlowJob("parent", queue="basic", children=[FlowJob("child", queue="children")])
        )

        async def work(job: Job) -> Any:
            return {"done": job.name}

        for each in (queue, children, queue):
            assert await JobWorker(each, work).run_until_idle(timeout=30) >= 1
        for job in added:
            assert await queue.get_state(job.id) == "completed"
        parent = await queue.get_job(flow.job.id)
        assert parent is not None and parent.state == "completed"
        assert parent.return_value == {"done": "parent"}
        assert (await queue.get_job_counts("completed"))["completed"] == 6
        seen = []
        async for event in events:
            seen.append(event.event)
            if seen.count("completed") == 6:
                break
        assert "added" in seen
        assert sorted(await queue.list_queues()) == ["basic", "children"]
        # The keys are on the master the sentinels name, and replicated.
        master = sentinel_set.master()
        with Resp("127.0.0.1", master.port) as resp:
            assert resp.scan(f"{prefix}:*"), "no key on the master"
    finally:
        await queue.obliterate(force=True)
        await children.obliterate(force=True)
        await queue.close()
        await children.close()
