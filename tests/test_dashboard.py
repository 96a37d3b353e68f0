"""The dashboard's pages and actions through Starlette's TestClient, on the memory, local and
Redis backends: what each page shows, what each action changes (read back through the
queue's API), and the 4xx page every bad value gets. The security rules (CSRF, read-only,
the access token, escaping) are in test_dashboard_security.py."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from html import unescape
from pathlib import Path
from typing import Any

import pytest
from conformance.backends import queue_fixture
from dashboard_support import ORIGIN, act, completed_job, count_shown, failed_job, local_client
from fastapi import FastAPI
from lanemq import (
    Backoff,
    ConfigError,
    FlowJob,
    InMemoryJobQueue,
    JobQueue,
    LocalJobQueue,
    RedisJobQueue,
    WorkerInfo,
)
from lanemq.dashboard import app
from redis_support import free_port
from starlette.testclient import TestClient
from support import redis_prefix

queue = queue_fixture("memory", "local", "redis")
MINUTE = 60_000


@pytest.fixture
def client(queue: JobQueue) -> Iterator[TestClient]:
    with local_client(app([queue])) as made:
        yield made


def iso(ms: int) -> str:
    """How a page marks the time ``ms`` up (``<time datetime=...>``)."""
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def page_of(queue: JobQueue) -> str:
    return f"/queues/{queue.name}"


def row_ids(html: str) -> list[str]:
    return re.findall(r'<tr data-job="([^"]+)">', html)


# ------------------------------------------------------------------------------- pages


async def test_the_overview_shows_each_queue_with_its_counts_and_pause(
    queue: JobQueue, client: TestClient
) -> None:
    await failed_job(queue)
    await queue.add("send", {"n": 1})
    await queue.add("send", {"n": 2}, delay=60)
    response = client.get("/")
    assert response.status_code == 200
    assert f'href="/queues/{queue.name}"' in response.text
    counts = {state: count_shown(response.text, state) for state in ("waiting", "failed")}
    assert counts == {"waiting": 1, "failed": 1}
    assert count_shown(response.text, "delayed") == 1
    assert "running</span>" in response.text
    await queue.pause()
    assert "paused</span>" in client.get("/").text


async def test_the_queue_page_shows_counts_limits_and_schedulers(
    queue: JobQueue, client: TestClient
) -> None:
    await completed_job(queue)
    await queue.set_max_active(3)
    await queue.upsert_scheduler("nightly", cron="0 3 * * *", template=("report", {}))
    html = client.get(page_of(queue)).text
    assert count_shown(html, "completed") == 1
    assert count_shown(html, "delayed") == 1  # the scheduler's pending occurrence
    assert "<dt>Active at most</dt><dd>3</dd>" in html
    assert f'<a href="/queues/{queue.name}/schedulers">1</a>' in html


async def test_every_page_links_the_favicon_the_app_serves(
    queue: JobQueue, client: TestClient
) -> None:
    for path in ("/", page_of(queue), "/nowhere"):
        html = client.get(path).text
        assert '<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">' in html
    icon = client.get("/static/favicon.svg")
    assert icon.status_code == 200
    assert icon.headers["content-type"] == "image/svg+xml"
    assert icon.text.startswith("<svg ") and "</svg>" in icon.text
    # Mounted, the link carries the mount path.
    api = FastAPI()
    api.mount("/ops", app([queue]))
    with local_client(api) as mounted:
        assert 'href="/ops/static/favicon.svg"' in mounted.get("/ops/").text
        assert mounted.get("/ops/static/favicon.svg").status_code == 200


async def test_a_state_is_paged_and_ordered(queue: JobQueue, client: TestClient) -> None:
    added = [await queue.add("send", {"i": i}) for i in range(30)]
    first = client.get(f"{page_of(queue)}/jobs/waiting")
    assert first.status_code == 200
    assert row_ids(first.text) == [job.id for job in added[:25]]
    assert "page 1 of 2" in first.text
    second = client.get(f"{page_of(queue)}/jobs/waiting?page=2")
    assert row_ids(second.text) == [job.id for job in added[25:]]
    newest = client.get(f"{page_of(queue)}/jobs/waiting?order=desc")
    assert row_ids(newest.text)[0] == added[-1].id
    past = client.get(f"{page_of(queue)}/jobs/waiting?page=3")
    assert past.status_code == 404
    assert "page 3 is past the last page (2)" in past.text
    empty = client.get(f"{page_of(queue)}/jobs/failed")
    assert empty.status_code == 200 and "No failed jobs." in empty.text


async def test_finished_states_list_the_newest_first(queue: JobQueue, client: TestClient) -> None:
    older = await failed_job(queue, data={"n": 1})
    newer = await failed_job(queue, data={"n": 2})
    html = client.get(f"{page_of(queue)}/jobs/failed").text
    assert row_ids(html) == [newer.id, older.id]
    assert "ValueError: boom" in html


@pytest.mark.parametrize(
    ("path", "status", "said"),
    [
        ("/queues/nope", 404, "no queue &#39;nope&#39; here"),
        ("/queues/nope/jobs/failed", 404, "no queue &#39;nope&#39; here"),
        ("/queues/{q}/jobs/lost", 404, "unknown state &#39;lost&#39; (states: waiting,"),
        ("/queues/{q}/jobs/waiting?page=abc", 400, "invalid page &#39;abc&#39;"),
        ("/queues/{q}/jobs/waiting?page=0", 400, "invalid page &#39;0&#39;"),
        ("/queues/{q}/jobs/waiting?page=-1", 400, "invalid page &#39;-1&#39;"),
        ("/queues/{q}/jobs/waiting?order=up", 400, "invalid order &#39;up&#39;"),
        ("/queues/{q}/job/404", 404, "no job &#39;404&#39; in queue"),
        ("/queues/{q}/lookup?id=404", 404, "no job &#39;404&#39; in queue"),
        ("/queues/{q}/lookup?id=", 400, "give a job id"),
        ("/queues/{q}/schedulers?page=x", 400, "invalid page &#39;x&#39;"),
        ("/queues/{q}/schedulers?page=2", 404, "past the last page (1)"),
        ("/queues/{q}/retry", 405, "405"),
        ("/nowhere", 404, "404"),
    ],
)
async def test_bad_input_is_a_clear_4xx_page(
    queue: JobQueue, client: TestClient, path: str, status: int, said: str
) -> None:
    response = client.get(path.format(q=queue.name))
    assert response.status_code == status
    assert response.headers["content-type"].startswith("text/html")
    assert said in response.text


async def test_lookup_by_id_opens_the_job(queue: JobQueue, client: TestClient) -> None:
    job = await queue.add("send", {}, job_id="order/42")
    response = client.get(f"{page_of(queue)}/lookup?id=order/42", follow_redirects=False)
    assert response.status_code == 303
    assert response.headers["location"] == f"{page_of(queue)}/job/order%2F42"
    opened = client.get(response.headers["location"])
    assert opened.status_code == 200
    assert f"Job <code>{job.id}</code>" in opened.text


async def test_a_job_id_with_url_characters_round_trips(
    queue: JobQueue, client: TestClient
) -> None:
    await completed_job(queue)
    job_id = "a?b#c/d e"  # (no "%": the TestClient decodes a path twice; uvicorn once)
    await queue.add("send", {}, job_id=job_id, delay=3600)
    found = client.get(f"{page_of(queue)}/lookup", params={"id": job_id}, follow_redirects=False)
    page = found.headers["location"]
    assert page == f"{page_of(queue)}/job/a%3Fb%23c%2Fd%20e"
    html = client.get(page).text
    assert f"Job <code>{job_id}</code>" in html
    back = unescape(re.findall(r'name="back" value="([^"]+)"', html)[0])
    assert back == page
    promoted = act(client, f"{page_of(queue)}/promote", job_id=job_id, back=back)
    assert promoted.headers["location"] == f"{page}?done=promoted"
    assert await queue.get_state(job_id) == "waiting"


async def test_a_failed_job_page_shows_everything_known_of_it(
    queue: JobQueue, client: TestClient
) -> None:
    job = await failed_job(
        queue,
        data={"to": "ann@example.com"},
        reason="SMTPError: 421",
        stacktrace="line 1\nline 2",
        attempts=4,
        backoff=Backoff.exponential(2.0),
        timeout=30,
    )
    await queue.update_progress(job.id, {"sent": 3})
    for n in range(3):
        await queue.add_log(job.id, f"try {n}")
    html = client.get(f"{page_of(queue)}/job/{job.id}").text
    assert '<dd class="job-state">failed</dd>' in html
    assert "&#34;to&#34;: &#34;ann@example.com&#34;" in html  # the data, as JSON
    assert "SMTPError: 421" in html
    assert '<pre class="stacktrace">line 1\nline 2</pre>' in html
    assert re.search(
        r"</time>  try 0\n<time [^>]+>[^<]+</time>  try 1\n<time [^>]+>[^<]+</time>  try 2\n", html
    )
    assert "&#34;sent&#34;: 3" in html  # the progress
    assert "1 made of 4" in html
    assert "<dt>attempts</dt><dd>4</dd>" in html  # the options
    assert "<dt>backoff</dt><dd>Backoff.exponential(2, jitter=0)</dd>" in html
    assert "<dt>timeout</dt><dd>30 s</dd>" in html
    assert "&#34;timeout&#34;: 30000" in html  # as stored
    assert f'value="{job.id}"' in html and ">Retry</button>" in html
    assert ">Promote</button>" not in html


async def test_a_completed_job_page_shows_its_result(queue: JobQueue, client: TestClient) -> None:
    job = await completed_job(queue, result={"delivered": True})
    html = client.get(f"{page_of(queue)}/job/{job.id}").text
    assert '<dd class="job-state">completed</dd>' in html
    assert '<pre class="json result">{\n  &#34;delivered&#34;: true\n}</pre>' in html
    assert "<h2>Error</h2>" not in html


async def test_a_flow_job_links_its_parent_and_children(
    queue: JobQueue, client: TestClient
) -> None:
    root = await queue.add_flow(
        FlowJob("report", {}, children=[FlowJob("part", {"i": 0}), FlowJob("part", {"i": 1})])
    )
    parent, child = root.job, root.children[0].job
    parent_html = client.get(f"{page_of(queue)}/job/{parent.id}").text
    assert '<dd class="job-state">waiting_children</dd>' in parent_html
    assert "2 unprocessed" in parent_html
    for node in root.children:
        assert f'<a href="{page_of(queue)}/job/{node.job.id}">{node.job.id}</a>' in parent_html
    child_html = client.get(f"{page_of(queue)}/job/{child.id}").text
    assert f'<a href="{page_of(queue)}/job/{parent.id}">{parent.id}</a> in' in child_html


async def test_the_schedulers_page_shows_each_with_its_next_run(
    queue: JobQueue, client: TestClient
) -> None:
    pending = await queue.upsert_scheduler("tick", every=90, template=("tick", {"x": 1}))
    await queue.upsert_scheduler("nightly", cron="0 3 * * *", tz="Europe/Paris", template=("r", {}))
    html = client.get(f"{page_of(queue)}/schedulers").text
    assert '<tr data-scheduler="tick">' in html and "every 90 s" in html
    assert "cron <code>0 3 * * *</code> (Europe/Paris)" in html
    assert f'<a href="{page_of(queue)}/job/{pending.id.replace(":", "%3A")}">' in html
    scheduler = await queue.get_scheduler("tick")
    assert scheduler is not None
    assert f'<time datetime="{iso(scheduler.next_run)}"' in html


def chart_of(html: str) -> dict[str, Any]:
    """The first chart's data (what the page's script draws)."""
    found = re.search(r'data-chart="([^"]+)"', html)
    assert found is not None, "no chart on the page"
    return dict(json.loads(unescape(found.group(1))))


async def test_the_charts_show_the_metrics_of_the_last_hour(
    queue: JobQueue, client: TestClient
) -> None:
    html = client.get(page_of(queue)).text
    assert "no metrics yet" in html
    minute = int(time.time() * 1000) // MINUTE * MINUTE
    await queue.record_metrics("completed", [(minute - MINUTE, 7), (minute, 5)], 100)
    await queue.record_metrics("failed", [(minute, 2)], 100)
    html = client.get(page_of(queue)).text
    spec = chart_of(html)
    assert spec["minutes"] == 60
    assert spec["completed"] == {"data": [5, 7], "newest": minute}
    assert spec["failed"] == {"data": [2], "newest": minute}
    assert "12 completed and 2 failed in all." in html
    overview = chart_of(client.get("/").text)  # the overview's small one: the same data
    assert overview["completed"] == spec["completed"]


async def test_the_workers_page_lists_the_workers_heard_from(
    queue: JobQueue, client: TestClient
) -> None:
    assert "No worker has been heard from lately" in client.get(f"{page_of(queue)}/workers").text
    now = int(time.time() * 1000)
    info = WorkerInfo(
        id="w-1",
        queue=queue.name,
        host="app-7",
        pid=4242,
        concurrency=16,
        version="9.9.9",
        started_at=now - 60_000,
        last_heartbeat=now,
        processed=120,
        failed=3,
        running=2,
    )
    await queue.heartbeat_worker(info, ttl=60)
    html = client.get(f"{page_of(queue)}/workers").text
    row = html[html.index('<tr data-worker="w-1">') :].split("</tr>")[0]
    cells = re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
    assert cells[:8] == ["<code>w-1</code>", "app-7", "4242", "9.9.9", "16", "2", "120", "3"]
    assert f'<time datetime="{iso(info.started_at)}"' in row
    assert f'<a href="{page_of(queue)}/workers">1</a>' in client.get(page_of(queue)).text


# ----------------------------------------------------------------------------- actions


async def test_retry_puts_a_failed_job_back_to_waiting(queue: JobQueue, client: TestClient) -> None:
    job = await failed_job(queue)
    response = act(client, f"{page_of(queue)}/retry", job_id=job.id)
    assert response.status_code == 303
    assert response.headers["location"] == f"{page_of(queue)}/job/{job.id}?done=retried"
    assert await queue.get_state(job.id) == "waiting"
    assert "The job is waiting again." in client.get(response.headers["location"]).text


async def test_retry_all_failed(queue: JobQueue, client: TestClient) -> None:
    jobs = [await failed_job(queue, data={"i": i}) for i in range(3)]
    response = act(client, f"{page_of(queue)}/retry-failed")
    assert response.status_code == 303
    assert response.headers["location"].endswith("/jobs/failed?done=retried-failed&n=3")
    assert [await queue.get_state(job.id) for job in jobs] == ["waiting"] * 3
    assert "3 failed job(s) are waiting again." in client.get(response.headers["location"]).text


async def test_remove_promote_and_clean(queue: JobQueue, client: TestClient) -> None:
    done = await completed_job(queue)
    delayed = await queue.add("later", {}, delay=3600)
    gone = await queue.add("drop", {})
    removed = act(client, f"{page_of(queue)}/remove", job_id=gone.id)
    assert removed.headers["location"] == f"{page_of(queue)}/jobs/waiting?done=removed"
    assert await queue.get_job(gone.id) is None
    promoted = act(client, f"{page_of(queue)}/promote", job_id=delayed.id)
    assert promoted.status_code == 303
    assert await queue.get_state(delayed.id) == "waiting"
    kept = act(client, f"{page_of(queue)}/clean", state="completed", grace="3600")
    assert kept.headers["location"].endswith("/jobs/completed?done=cleaned&n=0")
    assert await queue.get_state(done.id) == "completed"
    cleaned = act(client, f"{page_of(queue)}/clean", state="completed", grace="0", limit="0")
    assert cleaned.headers["location"].endswith("/jobs/completed?done=cleaned&n=1")
    assert await queue.get_job(done.id) is None


async def test_pause_and_resume(queue: JobQueue, client: TestClient) -> None:
    paused = act(client, f"{page_of(queue)}/pause")
    assert paused.headers["location"] == f"{page_of(queue)}?done=paused"
    assert await queue.is_paused()
    assert ">Resume</button>" in client.get(page_of(queue)).text
    act(client, f"{page_of(queue)}/resume")
    assert not await queue.is_paused()


async def test_an_action_returns_to_the_page_it_was_posted_from(
    queue: JobQueue, client: TestClient
) -> None:
    job = await failed_job(queue)
    back = f"{page_of(queue)}/jobs/failed?order=asc&done=old"
    response = act(client, f"{page_of(queue)}/retry", job_id=job.id, back=back)
    assert response.headers["location"] == f"{page_of(queue)}/jobs/failed?order=asc&done=retried"


@pytest.mark.parametrize("back", ["//evil.example/x", "https://evil.example/", "/\\evil", "x"])
async def test_a_back_field_never_leaves_the_dashboard(
    queue: JobQueue, client: TestClient, back: str
) -> None:
    response = act(client, f"{page_of(queue)}/pause", back=back)
    assert response.headers["location"] == f"{page_of(queue)}?done=paused"


async def test_refused_actions_say_why_and_change_nothing(
    queue: JobQueue, client: TestClient
) -> None:
    done = await completed_job(queue)
    waiting = await queue.add("send", {})
    refused = act(client, f"{page_of(queue)}/retry", job_id=waiting.id)
    assert refused.status_code == 409
    assert waiting.id in refused.text
    assert await queue.get_state(waiting.id) == "waiting"
    missing = act(client, f"{page_of(queue)}/remove", job_id="nope")
    assert missing.status_code == 404 and "nope" in missing.text
    for fields, said in (
        ({"state": "lost", "grace": "0"}, "unknown state &#39;lost&#39;"),
        ({"state": "completed", "grace": "soon"}, "invalid grace &#39;soon&#39;"),
        ({"state": "completed", "grace": "-1"}, "invalid grace &#39;-1&#39;"),
        ({"state": "completed", "grace": "nan"}, "invalid grace &#39;nan&#39;"),
        ({"state": "completed", "grace": "1e308"}, "invalid grace &#39;1e308&#39;"),
        ({"state": "completed", "grace": "0", "limit": "-2"}, "invalid limit &#39;-2&#39;"),
        ({"state": "completed", "grace": "0", "limit": "9" * 20}, "invalid limit &#39;999"),
    ):
        bad = act(client, f"{page_of(queue)}/clean", **fields)
        assert bad.status_code == 400, fields
        assert said in bad.text
    assert await queue.get_state(done.id) == "completed"
    assert act(client, f"{page_of(queue)}/retry").status_code == 400  # no job_id
    assert act(client, "/queues/nope/pause").status_code == 404


async def test_an_action_takes_only_a_urlencoded_form(queue: JobQueue, client: TestClient) -> None:
    response = client.post(
        f"{page_of(queue)}/pause",
        content=b'{"csrf": "x"}',
        headers={"content-type": "application/json", "origin": ORIGIN},
    )
    assert response.status_code == 415
    assert not await queue.is_paused()


# ----------------------------------------------------------------- mounting and sources


async def test_mounted_in_fastapi_every_link_and_action_carries_the_mount_path() -> None:
    queue = InMemoryJobQueue("mounted")
    job = await failed_job(queue)
    api = FastAPI()
    api.mount("/ops/dashboard", app([queue]))
    with local_client(api) as client:
        html = client.get("/ops/dashboard/queues/mounted/jobs/failed").text
        assert 'href="/ops/dashboard/static/dashboard.css"' in html
        assert f'href="/ops/dashboard/queues/mounted/job/{job.id}"' in html
        assert 'action="/ops/dashboard/queues/mounted/retry"' in html
        assert client.get("/ops/dashboard/static/dashboard.js").status_code == 200
        response = act(
            client, "/ops/dashboard/queues/mounted/retry", home="/ops/dashboard/", job_id=job.id
        )
        assert response.status_code == 303
        assert response.headers["location"].startswith("/ops/dashboard/queues/mounted/job/")
    assert await queue.get_state(job.id) == "waiting"


async def test_a_local_url_shows_every_queue_of_the_directory(tmp_path: Path) -> None:
    first = LocalJobQueue("alpha", tmp_path)
    await first.add("send", {})
    with local_client(app(url=f"local:{tmp_path}")) as client:
        html = client.get("/").text
        assert '<tr data-queue="alpha">' in html
        second = LocalJobQueue("beta", tmp_path)
        await failed_job(second)
        html = client.get("/").text  # listed again: the new queue shows
        assert '<tr data-queue="beta">' in html
        assert count_shown(client.get("/queues/beta").text, "failed") == 1
        missing = client.get("/queues/gamma")
        assert missing.status_code == 404
        assert "queues: &#39;alpha&#39;, &#39;beta&#39;" in missing.text
    assert not (tmp_path / "gamma.sqlite3").exists()  # a lookup creates no queue
    await first.close()
    await second.close()


async def test_a_redis_url_shows_the_queues_under_its_prefix(redis_url: str) -> None:
    prefix = redis_prefix()
    queue = RedisJobQueue("mail", redis_url, prefix=prefix)
    await failed_job(queue)
    with local_client(app(url=redis_url, prefix=prefix)) as client:
        html = client.get("/").text
        assert '<tr data-queue="mail">' in html
        job = (await queue.list_jobs("failed"))[0]
        assert act(client, "/queues/mail/retry", job_id=job.id).status_code == 303
    assert await queue.get_state(job.id) == "waiting"
    await queue.obliterate(force=True)
    await queue.close()


def test_a_backend_that_cannot_answer_is_a_503_page() -> None:
    down = RedisJobQueue("q", f"redis://127.0.0.1:{free_port()}/0", connect_timeout=0.5)
    with local_client(app([down])) as client:
        for path in ("/", "/queues/q", "/queues/q/jobs/failed"):
            response = client.get(path)
            assert response.status_code == 503
            assert "cannot connect" in response.text


def test_what_the_app_refuses() -> None:
    queue = InMemoryJobQueue("q")
    for call, said in (
        (lambda: app(), "either queues or a url"),
        (lambda: app([queue], url="local:./x"), "either queues or a url"),
        (lambda: app([]), "no queues to show"),
        (lambda: app([queue, InMemoryJobQueue("q")]), "queue 'q' is given twice"),
        (lambda: app(url="memory://"), "memory:// URL names no queues"),
        (lambda: app(url="bogus://x"), "unknown queue URL scheme 'bogus'"),
        (lambda: app(url="redis://:hunter2@host:nope/0"), "redis://:***@host:nope/0"),
        (lambda: app(url="local:./x", prefix="p"), "prefix applies to Redis URLs only"),
        (lambda: app([queue], prefix="p"), "prefix goes with url"),
        (lambda: app([queue], token=""), "invalid dashboard token"),
    ):
        with pytest.raises(ConfigError, match=re.escape(said)) as caught:
            call()
        assert "hunter2" not in str(caught.value)
    with pytest.raises(TypeError, match="sequence of JobQueue"):
        app(queue)  # type: ignore[arg-type]
