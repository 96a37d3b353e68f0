"""The job page of the dashboard shows each log line with the time it was written (issue 33),
in UTC to the millisecond, on the memory, local and Redis backends; the text escaped; a line
stored without a time (by an older version, written raw here) shown as its text alone."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timezone

import pytest
from conformance.backends import queue_fixture
from dashboard_support import local_client
from lanemq import JobQueue, RedisJobQueue
from lanemq.dashboard import app
from redis_support import Resp, queue_key
from starlette.testclient import TestClient

queue = queue_fixture("memory", "local", "redis")

#: 2026-12-06 16:04:05.123 UTC, and the same day's 09:00:00.007 (a millisecond under 100).
WRITTEN = int(datetime(2026, 12, 6, 16, 4, 5, 123000, tzinfo=timezone.utc).timestamp() * 1000)
MORNING = int(datetime(2026, 12, 6, 9, 0, 0, 7000, tzinfo=timezone.utc).timestamp() * 1000)


@pytest.fixture
def client(queue: JobQueue) -> Iterator[TestClient]:
    with local_client(app([queue])) as made:
        yield made


async def test_the_job_page_shows_each_log_line_with_its_time(
    queue: JobQueue, client: TestClient
) -> None:
    job = await queue.add("w", {})
    await queue.add_log(job.id, "connecting", now=MORNING)
    await queue.add_log(job.id, "<b>sent</b> & done", now=WRITTEN)
    html = client.get(f"/queues/{queue.name}/job/{job.id}").text
    assert (
        '<time datetime="2026-12-06T09:00:00.007Z">2026-12-06 09:00:00.007</time>  connecting\n'
        in html
    )
    assert (
        '<time datetime="2026-12-06T16:04:05.123Z">2026-12-06 16:04:05.123</time>  '
        "&lt;b&gt;sent&lt;/b&gt; &amp; done\n" in html
    )
    assert "<b>sent</b>" not in html


@pytest.mark.parametrize("queue", ["redis"], indirect=True)
async def test_a_line_stored_without_a_time_shows_as_before(
    queue: JobQueue, client: TestClient
) -> None:
    assert isinstance(queue, RedisJobQueue)
    job = await queue.add("w", {})
    with Resp.of(queue.url) as raw:  # as a version before times wrote it: a bare string
        raw.command("HSET", queue_key(queue, "logs"), job.id, '["an old line"]')
    await queue.add_log(job.id, "a new line", now=WRITTEN)
    html = client.get(f"/queues/{queue.name}/job/{job.id}").text
    assert (
        '<pre class="logs">an old line\n'
        '<time datetime="2026-12-06T16:04:05.123Z">2026-12-06 16:04:05.123</time>  a new line\n'
        "</pre>" in html
    )
