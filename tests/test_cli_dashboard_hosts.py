"""``lanemq dashboard``, run as a subprocess, answers only requests that name one of its
hosts (127.0.0.1, localhost, [::1], the --host value, each --allowed-host): any other
``Host`` gets 421 on GET and POST, with or without a token, and changes nothing. What a page
that rebound its DNS name to 127.0.0.1 would send."""

from __future__ import annotations

import asyncio
from pathlib import Path

from dashboard_support import Server, csrf_of, http, serve
from lanemq import LocalJobQueue

SECRET = "hosts-cli-token-123"


def is_paused(directory: Path) -> bool:
    async def read() -> bool:
        queue = LocalJobQueue("q", directory)
        try:
            return await queue.is_paused()
        finally:
            await queue.close()

    return asyncio.run(read())


def allowed_names(server: Server) -> list[str]:
    port = server.url.rpartition(":")[2]
    names = ["127.0.0.1", "localhost", "LOCALHOST", "[::1]", "127.0.0.2", "dash.example"]
    return [f"{name}:{port}" for name in names] + ["Dash.Example"]


def test_a_foreign_host_gets_421_and_each_allowed_name_200(tmp_path: Path) -> None:
    asyncio.run(LocalJobQueue("q", tmp_path / "data").close())
    args = ("local:data", "--queue", "q", "--allowed-host", "dash.example")
    with serve(*args, cwd=tmp_path, host="127.0.0.2") as server, http(server) as client:
        for host in allowed_names(server):
            assert client.get("/", headers={"host": host}).status_code == 200, host
        csrf = csrf_of(client.get("/").text)
        evil = "evil.example:" + server.url.rpartition(":")[2]
        refused = client.get("/", headers={"host": evil})
        assert refused.status_code == 421
        assert "does not answer to the host 'evil.example'" in refused.text
        posted = client.post(
            "/queues/q/pause",
            data={"csrf": csrf},
            headers={"host": evil, "origin": f"http://{evil}"},
        )
        assert posted.status_code == 421
    assert not is_paused(tmp_path / "data")


def test_with_a_token_a_foreign_host_gets_421_too(tmp_path: Path) -> None:
    asyncio.run(LocalJobQueue("q", tmp_path / "data").close())
    env = {"LANEMQ_DASHBOARD_TOKEN": SECRET}
    args = ("local:data", "--queue", "q", "--allowed-host", "dash.example")
    bearer = {"authorization": f"Bearer {SECRET}"}
    with serve(*args, cwd=tmp_path, env=env, host="127.0.0.2") as server, http(server) as client:
        for host in allowed_names(server):
            assert client.get("/", headers={"host": host, **bearer}).status_code == 200, host
        csrf = csrf_of(client.get("/", headers=bearer).text)
        evil = "evil.example:" + server.url.rpartition(":")[2]
        assert client.get(f"/?token={SECRET}", headers={"host": evil}).status_code == 421
        assert client.get("/", headers={"host": evil, **bearer}).status_code == 421
        posted = client.post(
            "/queues/q/pause",
            data={"csrf": csrf},
            headers={"host": evil, "origin": f"http://{evil}", **bearer},
        )
        assert posted.status_code == 421
    assert not is_paused(tmp_path / "data")
