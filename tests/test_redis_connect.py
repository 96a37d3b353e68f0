"""How RedisJobQueue connects: nothing in the constructor (a module-level queue imports while
Redis is down, and a bad URL is refused at once), connecting off the event loop and bounded
by ``connect_timeout``, connections shared by the queues of one server, managed servers that
forbid CONFIG (or INFO too), errors classified (refused credentials, a server still loading
its data), no password anywhere, and the unix:// and rediss:// (TLS) forms of the URL.

Every test starts the servers it needs (own_redis) or uses the session server with a prefix
of its own."""

from __future__ import annotations

import asyncio
import logging
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from lanemq import (
    BackendAuthenticationError,
    BackendConnectionError,
    ConfigError,
    Job,
    JobWorker,
    RedisJobQueue,
)
from redis_support import WAIT, MakeServer, RedisServer, Resp, RespError, free_port
from support import Spawn, eventually, redis_prefix


def _clients(port: int) -> list[dict[str, str]]:
    """The clients of the server on ``port`` but the one asking (CLIENT LIST)."""
    with Resp("127.0.0.1", port) as raw:
        listing = raw.command("CLIENT", "LIST")
    clients = [dict(f.split("=", 1) for f in line.split()) for line in listing.splitlines()]
    return [c for c in clients if c["cmd"] != "client|list"]


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A port where a socket listens (the kernel completes every TCP handshake) and nothing
    ever answers: a server that accepts but never replies."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    try:
        yield int(listener.getsockname()[1])
    finally:
        listener.close()


# ------------------------------------------------------------ no I/O in the constructor


def test_making_a_queue_does_no_io_and_a_bad_url_is_refused_at_once() -> None:
    port = free_port()  # nothing listens there
    queue = RedisJobQueue("q", f"redis://user:s3cret@127.0.0.1:{port}/0")
    assert queue.url == f"redis://user:***@127.0.0.1:{port}/0"

    with pytest.raises(ConfigError) as raised:
        RedisJobQueue("q", "redis://user:s3cret@127.0.0.1:notaport/0")
    message = str(raised.value)
    assert "redis://user:***@127.0.0.1:notaport/0" in message, message
    assert "s3cret" not in message
    # The constructor says what is wrong (the client's own error only names a category).
    assert "malformed host or port" in message, message
    for url, why in [
        ("redis://:s3cret@127.0.0.1:0/0", "invalid port 0"),
        ("redis://:s3cret@0.0.0.0/0", "wildcard address"),
        ("redis://:s3cret@127.0.0.1/db1", "database number"),
    ]:
        with pytest.raises(ConfigError, match=why) as raised:
            RedisJobQueue("q", url)
        assert "s3cret" not in str(raised.value)
    with pytest.raises(ConfigError, match="connect_timeout"):
        RedisJobQueue("q", f"redis://127.0.0.1:{port}/0", connect_timeout=0)


async def test_a_module_level_queue_imports_while_redis_is_down(
    tmp_path: Path, spawn: Spawn
) -> None:
    port = free_port()
    (tmp_path / "app_tasks.py").write_text(
        "from lanemq import RedisJobQueue\n"
        f"queue = RedisJobQueue('emails', 'redis://:s3cret@127.0.0.1:{port}/0')\n"
    )
    child = await spawn(
        """
        import asyncio
        import app_tasks
        from lanemq import BackendConnectionError

        print("imported", repr(app_tasks.queue), flush=True)

        async def first_call() -> str:
            try:
                await app_tasks.queue.add("welcome")
            except BackendConnectionError as error:
                return type(error).__name__
            return "no error"

        print(asyncio.run(first_call()), flush=True)
        """
    )
    imported = await child.line()
    assert imported.startswith("imported RedisJobQueue('emails'"), child.stderr()
    assert "s3cret" not in imported
    assert await child.line() == "BackendConnectionError"


