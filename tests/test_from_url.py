"""`from_url`: each URL form opens the backend it names (a job added through it is there when
the queue is opened directly), the Redis forms against servers the tests start (TCP with a
password, a unix socket with ``?pass=``), and every refusal names the URL with its password
replaced by ``***`` and writes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from lanemq import (
    BackendAuthenticationError,
    BackendConnectionError,
    ConfigError,
    InMemoryJobQueue,
    LocalJobQueue,
    RedisJobQueue,
    from_url,
)
from redis_support import MakeServer, RedisServer, Resp
from support import redis_prefix

PASSWORD = "s3cret-Pw"


async def _round_trip(url: str, expected: type, **options: object) -> None:
    """A job added through ``from_url(url)`` is read back through a second ``from_url``."""
    queue = from_url(url, "mail", **options)
    assert isinstance(queue, expected)
    job = await queue.add("send", {"to": "ops@example.com"})
    again = from_url(url, "mail", **options)
    found = await again.get_job(job.id)
    assert found is not None and found.data == {"to": "ops@example.com"}
    await queue.close()
    await again.close()


def _require_password(server: RedisServer) -> None:
    """Sets the server's password once it runs (its start-up check pings without one)."""
    with Resp("127.0.0.1", server.port) as connection:
        assert connection.command("CONFIG", "SET", "requirepass", PASSWORD) == "OK"


# ------------------------------------------------------------------------------- memory


@pytest.mark.parametrize("url", ["memory://", "memory:", "MEMORY://"])
async def test_memory_url_opens_a_private_in_memory_queue(url: str) -> None:
    queue = from_url(url, "mail", max_events=5)
    assert isinstance(queue, InMemoryJobQueue)
    job = await queue.add("send", 1)
    assert (await queue.get_job_counts("waiting"))["waiting"] == 1
    other = from_url(url, "mail")  # private to each call: nothing is shared
    assert await other.get_job(job.id) is None


# -------------------------------------------------------------------------------- local


async def test_local_url_with_an_absolute_directory(tmp_path: Path) -> None:
    await _round_trip(f"local://{tmp_path}", LocalJobQueue)
    queue = LocalJobQueue("mail", tmp_path)  # the same file, opened directly
    assert (await queue.get_job_counts("waiting"))["waiting"] == 1
    assert queue.path == tmp_path / "mail.sqlite3"
    await queue.close()


@pytest.mark.parametrize("url", ["local:./data/jobs", "local:data/jobs"])
async def test_local_url_with_a_relative_directory(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    await _round_trip(url, LocalJobQueue)
    queue = LocalJobQueue("mail", tmp_path / "data" / "jobs")
    assert (await queue.get_job_counts("waiting"))["waiting"] == 1
    await queue.close()


async def test_local_url_naming_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    await _round_trip("local:./jobs.db", LocalJobQueue)
    assert (tmp_path / "jobs.db").is_file()


def test_local_url_with_a_host_part_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for url in ("local://data", "local:", "local://"):
        with pytest.raises(ConfigError) as caught:
            from_url(url, "mail")
        assert repr(url) in str(caught.value)
    assert list(tmp_path.iterdir()) == []  # nothing was created


# -------------------------------------------------------------------------------- redis


async def test_redis_url(redis_url: str) -> None:
    await _round_trip(redis_url, RedisJobQueue, prefix=redis_prefix())


async def test_redis_url_with_a_password(own_redis: MakeServer) -> None:
    server = own_redis()
    server.start()
    _require_password(server)
    url = f"redis://:{PASSWORD}@127.0.0.1:{server.port}/0"
    await _round_trip(url, RedisJobQueue)
    wrong = from_url(f"redis://:not-{PASSWORD}@127.0.0.1:{server.port}/0", "mail")
    # No I/O until the first call, which is refused.
    with pytest.raises(BackendAuthenticationError) as caught:
        await wrong.get_job_counts()
    assert f"127.0.0.1:{server.port}" in str(caught.value)
    assert PASSWORD not in str(caught.value) and PASSWORD not in repr(caught.value)


async def test_unix_socket_url_with_a_password(own_redis: MakeServer) -> None:
    server = own_redis()
    socket_path = server.directory / "redis.sock"
    server.directory.mkdir(parents=True)
    server.start("--unixsocket", str(socket_path))
    _require_password(server)
    await _round_trip(f"unix://{socket_path}?pass={PASSWORD}", RedisJobQueue)
    # ?db= selects the database: db 1 does not hold the job added through db 0
    db1 = from_url(f"unix://{socket_path}?db=1&pass={PASSWORD}", "mail")
    assert (await db1.get_job_counts("waiting"))["waiting"] == 0
    await db1.close()


async def test_unreachable_unix_socket_names_the_path_not_the_password(tmp_path: Path) -> None:
    queue = from_url(f"unix://{tmp_path}/none.sock?pass={PASSWORD}", "mail")
    with pytest.raises(BackendConnectionError) as caught:
        await queue.get_job_counts()
    assert f"{tmp_path}/none.sock" in str(caught.value)
    assert PASSWORD not in str(caught.value)


def test_rediss_url_opens_a_tls_redis_queue_without_io_or_the_password() -> None:
    # Nothing listens on port 1: making the queue does no I/O, so it succeeds.
    queue = from_url(f"rediss://app:{PASSWORD}@127.0.0.1:1/0", "mail")
    assert isinstance(queue, RedisJobQueue)
    assert PASSWORD not in repr(queue) and PASSWORD not in queue.url


# ------------------------------------------------------------------------------ refusals


@pytest.mark.parametrize(
    ("url", "shown", "says"),
    [
        (f"ftp://u:{PASSWORD}@host/x", "ftp://u:***@host/x", "unknown queue URL scheme 'ftp'"),
        ("no-scheme-here", "no-scheme-here", "no scheme"),
        (f"redis://:{PASSWORD}@", "redis://:***@", "no host"),
        (f"redis://:{PASSWORD}@[::1/0", "redis://:***@[::1/0", "malformed host or port"),
        (f"redis://:{PASSWORD}@h:99999/0", "redis://:***@h:99999/0", "malformed host or port"),
        (f"redis://:{PASSWORD}@h:6379/x", "redis://:***@h:6379/x", "database number"),
        # an unencoded "/" in the password: still hidden, whole
        ("redis://:pa/ss@h:6379/0", "redis://:***@h:6379/0", "malformed host or port"),
        (f"redis://:{PASSWORD}@0.0.0.0/0", "redis://:***@0.0.0.0/0", "wildcard address"),
        (f"unix:///tmp/r.sock?pass={PASSWORD}&db=x", "unix:///tmp/r.sock?pass=***&db=x", "db="),
        ("unix://", "unix://", "expected unix:///path"),
        ("memory://somewhere", "memory://somewhere", "takes nothing after it"),
    ],
)
def test_bad_urls_are_refused_naming_the_url_without_its_password(
    url: str, shown: str, says: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        from_url(url, "mail")
    message = str(caught.value)
    assert repr(shown) in message
    assert says in message
    assert PASSWORD not in message and "pa/ss" not in message


def test_unknown_options_are_refused_by_the_queue() -> None:
    with pytest.raises(TypeError, match="prefix"):
        from_url("memory://", "mail", prefix="app")
