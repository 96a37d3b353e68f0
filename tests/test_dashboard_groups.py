"""The dashboard's groups page and its group and cancel actions, through Starlette's
TestClient on the memory, local and Redis backends: what the page shows, what each action
changes (read back through the queue's API)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from html import unescape

import pytest
from conformance.backends import queue_fixture
from dashboard_support import act, local_client
from lanemq import JobQueue
from lanemq.dashboard import app
from starlette.testclient import TestClient

queue = queue_fixture("memory", "local", "redis")


@pytest.fixture
def client(queue: JobQueue) -> Iterator[TestClient]:
    with local_client(app([queue])) as made:
        yield made


def page_of(queue: JobQueue) -> str:
    return f"/queues/{queue.name}"


def group_rows(html: str) -> list[str]:
    return re.findall(r'<tr data-group="([^"]+)">', html)


async def test_the_groups_page_lists_groups_with_counts_and_state(
    queue: JobQueue, client: TestClient
) -> None:
    empty = client.get(f"{page_of(queue)}/groups")
    assert empty.status_code == 200 and "No groups" in empty.text
    for n in range(2):
        await queue.add("prompt", n, group="tenant-b")
    await queue.add("prompt", 0, group="tenant-a", delay=3600)
    await queue.pause_group("tenant-b")

    html = client.get(f"{page_of(queue)}/groups").text
    assert group_rows(html) == ["tenant-a", "tenant-b"]
    row_b = html.split('<tr data-group="tenant-b">', 1)[1].split("</tr>", 1)[0]
    assert "paused" in row_b and ">Resume</button>" in row_b
    assert re.findall(r'<td class="num">(\d+)</td>', row_b)[0] == "2"  # waiting
    queue_page = client.get(page_of(queue)).text
    assert re.search(rf'<a href="{page_of(queue)}/groups">2</a>', queue_page)


async def test_the_queue_page_shows_groups_only_once_there_are_some(
    queue: JobQueue, client: TestClient
) -> None:
    before = client.get(page_of(queue)).text
    assert "<dt>Groups</dt>" not in before and f"{page_of(queue)}/groups" not in before
    await queue.add("prompt", 1, group="tenant-a")
    after = client.get(page_of(queue)).text
    assert f'<dt>Groups</dt><dd><a href="{page_of(queue)}/groups">1</a></dd>' in after
    groups = client.get(f"{page_of(queue)}/groups").text
    assert group_rows(groups) == ["tenant-a"]


async def test_pause_resume_and_remove_a_group(queue: JobQueue, client: TestClient) -> None:
    await queue.add("prompt", 1, group="tenant-a")
    await queue.add("prompt", 2, group="tenant-a", delay=3600)
    groups = f"{page_of(queue)}/groups"
    paused = act(client, f"{page_of(queue)}/pause-group", home=groups, group="tenant-a")
    assert paused.headers["location"] == f"{groups}?done=group-paused"
    assert await queue.is_group_paused("tenant-a")
    assert "The group is paused" in client.get(paused.headers["location"]).text
    act(client, f"{page_of(queue)}/resume-group", home=groups, group="tenant-a")
    assert not await queue.is_group_paused("tenant-a")
    removed = act(client, f"{page_of(queue)}/remove-group", home=groups, group="tenant-a")
    assert removed.headers["location"] == f"{groups}?done=group-removed&n=2"
    assert await queue.get_group_counts("tenant-a", "waiting", "delayed") == {
        "waiting": 0,
        "delayed": 0,
    }


async def test_cancel_from_the_job_page(queue: JobQueue, client: TestClient) -> None:
    job = await queue.add("prompt", 1, group="tenant-a")
    page = f"{page_of(queue)}/job/{job.id}"
    html = client.get(page).text
    assert ">Cancel</button>" in html
    assert "tenant-a" in unescape(html)  # the group among the options
    cancelled = act(client, f"{page_of(queue)}/cancel", home=page, job_id=job.id)
    assert cancelled.headers["location"] == f"{page}?done=cancelled"
    refreshed = await job.refresh()
    assert refreshed.state == "failed"
    assert refreshed.failed_reason == "cancelled from the dashboard"
    assert ">Cancel</button>" not in client.get(page).text