async def test_a_server_that_never_answers_does_not_freeze_the_loop(silent_server: int) -> None:
    ticks = 0
    stop = asyncio.Event()

    async def tick() -> None:
        nonlocal ticks
        while not stop.is_set():
            await asyncio.sleep(0.01)
            ticks += 1

    ticker = asyncio.create_task(tick())
    await asyncio.sleep(0.02)
    try:
        queue = RedisJobQueue("q", f"redis://127.0.0.1:{silent_server}/0", connect_timeout=0.5)
        started = ticks
        with pytest.raises(BackendConnectionError) as raised:
            await asyncio.wait_for(queue.add("never"), WAIT)
        ticked = ticks - started
    finally:
        stop.set()
        await ticker
    assert "connect_timeout" in str(raised.value), raised.value
    assert f"127.0.0.1:{silent_server}" in str(raised.value)
    # The loop went on while the call waited for the server (about 50 ticks in 0.5 s).
    assert ticked >= 5, ticked


async def test_connect_and_async_with_connect_up_front(own_redis: MakeServer) -> None:
    server = own_redis()
    down = RedisJobQueue("q", server.url, prefix=redis_prefix(), connect_timeout=1.0)
    with pytest.raises(BackendConnectionError):
        await down.connect()
    with pytest.raises(BackendConnectionError):
        async with down:
            pass

    server.start()
    prefix = redis_prefix()
    async with RedisJobQueue("q", server.url, prefix=prefix) as queue:
        assert len(_clients(server.port)) == 2  # commands and the wire, before any call
        job = await queue.add("j", {"n": 1})
        assert (await queue.get_job_counts("waiting"))["waiting"] == 1
        assert (await queue.get_job(job.id)) is not None
    # The same object works now that the server is up.
    assert (await down.get_job_counts("waiting"))["waiting"] == 0


# ------------------------------------------------------------------- shared connections


async def test_queues_of_one_server_share_their_connections(own_redis: MakeServer) -> None:
    server = own_redis()
    server.start()
    prefix = redis_prefix()
    queues = [RedisJobQueue(f"q{i}", server.url, prefix=prefix) for i in range(20)]
    assert _clients(server.port) == [], "no queue connects before its first call"

    async def connections_are(expected: int, at_most: int | None = None) -> bool:
        count = len(_clients(server.port))
        limit = expected if at_most is None else at_most
        assert count <= limit, f"{count} connections, at most {limit} expected"
        return count == expected

    for queue in queues:
        await queue.add("job")
    await connections_are(2)
    for queue in queues:
        await queue.add("job")
    # One connection for commands, one the event loop drives (opened in the background once
    # a queue's first call, on the command connection, checked the server).
    await eventually(lambda: connections_are(2), "the wire to open", WAIT)

    done = asyncio.Event()
    processed: list[str] = []

    async def process(job: Job) -> None:
        processed.append(job.id)
        if len(processed) == 2:
            done.set()

    worker = JobWorker(queues[0], process, concurrency=4)
    async with worker:
        await asyncio.wait_for(done.wait(), WAIT)
        # An idle worker waits on a connection of its own (a blocking BZPOPMIN), and hears
        # cancel requests on another (a blocking XREAD of the queue's `cancels` stream). (A
        # wait the worker gave up while it was busy holds its connection until the server
        # answers that BZPOPMIN, within a second: hence no upper bound while it settles.)
        await eventually(lambda: connections_are(4, at_most=5), "the worker to idle", WAIT)
        for queue in queues[1:]:
            assert (await queue.get_job_counts("waiting"))["waiting"] == 2
            await queue.add("job")
        assert await connections_are(4)
    for queue in queues:
        await queue.close()
    await eventually(lambda: connections_are(0, at_most=5), "the last close to close them", WAIT)


# ----------------------------------------------------------- managed Redis, no CONFIG


