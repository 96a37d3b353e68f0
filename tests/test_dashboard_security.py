"""The dashboard's security rules, through Starlette's TestClient: actions need the page's
CSRF token and a same-origin request; read-only mode shows and accepts none; the access
token is asked for, kept in an HttpOnly SameSite=Strict cookie, and never shown; job data
(user input) is escaped everywhere it appears."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator

import pytest
from conformance.backends import queue_fixture
from dashboard_support import ORIGIN, act, csrf_of, failed_job, local_client
from lanemq import FlowJob, InMemoryJobQueue, JobQueue, WorkerInfo
from lanemq.dashboard import app
from starlette.testclient import TestClient

queue = queue_fixture("memory", "local", "redis")
TOKEN = "s3cret-token-value"


@pytest.fixture
def client(queue: JobQueue) -> Iterator[TestClient]:
    with local_client(app([queue])) as made:
        yield made


# -------------------------------------------------------------------------------- CSRF


@pytest.mark.parametrize(
    ("fields", "headers", "said"),
    [
        ({}, {"origin": ORIGIN}, "CSRF token is missing"),
        ({"csrf": "forged"}, {"origin": ORIGIN}, "CSRF token is missing or stale"),
        ({"csrf": "*"}, {}, "names no origin"),
        ({"csrf": "*"}, {"origin": "null"}, "names no origin"),
        ({"csrf": "*"}, {"origin": "https://evil.example"}, "another origin"),
        ({"csrf": "*"}, {"referer": "https://evil.example/page"}, "another origin"),
        ({"csrf": "*"}, {"origin": f"{ORIGIN}.evil.example"}, "another origin"),
    ],
)
async def test_an_action_without_the_token_or_from_another_origin_is_refused(
    queue: JobQueue,
    client: TestClient,
    fields: dict[str, str],
    headers: dict[str, str],
    said: str,
) -> None:
    job = await failed_job(queue)
    if fields.get("csrf") == "*":
        fields["csrf"] = csrf_of(client.get("/").text)
    response = client.post(
        f"/queues/{queue.name}/retry", data={**fields, "job_id": job.id}, headers=headers
    )
    assert response.status_code == 403
    assert said in response.text
    assert await queue.get_state(job.id) == "failed"


async def test_a_same_origin_referer_stands_for_a_missing_origin(
    queue: JobQueue, client: TestClient
) -> None:
    job = await failed_job(queue)
    response = act(
        client,
        f"/queues/{queue.name}/retry",
        origin=None,
        job_id=job.id,
        csrf=csrf_of(client.get("/").text),
    )
    assert response.status_code == 403  # neither header
    referred = client.post(
        f"/queues/{queue.name}/retry",
        data={"job_id": job.id, "csrf": csrf_of(client.get("/").text)},
        headers={"referer": f"{ORIGIN}/queues/{queue.name}/jobs/failed"},
        follow_redirects=False,
    )
    assert referred.status_code == 303
    assert await queue.get_state(job.id) == "waiting"


def test_each_app_has_its_own_csrf_token() -> None:
    queue = InMemoryJobQueue("q")
    with local_client(app([queue])) as one, local_client(app([queue])) as other:
        mine = csrf_of(one.get("/").text)
        assert mine != csrf_of(other.get("/").text)
        assert act(other, "/queues/q/pause", csrf=mine).status_code == 403


# --------------------------------------------------------------------------- read-only


async def test_read_only_shows_no_action_and_refuses_every_one(queue: JobQueue) -> None:
    job = await failed_job(queue)
    delayed = await queue.add("later", {}, delay=3600)
    with local_client(app([queue], read_only=True)) as client:
        pages = [
            "/",
            f"/queues/{queue.name}",
            f"/queues/{queue.name}/jobs/failed",
            f"/queues/{queue.name}/jobs/delayed",
            f"/queues/{queue.name}/job/{job.id}",
            f"/queues/{queue.name}/job/{delayed.id}",
        ]
        for path in pages:
            html = client.get(path).text
            assert 'method="post"' not in html, path
            for label in ("Retry", "Remove", "Promote", "Clean", "Pause", "Resume"):
                assert f">{label}" not in html, (path, label)
            assert "read-only</span>" in html
        for action, fields in (
            ("retry", {"job_id": job.id}),
            ("retry-failed", {}),
            ("remove", {"job_id": job.id}),
            ("promote", {"job_id": delayed.id}),
            ("clean", {"state": "failed", "grace": "0"}),
            ("pause", {}),
        ):
            response = act(client, f"/queues/{queue.name}/{action}", csrf="any", **fields)
            assert response.status_code == 403, action
            assert "the dashboard is read-only" in response.text
    assert await queue.get_state(job.id) == "failed"
    assert await queue.get_state(delayed.id) == "delayed"
    assert not await queue.is_paused()


# ------------------------------------------------------------------------ access token


def token_client(queue: JobQueue) -> TestClient:
    return local_client(app([queue], token=TOKEN))


async def test_without_the_token_every_page_asks_for_it(queue: JobQueue) -> None:
    job = await failed_job(queue)
    with token_client(queue) as client:
        for path in ("/", f"/queues/{queue.name}", f"/queues/{queue.name}/job/{job.id}"):
            response = client.get(path)
            assert response.status_code == 401, path
            assert 'name="token"' in response.text
            assert job.failed_reason not in response.text
        assert client.get("/?token=wrong").status_code == 401
        assert client.get("/", headers={"authorization": "Bearer wrong"}).status_code == 401
        client.cookies.set("lanemq_dashboard", "forged")
        assert client.get("/").status_code == 401
        # The style sheet and script are not secret: the sign-in page needs them.
        assert client.get("/static/dashboard.css").status_code == 200
        refused = client.post(
            f"/queues/{queue.name}/retry", data={"job_id": job.id}, headers={"origin": ORIGIN}
        )
        assert refused.status_code == 401
    assert await queue.get_state(job.id) == "failed"


async def test_the_token_in_the_url_signs_in_once_and_leaves_the_url(queue: JobQueue) -> None:
    with token_client(queue) as client:
        response = client.get(
            f"/queues/{queue.name}/jobs/failed?order=asc&token={TOKEN}", follow_redirects=False
        )
        assert response.status_code == 303
        assert response.headers["location"] == f"/queues/{queue.name}/jobs/failed?order=asc"
        cookie = response.headers["set-cookie"]
        assert cookie.startswith("lanemq_dashboard=")
        assert "HttpOnly" in cookie and "samesite=strict" in cookie.lower()
        assert "Path=/" in cookie
        assert TOKEN not in cookie  # the cookie stands for the token; it is not the token
        page = client.get(response.headers["location"])
        assert page.status_code == 200
        assert TOKEN not in page.text
        encoded = client.get(f"/queues/{queue.name}/job/a%3Fb?token={TOKEN}&x=1")
        assert encoded.history[0].headers["location"] == f"/queues/{queue.name}/job/a%3Fb?x=1"
        # Signed in: actions work as usual.
        assert act(client, f"/queues/{queue.name}/pause").status_code == 303
    assert await queue.is_paused()


async def test_a_bearer_header_signs_in_too(queue: JobQueue) -> None:
    with token_client(queue) as client:
        response = client.get("/", headers={"authorization": f"Bearer {TOKEN}"})
        assert response.status_code == 200
        assert "lanemq_dashboard=" in response.headers["set-cookie"]
        assert client.get(f"/queues/{queue.name}").status_code == 200  # by the cookie now


async def test_the_sign_in_form(queue: JobQueue) -> None:
    with token_client(queue) as client:
        wrong = client.post("/login", data={"token": "guess"}, headers={"origin": ORIGIN})
        assert wrong.status_code == 401
        assert "That token is not the right one." in wrong.text
        foreign = client.post("/login", data={"token": TOKEN}, headers={"origin": "http://x.y"})
        assert foreign.status_code == 403
        assert client.get("/").status_code == 401
        right = client.post(
            "/login", data={"token": TOKEN}, headers={"origin": ORIGIN}, follow_redirects=False
        )
        assert right.status_code == 303 and right.headers["location"] == "/"
        assert client.get("/").status_code == 200


async def test_the_token_is_never_shown(queue: JobQueue, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    dashboard = app([queue], token=TOKEN)
    with local_client(dashboard) as client:
        bodies = [client.get(f"/?token={TOKEN}").text]
        for path in ("/queues/nope", f"/queues/{queue.name}/jobs/lost", "/login"):
            bodies.append(client.get(path).text)
        bodies.append(act(client, f"/queues/{queue.name}/retry", job_id="nope").text)
    assert all(TOKEN not in body for body in bodies)
    assert TOKEN not in repr(dashboard)
    assert TOKEN not in repr(dashboard.user_middleware) + repr(vars(dashboard))
    # (what the test client logs of its own requests aside)
    logged = [record.getMessage() for record in caplog.records if record.name != "httpx2"]
    assert all(TOKEN not in line for line in logged)


# --------------------------------------------------------------------------- escaping

XSS = '<script>alert("x")</script><img src=x onerror=alert(1)>'


async def test_job_data_and_texts_are_escaped_everywhere(queue: JobQueue) -> None:
    job = await failed_job(
        queue, name=XSS, data={XSS: XSS}, reason=XSS, stacktrace=XSS, job_id=f'"{XSS}'
    )
    await queue.add_log(job.id, XSS)
    await queue.update_progress(job.id, XSS)
    await queue.add_flow(FlowJob(XSS, XSS, children=[FlowJob("child", XSS)]))
    await queue.upsert_scheduler("s", every=60, template=(XSS, XSS))
    now = int(time.time() * 1000)
    worker = WorkerInfo(XSS, queue.name, XSS, 1, 1, XSS, now, now, 0, 0, 0)
    await queue.heartbeat_worker(worker, ttl=60)
    with local_client(app([queue])) as client:
        pages = [
            f"/queues/{queue.name}/workers",
            f"/queues/{queue.name}/job/{job.id}",
            f"/queues/{queue.name}/jobs/failed",
            f"/queues/{queue.name}/jobs/waiting_children",
            f"/queues/{queue.name}/schedulers",
            f"/queues/{queue.name}/lookup?id={XSS}",
            f"/queues/{XSS}",
        ]
        for path in pages:
            html = client.get(path).text
            assert "<script>alert" not in html, path
            assert "<img src=x" not in html, path
            assert "onerror=alert(1)>" not in html, path
        job_page = client.get(f"/queues/{queue.name}/job/{job.id}").text
        assert "&lt;script&gt;alert(" in job_page
        assert 'value="&#34;&lt;script&gt;' in job_page  # the id in a form field
        # A script that slipped through anyway would not run: only the app's own may.
        policy = client.get("/").headers["content-security-policy"]
        assert "script-src 'self'" in policy and "default-src 'none'" in policy


async def test_every_response_carries_the_protective_headers(client: TestClient) -> None:
    for path in ("/", "/nowhere", "/static/dashboard.js"):
        headers = client.get(path).headers
        assert headers["x-frame-options"] == "DENY"
        assert headers["x-content-type-options"] == "nosniff"
        assert "frame-ancestors 'none'" in headers["content-security-policy"]
