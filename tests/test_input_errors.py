"""Bad input outside the per-backend suite (tests/conformance/test_validation.py): Redis URLs
that are not a Redis server's, data directories and queue files lanemq cannot use, and Redis
queues whose names the queue-name rule refuses. Each is a clear error naming the class of the
problem and the value, and writes nothing."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import textwrap
import warnings
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from lanemq import BackendConnectionError, ConfigError, LocalJobQueue, RedisJobQueue, StorageError
from redis_support import Resp
from support import redis_prefix

# ------------------------------------------------------------ Redis queue names


def _rename_queue(redis_url: str, prefix: str, old: str, new: str) -> None:
    """Moves the keys of queue ``old`` to the name ``new``, as a queue made under that name
    before the queue-name rule would have them."""
    with Resp.of(redis_url) as raw:
        for key in raw.scan(f"{prefix}:{{{old}}}:*"):
            raw.command("RENAME", key, key.replace(f"{{{old}}}", f"{{{new}}}", 1))


async def test_an_existing_redis_queue_with_an_old_name_opens_with_a_warning(
    redis_url: str,
) -> None:
    prefix = redis_prefix()
    made = RedisJobQueue("legacy", redis_url, prefix=prefix)
    job = await made.add("kept", {"n": 1})
    await made.close()
    _rename_queue(redis_url, prefix, "legacy", "orders:eu")
    queue = RedisJobQueue("orders:eu", redis_url, prefix=prefix)
    try:
        with pytest.warns(DeprecationWarning, match="orders:eu") as caught:
            assert await queue.get_job_counts("waiting") == {"waiting": 1}
        assert "1-200 characters" in str(caught[0].message)
        # Once per queue object; the queue works as before.
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            [claimed] = await queue.claim("w")
            assert claimed.id == job.id and claimed.data == {"n": 1}
    finally:
        await queue.obliterate(force=True)
        await queue.close()


async def test_a_new_redis_queue_with_a_name_outside_the_rule_writes_nothing(
    redis_url: str,
) -> None:
    # Redis took "a/b", "x:y", "..", spaces and "*"; now only a queue that exists keeps one.
    prefix = redis_prefix()
    for name in ("a/b", "x:y", "..", "a b", "*"):
        queue = RedisJobQueue(name, redis_url, prefix=prefix)
        try:
            with pytest.raises(ConfigError, match="1-200 characters"):
                await queue.add("x")
        finally:
            await queue.close()
    with Resp.of(redis_url) as raw:
        assert raw.scan(f"{prefix}:*") == []