async def test_a_user_who_may_not_run_config_reads_the_policy_from_info(
    own_redis: MakeServer,
) -> None:
    server = own_redis()
    server.start()
    with Resp("127.0.0.1", server.port) as raw:
        raw.command("ACL", "SETUSER", "limited", "on", ">pw", "~*", "&*", "+@all", "-config")
    url = f"redis://limited:pw@127.0.0.1:{server.port}/0"
    for allow in (False, True):
        queue = RedisJobQueue("managed", url, prefix=redis_prefix(), allow_eviction=allow)
        job = await queue.add("j", {"n": 1})
        assert (await queue.get_job(job.id)) is not None

    # INFO still shows an evicting policy, which is refused unless allowed.
    with Resp("127.0.0.1", server.port) as raw:
        raw.command("CONFIG", "SET", "maxmemory-policy", "allkeys-lru")
    with pytest.raises(ConfigError, match="allkeys-lru"):
        await RedisJobQueue("managed", url, prefix=redis_prefix()).connect()
    allowed = RedisJobQueue("managed", url, prefix=redis_prefix(), allow_eviction=True)
    await allowed.add("j")


async def test_a_policy_nobody_may_read_is_a_warning(
    own_redis: MakeServer, caplog: pytest.LogCaptureFixture
) -> None:
    server = own_redis()
    server.start()
    with Resp("127.0.0.1", server.port) as raw:
        raw.command("ACL", "SETUSER", "blind", "on", ">pw", "~*", "&*", "+@all", "-config", "-info")
    url = f"redis://blind:pw@127.0.0.1:{server.port}/0"
    caplog.set_level(logging.WARNING, logger="lanemq")
    queue = RedisJobQueue("managed", url, prefix=redis_prefix())
    job = await queue.add("j", {"n": 1})
    assert (await queue.get_job(job.id)) is not None
    warnings = [r for r in caplog.records if r.name == "lanemq"]
    assert len(warnings) == 1, warnings
    assert "maxmemory-policy" in warnings[0].getMessage()
    assert "pw@" not in warnings[0].getMessage()
    # Once per server, not once per queue or call.
    await RedisJobQueue("other", url, prefix=redis_prefix()).add("j")
    assert len([r for r in caplog.records if r.name == "lanemq"]) == 1


# -------------------------------------------------------------------- errors classified


def _texts(error: BaseException) -> str:
    parts: list[str] = []
    current: BaseException | None = error
    while current is not None:
        parts += [str(current), repr(current), *map(repr, current.args)]
        current = current.__cause__ or current.__context__
    return "\n".join(parts)


async def test_refused_credentials_are_an_authentication_error(own_redis: MakeServer) -> None:
    server = own_redis()
    server.start()
    with Resp("127.0.0.1", server.port) as raw:
        raw.command("ACL", "SETUSER", "worker", "on", ">w0rker", "~*", "&*", "+@all")
        raw.command("CONFIG", "SET", "requirepass", "s3cret")
    port = server.port
    for url in (
        f"redis://:wrong-s3cret@127.0.0.1:{port}/0",  # wrong password
        f"redis://worker:wrong-s3cret@127.0.0.1:{port}/0",  # wrong password of a user
        f"redis://127.0.0.1:{port}/0",  # none, where one is required
    ):
        queue = RedisJobQueue("auth", url, prefix=redis_prefix())
        with pytest.raises(BackendAuthenticationError) as raised:
            await queue.add("never")
        assert isinstance(raised.value, BackendConnectionError)
        assert isinstance(raised.value, ConnectionError)
        text = _texts(raised.value)
        assert f"127.0.0.1:{port}" in text, text
        assert "s3cret" not in text, text
    good = RedisJobQueue("auth", f"redis://:s3cret@127.0.0.1:{port}/0", prefix=redis_prefix())
    assert (await good.get_job_counts("waiting"))["waiting"] == 0


