"""`JobQueue.add`'s path for an add with no options (`jobs/lifecycle.py`) against its full
path: the same inputs store the same job on Redis and in memory, and bad input is refused the
same way on both, adding nothing."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from lanemq import ConfigError, InMemoryJobQueue, JobOptions, JobQueue, RedisJobQueue
from support import redis_prefix

#: Payloads of every JSON shape, non-ASCII text among them.
DATA: list[Any] = [None, {"i": 1}, [1, "two", 3.5], "text", 7, {"nested": {"é": ["ü", None]}}, {}]

#: Fields of `Job.to_dict` that differ between two adds by nature: the id and the time.
VARYING = {"id", "created_at", "delay_until"}


@pytest.fixture(params=["redis", "memory"])
async def queue(request: pytest.FixtureRequest, redis_url: str) -> AsyncIterator[JobQueue]:
    made: JobQueue = (
        RedisJobQueue("fast-add", redis_url, prefix=redis_prefix())
        if request.param == "redis"
        else InMemoryJobQueue("fast-add")
    )
    try:
        yield made
    finally:
        await made.close()


def _stored(job: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in job.items() if k not in VARYING}


@pytest.mark.parametrize("data", DATA)
async def test_an_add_without_options_stores_what_the_full_path_stores(
    queue: JobQueue, data: Any
) -> None:
    fast = await queue.add("job", data)
    full = await queue.add("job", data, JobOptions())
    keywords = await queue.add("job", data, priority=0, attempts=1)  # defaults: the fast path
    dict_options = await queue.add("job", data, {})
    returned = [fast, full, keywords, dict_options]
    read = [await queue.get_job(job.id) for job in returned]
    assert all(job is not None for job in read)
    first = _stored(fast.to_dict())
    assert first["data"] == data and first["state"] == "waiting" and first["name"] == "job"
    for job in returned + read:
        assert job is not None
        assert _stored(job.to_dict()) == first
    assert len({job.id for job in returned}) == 4
    assert await queue.get_job_count("waiting") == 4


async def test_an_add_without_options_takes_now(queue: JobQueue) -> None:
    fast = await queue.add("job", {"a": 1}, now=1_700_000_000_000)
    full = await queue.add("job", {"a": 1}, JobOptions(), now=1_700_000_000_000)
    assert fast.created_at == full.created_at == 1_700_000_000_000


@pytest.mark.parametrize("options", [None, JobOptions(), {"priority": 0}])
@pytest.mark.parametrize(
    ("name", "data", "error", "shown"),
    [
        ("", None, ConfigError, "''"),
        (5, None, ConfigError, "5"),
        (None, None, ConfigError, "None"),
        ("job", {"x": object()}, TypeError, "'job'"),
        ("job", {"x": float("nan")}, TypeError, "'job'"),
        ("bad\ud800name", None, ConfigError, "job name"),
        ("job", {"x": "bad\udc80data"}, ConfigError, "data"),
    ],
)
async def test_bad_input_is_refused_on_both_paths_and_adds_nothing(
    queue: JobQueue, options: Any, name: Any, data: Any, error: type[Exception], shown: str
) -> None:
    with pytest.raises(error) as raised:
        await queue.add(name, data, options)
    assert shown in str(raised.value)
    assert await queue.get_job_count() == 0
