"""The dashboard's search box through Starlette's TestClient, on the memory, local and Redis
backends: the query read as criteria (words: an id prefix or a part of a name; ``path=value``:
the data), the jobs found listed as the job lists are, the link to the next page, a bad query
as a 400 page naming it, and the access token guarding the page as it guards the others (the
browser's side is in test_dashboard_browser.py)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from html import unescape

import pytest
from conformance.backends import queue_fixture
from dashboard_support import local_client
from lanemq import JobQueue
from lanemq.dashboard import app
from lanemq.dashboard._search import criteria
from starlette.testclient import TestClient

queue = queue_fixture("memory", "local", "redis")


@pytest.fixture
def client(queue: JobQueue) -> Iterator[TestClient]:
    with local_client(app([queue])) as made:
        yield made


def row_ids(html: str) -> list[str]:
    return re.findall(r'<tr data-job="([^"]+)">', html)


def search(client: TestClient, queue: JobQueue, **params: str) -> str:
    response = client.get(f"/queues/{queue.name}/search", params=params)
    assert response.status_code == 200, response.text
    return response.text


def test_a_query_is_words_and_data_criteria() -> None:
    assert criteria("order 1") == {"text": "order 1"}
    assert criteria('user.id=7 to=a@example.com code="7" send') == {
        "text": "send",
        "data": {"user.id": 7, "to": "a@example.com", "code": "7"},
    }
    assert criteria("=x") == {"text": "=x"}


async def test_the_queue_page_has_the_search_box(client: TestClient, queue: JobQueue) -> None:
    html = client.get(f"/queues/{queue.name}").text
    assert f'action="/queues/{queue.name}/search"' in html and 'name="q"' in html


async def test_search_by_id_name_and_data(client: TestClient, queue: JobQueue) -> None:
    await queue.add("send", {"user": {"id": 7}}, job_id="order-1")
    await queue.add("resize", {"user": {"id": 8}}, job_id="img-1")
    await queue.add("send-later", {"user": {"id": 7}}, job_id="order-2", delay=60)
    assert row_ids(search(client, queue, q="order")) == ["order-1", "order-2"]
    assert row_ids(search(client, queue, q="send")) == ["order-1", "order-2"]
    assert row_ids(search(client, queue, q="user.id=7")) == ["order-1", "order-2"]
    assert row_ids(search(client, queue, q="user.id=7", state="delayed")) == ["order-2"]
    assert row_ids(search(client, queue, q="img user.id=8")) == ["img-1"]
    none = search(client, queue, q="nothing-like-it")
    assert row_ids(none) == [] and "No job found" in none


async def test_the_next_page_is_a_link_with_the_cursor(client: TestClient, queue: JobQueue) -> None:
    await queue.add_bulk([("send", {"i": i}) for i in range(30)])
    first = search(client, queue, q="send")
    assert len(row_ids(first)) == 25
    more = re.search(r'href="([^"]*cursor=25)" rel="next"', first)
    assert more is not None
    rest = client.get(more.group(1).replace("&amp;", "&")).text
    assert row_ids(rest) == [str(i) for i in range(26, 31)]
    assert 'rel="next"' not in rest


async def test_bad_queries_are_400_pages_naming_them(client: TestClient, queue: JobQueue) -> None:
    await queue.add("send", None)
    for params, named in (
        ({"q": "a..b=1"}, "a..b"),
        ({"q": "x", "state": "paused"}, "paused"),
        ({"q": "x", "cursor": "-1"}, "cursor"),
        ({"q": "x" * 1001}, "longer than 1000"),
    ):
        response = client.get(f"/queues/{queue.name}/search", params=params)
        assert response.status_code == 400, params
        assert named in response.text
        # Said above the search box, which keeps the query to correct; no job listed.
        problem = re.search(r'<p class="problem" role="alert">([^<]*)</p>', response.text)
        assert problem is not None and named in unescape(problem.group(1)), params
        assert 'role="search"' in response.text and row_ids(response.text) == []
    kept = client.get(f"/queues/{queue.name}/search", params={"q": "a..b=1"}).text
    assert 'name="q" value="a..b=1"' in kept


async def test_the_token_guards_the_search_page(queue: JobQueue) -> None:
    await queue.add("send", None, job_id="secret-1")
    with local_client(app([queue], token="t0ken-for-tests")) as client:
        refused = client.get(f"/queues/{queue.name}/search", params={"q": "secret"})
        assert refused.status_code == 401 and "secret-1" not in refused.text
        allowed = client.get(
            f"/queues/{queue.name}/search", params={"q": "secret", "token": "t0ken-for-tests"}
        )
        assert allowed.status_code == 200
        assert row_ids(allowed.text) == ["secret-1"]
