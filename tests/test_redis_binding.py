"""Which binding each backend builds: a Redis queue (one server, a cluster, behind Sentinel)
and its siblings a `RedisQueueCore`, which holds the Redis-only calls; the in-process queues
a plain `JobQueueCore`, which has none of them. Making a Redis queue does no I/O, so no
server is needed here."""

from __future__ import annotations

from pathlib import Path

from lanemq import InMemoryJobQueue, LocalJobQueue, RedisJobQueue
from lanemq._core import JobQueueCore, RedisQueueCore

REDIS_ONLY = ("connect", "wait_reachable", "sibling", "server_id", "masked_url")

URLS = (
    "redis://127.0.0.1:1/0",
    "redis+cluster://127.0.0.1:1,127.0.0.1:2",
    "redis+sentinel://127.0.0.1:1/mymaster",
)


def test_redis_queues_and_their_siblings_build_the_redis_binding() -> None:
    for url in URLS:
        queue = RedisJobQueue("binding-q", url)
        assert type(queue._core) is RedisQueueCore, url
        assert isinstance(queue._core, JobQueueCore)
        sibling = queue.sibling("binding-other")
        assert isinstance(sibling, RedisJobQueue)
        assert type(sibling._core) is RedisQueueCore, url
        assert sibling._core.server_id() == queue._core.server_id()
        assert sibling.url == queue.url


async def test_in_process_queues_build_the_plain_binding(tmp_path: Path) -> None:
    for queue in (InMemoryJobQueue("binding-q"), LocalJobQueue("binding-q", tmp_path)):
        async with queue:
            assert type(queue._core) is JobQueueCore
            for name in REDIS_ONLY:
                assert not hasattr(queue._core, name), name
