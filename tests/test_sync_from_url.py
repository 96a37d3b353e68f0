"""`lanemq.sync.from_url`: `lanemq.from_url`'s URL forms, returning the blocking queue."""

from __future__ import annotations

import lanemq
import lanemq.sync
import pytest
from lanemq import ConfigError
from support import redis_prefix


@pytest.fixture(params=["local", "redis"])
def queue_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> str:
    if request.param == "local":
        return f"local:{tmp_path_factory.mktemp('sync-url')}"
    return str(request.getfixturevalue("redis_url"))


def test_from_url_returns_a_sync_queue_that_another_queue_object_reads(queue_url: str) -> None:
    prefix = {"prefix": redis_prefix()} if queue_url.startswith("redis") else {}
    with lanemq.sync.from_url(queue_url, "sync-url", **prefix) as queue:
        assert isinstance(queue, lanemq.sync.SyncQueue)
        assert queue.queue.name == "sync-url"
        job = queue.add("send", {"to": "ops@example.com"}, priority=3)
        with lanemq.sync.from_url(queue_url, "sync-url", **prefix) as other:
            seen = other.get_job(job.id)
            assert seen is not None and seen.data == {"to": "ops@example.com"}
            assert other.get_job_counts("waiting") == {"waiting": 1}
        queue.call(lambda q: q.obliterate(force=True))


def test_from_url_passes_the_options_to_the_queue(tmp_path: pytest.TempPathFactory) -> None:
    with lanemq.sync.from_url(f"local:{tmp_path}?sync=normal", "opts", max_events=7) as queue:
        assert isinstance(queue.queue, lanemq.LocalJobQueue)


def test_a_bad_url_raises_what_the_async_from_url_raises() -> None:
    with pytest.raises(ConfigError, match=r"unknown queue URL scheme 'ftp'.*\*\*\*"):
        lanemq.sync.from_url("ftp://user:secret@host/x", "bad")
