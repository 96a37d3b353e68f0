"""The dashboard's live counts (``GET /api/counts``, which the overview and a queue's page
read every few seconds) through Starlette's TestClient, on the memory, local and Redis
backends: the counts as the queue's API reads them, one queue or all, never cached, and
guarded by the same host check and access token as the pages (the browser's side, the
numbers changing in place, is in test_dashboard_browser.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from conformance.backends import queue_fixture
from dashboard_support import failed_job, local_client
from lanemq import InMemoryJobQueue, JobQueue
from lanemq.dashboard import app
from starlette.testclient import TestClient

queue = queue_fixture("memory", "local", "redis")


@pytest.fixture
def client(queue: JobQueue) -> Iterator[TestClient]:
    with local_client(app([queue])) as made:
        yield made


async def test_the_counts_are_the_queues(queue: JobQueue, client: TestClient) -> None:
    await failed_job(queue)
    await queue.add_bulk([("send", {"n": n}) for n in range(3)])
    await queue.add("send", None, delay=60)
    await queue.pause()

    response = client.get("/api/counts")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.headers["cache-control"] == "no-store"
    [entry] = response.json()["queues"]
    assert entry["name"] == queue.name and entry["paused"] is True and entry["workers"] == 0
    assert entry["counts"] == (await queue.get_stats()).counts
    assert {k: entry["counts"][k] for k in ("waiting", "delayed", "failed", "active")} == {
        "waiting": 3,
        "delayed": 1,
        "failed": 1,
        "active": 0,
    }

    await queue.add("send", None)
    again = client.get("/api/counts", params={"queue": queue.name}).json()["queues"]
    assert again[0]["counts"] == (await queue.get_stats()).counts
    assert sum(again[0]["counts"].values()) == 6


async def test_one_queue_or_a_404_naming_it() -> None:
    first, second = InMemoryJobQueue("first"), InMemoryJobQueue("second")
    await second.add("send", None)
    with local_client(app([first, second])) as client:
        every = client.get("/api/counts").json()["queues"]
        assert [entry["name"] for entry in every] == ["first", "second"]
        [only] = client.get("/api/counts", params={"queue": "second"}).json()["queues"]
        assert only["name"] == "second" and sum(only["counts"].values()) == 1
        missing = client.get("/api/counts", params={"queue": "third"})
        assert missing.status_code == 404
        assert "third" in missing.json()["error"]


async def test_the_token_and_the_host_guard_the_counts(queue: JobQueue) -> None:
    with local_client(app([queue], token="t0ken-for-tests")) as client:
        refused = client.get("/api/counts")
        assert refused.status_code == 401 and queue.name not in refused.text
        allowed = client.get("/api/counts", headers={"authorization": "Bearer t0ken-for-tests"})
        assert allowed.status_code == 200 and allowed.json()["queues"][0]["name"] == queue.name
    with TestClient(app([queue]), base_url="http://attacker.example") as client:
        assert client.get("/api/counts").status_code == 421