def _walk(value: Any, depth: int = 0, seen: set[int] | None = None) -> Iterator[str]:
    """The text of ``value`` and of everything reachable from it through attributes,
    containers and properties (a few levels deep)."""
    seen = set() if seen is None else seen
    if id(value) in seen or depth > 3:
        return
    seen.add(id(value))
    yield repr(value)
    if isinstance(value, (str, bytes, int, float, bool, type(None))):
        return
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _walk(key, depth + 1, seen)
            yield from _walk(item, depth + 1, seen)
        return
    if isinstance(value, (list, tuple, set, frozenset)):
        for item in value:
            yield from _walk(item, depth + 1, seen)
        return
    for name in dir(value):
        if name.startswith("__"):
            continue
        try:
            attribute = getattr(value, name)
        except Exception:
            continue
        if callable(attribute) and not isinstance(attribute, type):
            continue
        yield from _walk(attribute, depth + 1, seen)


async def test_the_password_is_nowhere_in_the_queue_object(own_redis: MakeServer) -> None:
    server = own_redis()
    server.start()
    with Resp("127.0.0.1", server.port) as raw:
        raw.command("CONFIG", "SET", "requirepass", "s3cret")
    prefix = redis_prefix()
    queue = RedisJobQueue("secret", f"redis://:s3cret@127.0.0.1:{server.port}/0", prefix=prefix)
    job = await queue.add("j")
    sibling = queue.sibling("sibling")
    assert isinstance(sibling, RedisJobQueue)
    await sibling.add("j")  # the sibling reaches the server without the URL in Python
    texts = "\n".join(
        [
            repr(queue),
            str(queue),
            repr(vars(queue)),
            *_walk(queue),
            *_walk(sibling),
            *_walk(job),
            *_walk(__import__("lanemq.queue").queue._redis_queues),
        ]
    )
    assert "s3cret" not in texts
    assert "redis://:***@127.0.0.1" in repr(queue)
    assert (await queue.get_job_counts("waiting"))["waiting"] == 1


def _start_slowly_loading(server: RedisServer) -> subprocess.Popen[bytes]:
    """Starts ``server``'s binary on its port and directory again, loading its data slowly
    (5 ms per key, answering clients in between), without waiting for it."""
    args = [server.binary, "--port", str(server.port), "--bind", "127.0.0.1", "--save", ""]
    args += ["--appendonly", "no", "--dir", str(server.directory)]
    args += ["--key-load-delay", "5000", "--loading-process-events-interval-bytes", "1024"]
    return subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


async def test_a_server_still_loading_its_data_is_a_connection_error(tmp_path: Path) -> None:
    """A server answers LOADING while it reads its data at start. The window is made wide
    with the server's own test knobs: a delay per key loaded (key-load-delay, in us) and
    answering clients every 1 KB of data read (loading-process-events-interval-bytes)."""
    server = RedisServer(tmp_path / "loading")
    server.start()
    with Resp("127.0.0.1", server.port) as raw:
        pairs: list[str | int] = []
        for n in range(2000):
            pairs += [f"k{n}", "v" * 100]
        raw.command("MSET", *pairs)
        raw.command("SAVE")
    server.stop()
    proc = _start_slowly_loading(server)
    try:

        async def loading() -> bool:
            try:
                with Resp("127.0.0.1", server.port, timeout=0.5) as probe:
                    probe.command("PING")
            except RespError as error:
                return str(error).startswith("LOADING")
            except OSError:
                return False
            raise AssertionError("the server answered PING: it loaded already")

        await eventually(loading, "the server to be loading", WAIT)
        queue = RedisJobQueue("loading", server.url, prefix=redis_prefix())
        with pytest.raises(BackendConnectionError) as raised:
            await queue.add("j")
        assert "loading" in str(raised.value).lower(), raised.value

        with Resp("127.0.0.1", server.port) as raw:
            raw.command("CONFIG", "SET", "key-load-delay", 0)

        async def added() -> bool:
            try:
                await queue.add("j")
            except BackendConnectionError:
                return False
            return True

        await eventually(added, "the loaded server to take the add", WAIT)
        assert (await queue.get_job_counts("waiting"))["waiting"] == 1
    finally:
        proc.kill()
        proc.wait()


