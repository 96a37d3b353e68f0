"""`lanemq.list_queue_names(url)`: the queues a URL's backend holds, for a dashboard or a
command given no queue name. It creates nothing."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from lanemq import ConfigError, LocalJobQueue, RedisJobQueue, list_queue_names

_prefixes = itertools.count(1)


def _files(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


async def test_a_local_directory_lists_its_queue_files(tmp_path: Path) -> None:
    for name in ("emails", "reports"):
        queue = LocalJobQueue(name, tmp_path)
        await queue.add("a")
        await queue.close()
    (tmp_path / "notes.txt").write_text("not a queue")
    before = _files(tmp_path)
    assert await list_queue_names(f"local:{tmp_path}") == ["emails", "reports"]
    assert await list_queue_names(f"local://{tmp_path}") == ["emails", "reports"]
    assert _files(tmp_path) == before  # nothing created


async def test_a_missing_directory_or_a_file_url_lists_nothing(tmp_path: Path) -> None:
    assert await list_queue_names(f"local:{tmp_path / 'absent'}") == []
    assert not (tmp_path / "absent").exists()
    assert await list_queue_names(f"local:{tmp_path / 'one.db'}") == []
    assert await list_queue_names("memory://") == []


async def test_redis_lists_the_queues_under_its_prefix(redis_url: str) -> None:
    prefix = f"lq{next(_prefixes)}"
    queues = [RedisJobQueue(name, redis_url, prefix=prefix) for name in ("b-queue", "a.queue")]
    other = RedisJobQueue("elsewhere", redis_url, prefix=f"{prefix}x")
    try:
        for queue in [*queues, other]:
            await queue.add("a")
        assert await list_queue_names(redis_url, prefix=prefix) == ["a.queue", "b-queue"]
        assert await queues[0].list_queues() == ["a.queue", "b-queue"]
        assert await list_queue_names(redis_url, prefix=f"{prefix}x") == ["elsewhere"]
        # A prefix with glob characters matches itself only.
        assert await list_queue_names(redis_url, prefix=f"{prefix[:-1]}*") == []
    finally:
        for queue in [*queues, other]:
            await queue.obliterate(force=True)
            await queue.close()


@pytest.mark.parametrize("url", ["nope://x", "local://relative", "memory://x", "local:"])
async def test_a_bad_url_is_refused_by_name(url: str) -> None:
    with pytest.raises(ConfigError, match="URL"):
        await list_queue_names(url)
