"""The names the mounted dashboard app answers to (``allowed_hosts``), through Starlette's
TestClient: without a token the loopback names only, with a token any name unless
``allowed_hosts`` is given. A request naming another host (a page that rebound its DNS name
to this machine) gets 421 on every path, and its action changes nothing."""

from __future__ import annotations

import re

import pytest
from dashboard_support import csrf_of, local_client
from lanemq import ConfigError, InMemoryJobQueue
from lanemq.dashboard import app
from starlette.testclient import TestClient

TOKEN = "hosts-token-value"
BEARER = {"authorization": f"Bearer {TOKEN}"}
FOREIGN = ("evil.example", "evil.example:8080", "localhost.evil.example", "127.0.0.1.nip.io")
LOOPBACK = ("127.0.0.1", "127.0.0.1:8080", "localhost", "LocalHost:80", "[::1]", "[::1]:8080")


def status(client: TestClient, host: str, path: str = "/", **headers: str) -> int:
    return client.get(path, headers={"host": host, **headers}).status_code


async def test_without_a_token_it_answers_only_to_loopback_names() -> None:
    queue = InMemoryJobQueue("q")
    with TestClient(app([queue])) as client:  # (its requests name the host "testserver")
        assert client.get("/").status_code == 421
        for host in (*LOOPBACK, "[0:0:0:0:0:0:0:1]:80", "localhost."):
            assert status(client, host) == 200, host
        for host in FOREIGN:
            for path in ("/", "/queues/q", "/login", "/static/dashboard.css"):
                refused = client.get(path, headers={"host": host})
                assert refused.status_code == 421, (host, path)
                assert "does not answer to the host" in refused.text
                assert refused.headers["x-frame-options"] == "DENY"


async def test_a_rebound_page_cannot_post_an_action() -> None:
    # The page of evil.example, its name now resolving to 127.0.0.1: Origin and Host agree,
    # and it read the CSRF token from a page (were that page served to it).
    queue = InMemoryJobQueue("q")
    with local_client(app([queue])) as client:
        csrf = csrf_of(client.get("/").text)
        response = client.post(
            "/queues/q/pause",
            data={"csrf": csrf},
            headers={"host": "evil.example:8080", "origin": "http://evil.example:8080"},
            follow_redirects=False,
        )
        assert response.status_code == 421
        assert not await queue.is_paused()
        same = client.post(
            "/queues/q/pause", data={"csrf": csrf}, headers={"origin": "http://localhost"}
        )
        assert same.history[0].status_code == 303
    assert await queue.is_paused()


def test_with_a_token_any_name_is_answered_unless_allowed_hosts_is_given() -> None:
    queue = InMemoryJobQueue("q")
    with TestClient(app([queue], token=TOKEN)) as client:
        assert client.get("/", headers=BEARER).status_code == 200  # "testserver"
        assert status(client, "evil.example", **BEARER) == 200
    named = app([queue], token=TOKEN, allowed_hosts=["Dash.Example", "10.0.0.5", "::1"])
    with TestClient(named) as client:
        for host in ("dash.example:8443", "DASH.EXAMPLE", "10.0.0.5", "[::1]:80"):
            assert status(client, host, **BEARER) == 200, host
        for host in ("testserver", "localhost", "127.0.0.1", "evil.example"):
            assert status(client, host, **BEARER) == 421, host
            assert status(client, host, f"/?token={TOKEN}") == 421, host


def test_allowed_hosts_replace_the_default_and_a_star_allows_any() -> None:
    queue = InMemoryJobQueue("q")
    with TestClient(app([queue], allowed_hosts=["testserver"])) as client:
        assert client.get("/").status_code == 200
        assert status(client, "localhost") == 421
    with TestClient(app([queue], allowed_hosts=["*"])) as client:
        assert status(client, "evil.example") == 200


def test_a_malformed_host_header_is_a_400() -> None:
    with TestClient(app([InMemoryJobQueue("q")])) as client:
        for host in ("localhost:port", "[::1", "[nope]:80", "a b", "user@localhost", ""):
            assert status(client, host) == 400, host


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ("localhost", "allowed_hosts must be a list of names, not the str 'localhost'"),
        ([], "allowed_hosts is empty"),
        (["localhost:8080"], "invalid allowed host 'localhost:8080'"),
        (["http://dash.example"], "invalid allowed host 'http://dash.example'"),
        (["dash.example/x"], "invalid allowed host 'dash.example/x'"),
        ([""], "invalid allowed host ''"),
        ([None], "invalid allowed host None"),
    ],
)
def test_bad_allowed_hosts_are_refused(given: object, said: str) -> None:
    with pytest.raises(ConfigError, match="^" + re.escape(said)):
        app([InMemoryJobQueue("q")], allowed_hosts=given)  # type: ignore[arg-type]
