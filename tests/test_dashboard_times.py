"""A job's wait and run times on the dashboard (its page, and the lists of active, completed
and failed jobs), on the memory, local and Redis backends: jobs are driven through the
queue's API at given times (``now=``), so the times shown are known; and the units the
times are written in."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import pytest
from conformance.backends import queue_fixture
from dashboard_support import local_client
from lanemq import JobQueue
from lanemq.dashboard import app
from lanemq.dashboard._times import duration
from starlette.testclient import TestClient

queue = queue_fixture("memory", "local", "redis")
MINUTE = 60_000


@pytest.fixture
def client(queue: JobQueue) -> Iterator[TestClient]:
    with local_client(app([queue])) as made:
        yield made


def shown(html: str, kind: str) -> list[str]:
    """The texts of the cells (or facts) of class ``kind`` ("wait-time", "run-time")."""
    return re.findall(rf'class="(?:num )?{kind}"[^>]*>([^<]*)<', html)


def fact(html: str, label: str) -> str | None:
    found = re.search(rf"<dt>{label}</dt><dd[^>]*>([^<]*)<", html)
    return None if found is None else found.group(1)


def test_durations_read_in_the_unit_that_fits() -> None:
    assert [duration(ms) for ms in (0, 7, 999)] == ["0 ms", "7 ms", "999 ms"]
    assert [duration(ms) for ms in (1000, 1500, 9_949, 9_960, 42_400)] == [
        "1 s",
        "1.5 s",
        "9.9 s",
        "10 s",
        "42 s",
    ]
    assert [duration(ms) for ms in (60_000, 90_000, 30 * MINUTE)] == ["1 min", "1.5 min", "30 min"]
    assert [duration(ms) for ms in (60 * MINUTE, 150 * MINUTE, 50 * 60 * MINUTE)] == [
        "1 h",
        "2.5 h",
        "50 h",
    ]
    assert duration(None) == "-"


async def test_a_finished_job_shows_its_wait_and_run(queue: JobQueue, client: TestClient) -> None:
    start = int(time.time() * 1000) - 60 * MINUTE
    # Added with a 2 s delay, started 1.5 s after it was due, done 250 ms later.
    added = await queue.add("send", {"n": 1}, delay=2, now=start)
    [job] = await queue.claim("w", 30, 1, now=start + 3_500)
    assert job.id == added.id and job.lock_token is not None
    await queue.complete(job.id, job.lock_token, None, now=start + 3_750)
    # Waiting 120 ms, failed for good 90 s after its start.
    failing = await queue.add("send", {"n": 2}, now=start + 10_000)
    [job] = await queue.claim("w", 300, 1, now=start + 10_120)
    assert job.id == failing.id and job.lock_token is not None
    await queue.fail(
        job.id, job.lock_token, "ValueError: no", None, retry=False, now=start + 100_120
    )

    page = client.get(f"/queues/{queue.name}/job/{added.id}").text
    assert (fact(page, "Waited"), fact(page, "Ran")) == ("1.5 s", "250 ms")
    assert fact(page, "Running for") is None
    page = client.get(f"/queues/{queue.name}/job/{failing.id}").text
    assert (fact(page, "Waited"), fact(page, "Ran")) == ("120 ms", "1.5 min")

    listed = client.get(f"/queues/{queue.name}/jobs/completed").text
    assert '<th class="num">Waited</th><th class="num">Ran</th>' in listed
    assert (shown(listed, "wait-time"), shown(listed, "run-time")) == (["1.5 s"], ["250 ms"])
    listed = client.get(f"/queues/{queue.name}/jobs/failed").text
    assert (shown(listed, "wait-time"), shown(listed, "run-time")) == (["120 ms"], ["1.5 min"])


async def test_an_active_job_shows_how_long_it_has_run(queue: JobQueue, client: TestClient) -> None:
    # Started 20 min ago after waiting 2 s: "20 min" whatever the few seconds the test takes.
    start = int(time.time() * 1000) - 20 * MINUTE
    added = await queue.add("send", None, now=start - 2_000)
    [job] = await queue.claim("w", 3600, 1, now=start)
    assert job.id == added.id

    page = client.get(f"/queues/{queue.name}/job/{added.id}").text
    assert (fact(page, "Waited"), fact(page, "Running for")) == ("2 s", "20 min")
    listed = client.get(f"/queues/{queue.name}/jobs/active").text
    assert '<th class="num">Running for</th>' in listed
    assert (shown(listed, "wait-time"), shown(listed, "run-time")) == (["2 s"], ["20 min"])


async def test_a_job_not_started_shows_no_times(queue: JobQueue, client: TestClient) -> None:
    added = await queue.add("send", None)
    page = client.get(f"/queues/{queue.name}/job/{added.id}").text
    assert fact(page, "Waited") is None and fact(page, "Ran") is None
    listed = client.get(f"/queues/{queue.name}/jobs/waiting").text
    assert "Waited" not in listed and shown(listed, "run-time") == []
