"""``lanemq dashboard URL``, run as a subprocess: the refusals (exit code 2 with a message,
before anything listens), and a served dashboard honouring --read-only, --token (or
LANEMQ_DASHBOARD_TOKEN, never printed) and the listing of a directory's queues without
--queue; SIGTERM stops it with exit code 0."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest
from dashboard_support import SERVER_WAIT, csrf_of, failed_job, http, serve, stop
from lanemq import LocalJobQueue


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lanemq", "dashboard", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=SERVER_WAIT,
        check=False,
    )


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("bogus://x", "--queue", "q"), "unknown queue URL scheme 'bogus'"),
        (("bogus://x",), "unknown queue URL scheme 'bogus'"),
        (("redis://:hunter2@host:port/0", "--queue", "q"), "redis://:***@host:port/0"),
        (("local://data", "--queue", "q"), "write local:///abs/dir"),
        (("memory://", "--queue", "q"), "a memory:// queue lives inside one process"),
        (("memory://",), "a memory:// URL names no queues"),
        (("local:data", "--prefix", "p"), "prefix applies to Redis URLs only"),
        (("local:data", "--port", "70000"), "70000 is not in the range"),
        # uvicorn used to start the app and then exit 3 on these
        (("local:data", "--host", "no-such-host.invalid"), "--host 'no-such-host.invalid': cannot"),
        (("local:data", "--host", "192.0.2.1"), "--host '192.0.2.1': cannot listen on it"),
        (("local:data", "--host", ""), "--host is empty"),
        (("local:data", "--allowed-host", "a:80"), "--allowed-host: invalid allowed host 'a:80'"),
    ],
)
def test_a_bad_url_or_option_exits_2_with_a_message(
    tmp_path: Path, args: tuple[str, ...], said: str
) -> None:
    result = run(*args, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert said in result.stderr
    assert "hunter2" not in result.stderr + result.stdout
    assert list(tmp_path.iterdir()) == []  # nothing created


def test_a_queue_that_does_not_exist_is_refused(tmp_path: Path) -> None:
    result = run("local:data", "--queue", "typo", cwd=tmp_path)
    assert result.returncode == 1
    assert "no queue 'typo' at local:data" in result.stderr


async def make_failed_queue(directory: Path, name: str = "q") -> str:
    queue = LocalJobQueue(name, directory)
    job = await failed_job(queue)
    await queue.close()
    return job.id


def state_of(directory: Path, job_id: str, name: str = "q") -> str:
    async def read() -> str:
        queue = LocalJobQueue(name, directory)
        try:
            return await queue.get_state(job_id)
        finally:
            await queue.close()

    return asyncio.run(read())


def test_read_only_serves_pages_without_actions_and_refuses_posts(tmp_path: Path) -> None:
    job_id = asyncio.run(make_failed_queue(tmp_path / "data"))
    with serve("local:data", "--queue", "q", "--read-only", cwd=tmp_path) as server:
        with http(server) as client:
            page = client.get(f"/queues/q/job/{job_id}")
            assert page.status_code == 200
            assert "read-only</span>" in page.text
            assert 'method="post"' not in page.text
            refused = client.post(
                "/queues/q/retry",
                data={"job_id": job_id, "csrf": "x"},
                headers={"origin": server.url},
            )
            assert refused.status_code == 403
            assert "the dashboard is read-only" in refused.text
        assert stop(server.proc) == 0  # SIGTERM: a normal end
    assert state_of(tmp_path / "data", job_id) == "failed"


def test_served_actions_work_from_the_page(tmp_path: Path) -> None:
    job_id = asyncio.run(make_failed_queue(tmp_path / "data"))
    with serve("local:data", "--queue", "q", cwd=tmp_path) as server, http(server) as client:
        csrf = csrf_of(client.get("/queues/q/jobs/failed").text)
        done = client.post(
            "/queues/q/retry",
            data={"job_id": job_id, "csrf": csrf},
            headers={"origin": server.url},
        )
        assert done.status_code == 303
        assert state_of(tmp_path / "data", job_id) == "waiting"


def test_the_token_from_the_environment_is_asked_for_and_never_printed(tmp_path: Path) -> None:
    asyncio.run(make_failed_queue(tmp_path / "data"))
    secret = "env-token-1234567"
    env = {"LANEMQ_DASHBOARD_TOKEN": secret}
    with serve("local:data", "--queue", "q", cwd=tmp_path, env=env) as server:
        with http(server) as client:
            assert client.get("/").status_code == 401
            signed_in = client.get(f"/queues/q?token={secret}")
            assert signed_in.status_code == 303
            assert signed_in.headers["location"] == "/queues/q"
            assert client.get("/queues/q").status_code == 200  # by the cookie
        stop(server.proc)
        output = server.output()
    assert "GET /queues/q?token=*** HTTP/1.1" in output  # the access log, redacted
    assert secret not in output


def test_without_queue_it_shows_every_queue_of_the_directory(tmp_path: Path) -> None:
    asyncio.run(make_failed_queue(tmp_path / "data", "alpha"))
    asyncio.run(make_failed_queue(tmp_path / "data", "beta"))
    with serve("local:data", cwd=tmp_path) as server, http(server) as client:
        html = client.get("/").text
        assert '<tr data-queue="alpha">' in html and '<tr data-queue="beta">' in html


def test_it_warns_when_listening_beyond_localhost_without_a_token(tmp_path: Path) -> None:
    asyncio.run(make_failed_queue(tmp_path / "data"))
    with serve("local:data", "--queue", "q", "--host", "0.0.0.0", cwd=tmp_path) as server:
        stop(server.proc)
        assert "listening on 0.0.0.0 without --token" in server.output()


@pytest.mark.parametrize("missing", ["uvicorn", "starlette", "jinja2"])
def test_without_the_extra_it_says_what_to_install(tmp_path: Path, missing: str) -> None:
    # The package as if the extra were not installed: importing ``missing`` fails.
    code = (
        f"import sys; sys.modules[{missing!r}] = None\n"
        "from lanemq.cli import main\n"
        "main(['dashboard', 'local:data'])\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=SERVER_WAIT,
        check=False,
    )
    assert result.returncode == 1
    assert f"the dashboard needs the package {missing!r}" in result.stderr
    assert "pip install 'lanemq[dashboard]'" in result.stderr