# ------------------------------------------------------------------ unix:// and rediss://


async def _round_trip(queue: RedisJobQueue) -> None:
    """Adds jobs, runs a worker on them and checks their results."""

    async def double(job: Job) -> int:
        return int(job.data["n"]) * 2

    jobs = [await queue.add("double", {"n": n}) for n in range(3)]
    async with JobWorker(queue, double, concurrency=2):
        for job in jobs:
            assert await asyncio.wait_for(job.wait(timeout=WAIT), WAIT + 1) == job.data["n"] * 2


async def test_unix_socket_urls_work(own_redis: MakeServer) -> None:
    short = Path(tempfile.mkdtemp(prefix="lq"))  # a unix socket path has ~100 bytes at most
    socket_path = short / "redis.sock"
    server = own_redis()
    try:
        server.start("--unixsocket", str(socket_path), "--unixsocketperm", "700")
        queue = RedisJobQueue("unix", f"unix://{socket_path}?db=2", prefix=redis_prefix())
        assert queue.url == f"unix://{socket_path}?db=2"
        await _round_trip(queue)
        unix_clients = [c for c in _clients(server.port) if c["addr"].startswith("/")]
        assert unix_clients, "the queue's connections go over the socket"
        await queue.close()
    finally:
        shutil.rmtree(short, ignore_errors=True)


async def test_tls_urls_check_the_certificate(own_redis: MakeServer, tmp_path: Path) -> None:
    ca, crt, key = _tls_files(tmp_path)
    tls_port = free_port()
    server = own_redis()
    server.start(
        "--tls-port", str(tls_port), "--tls-cert-file", str(crt), "--tls-key-file", str(key),
        "--tls-ca-cert-file", str(ca), "--tls-auth-clients", "no",
    )  # fmt: skip
    url = f"rediss://127.0.0.1:{tls_port}/0"
    queue = RedisJobQueue("tls", url, prefix=redis_prefix(), tls_ca_file=ca)
    await _round_trip(queue)
    tls_clients = [c for c in _clients(server.port) if c["laddr"].endswith(f":{tls_port}")]
    assert tls_clients, "the queue's connections go to the TLS port"
    await queue.close()

    # A certificate of an authority the client does not trust is refused.
    untrusted = RedisJobQueue("tls", url, prefix=redis_prefix(), connect_timeout=2.0)
    with pytest.raises(BackendConnectionError, match="TLS"):
        await untrusted.connect()
    # Checks cannot be turned off; a CA file needs a TLS URL.
    with pytest.raises(ConfigError, match="insecure"):
        RedisJobQueue("tls", url + "#insecure")
    with pytest.raises(ConfigError, match="tls_ca_file"):
        RedisJobQueue("tls", f"redis://127.0.0.1:{server.port}/0", tls_ca_file=ca)
    with pytest.raises(ConfigError, match="tls_ca_file"):
        RedisJobQueue("tls", url, tls_ca_file=tmp_path / "missing.pem")


def _tls_files(directory: Path) -> tuple[Path, Path, Path]:
    """A certificate authority of the test's own and a certificate it signed for 127.0.0.1
    and localhost: (ca.crt, server.crt, server.key)."""
    ca_key, ca_crt = directory / "ca.key", directory / "ca.crt"
    key, csr, crt = directory / "server.key", directory / "server.csr", directory / "server.crt"
    extensions = directory / "san.cnf"
    extensions.write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")

    def openssl(*args: str | Path) -> None:
        subprocess.run(["openssl", *map(str, args)], check=True, capture_output=True)

    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
            "/CN=lanemq test CA", "-keyout", ca_key, "-out", ca_crt)  # fmt: skip
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost",
            "-keyout", key, "-out", csr)  # fmt: skip
    openssl("x509", "-req", "-in", csr, "-CA", ca_crt, "-CAkey", ca_key, "-CAcreateserial",
            "-days", "2", "-extfile", extensions, "-out", crt)  # fmt: skip
    return ca_crt, crt, key
