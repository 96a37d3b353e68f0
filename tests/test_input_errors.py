"""Bad input outside the per-backend suite (tests/conformance/test_validation.py): Redis URLs
that are not a Redis server's, data directories and queue files lanemq cannot use, and Redis
queues whose names the queue-name rule refuses. Each is a clear error naming the class of the
problem and the value, and writes nothing."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import textwrap
import warnings
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from lanemq import (
    BackendConnectionError,
    ConfigError,
    LaneConfig,
    LocalJobQueue,
    LocalStorage,
    RedisJobQueue,
    StorageError,
)
from redis_support import Resp
from support import redis_prefix

# ------------------------------------------------------------------------- Redis URLs


def test_a_url_without_a_scheme_says_the_scheme_is_missing() -> None:
    # Was "no host": urllib reads "127.0.0.1" as the scheme.
    for url in ("127.0.0.1:6379", "localhost:6379/0"):
        with pytest.raises(ConfigError, match=r"missing scheme \(redis://\.\.\.\)") as caught:
            RedisJobQueue("q", url)
        assert repr(url) in str(caught.value)


def test_an_http_url_is_a_connection_error_naming_the_scheme() -> None:
    # Was a ConfigError "InvalidClientConfig", the Redis client's category.
    with pytest.raises(BackendConnectionError, match="http:// is not a Redis") as caught:
        RedisJobQueue("q", "http://user:s3cret@127.0.0.1:6379")
    assert "127.0.0.1:6379" in str(caught.value)
    assert "s3cret" not in str(caught.value)


@pytest.fixture
async def http_port() -> AsyncIterator[int]:
    """A plain TCP server that answers anything with an HTTP error, as a web server would."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(1024)
        writer.write(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()
        await server.wait_closed()


async def test_a_port_that_is_not_redis_is_a_connection_error(http_port: int) -> None:
    # Was a StorageError holding several lines of the parser's "Parse error".
    queue = RedisJobQueue("q", f"redis://127.0.0.1:{http_port}", connect_timeout=5)
    try:
        with pytest.raises(BackendConnectionError) as caught:
            await queue.add("x")
        message = str(caught.value)
        assert f"127.0.0.1:{http_port}" in message and "not Redis protocol" in message, message
        assert "\n" not in message, message
    finally:
        await queue.close()


# ---------------------------------------------------------------- local files


def test_a_file_given_as_the_data_directory_says_not_a_directory(tmp_path: Path) -> None:
    # Was a StorageError "cannot create the directory: File exists".
    notes = tmp_path / "notes"
    notes.write_text("not a directory")
    for directory in (notes, notes / "below"):
        with pytest.raises(ConfigError, match="not a directory") as caught:
            LocalJobQueue("q", directory)
        assert str(notes) in str(caught.value)
    assert notes.read_text() == "not a directory"


def test_a_dangling_queue_file_link_is_refused(tmp_path: Path) -> None:
    # Was followed: the queue file was created wherever the link pointed.
    target = tmp_path / "elsewhere" / "gone.sqlite3"
    target.parent.mkdir()
    data = tmp_path / "data"
    data.mkdir()
    (data / "q.sqlite3").symlink_to(target)
    with pytest.raises(ConfigError, match="symbolic link") as caught:
        LocalJobQueue("q", data)
    assert str(target) in str(caught.value)
    assert not target.exists()
    assert sorted(p.name for p in data.iterdir()) == ["q.sqlite3"]


async def test_a_queue_file_link_to_a_file_still_opens(tmp_path: Path) -> None:
    real = tmp_path / "real"
    queue = LocalJobQueue("q", real)
    await queue.add("x")
    await queue.close()
    data = tmp_path / "data"
    data.mkdir()
    (data / "q.sqlite3").symlink_to(real / "q.sqlite3")
    linked = LocalJobQueue("q", data)
    try:
        assert await linked.get_job_count() == 1
    finally:
        await linked.close()


_OPEN = textwrap.dedent(
    """
    import asyncio, sys
    from lanemq import LocalJobQueue, StorageError

    async def main() -> None:
        queue = LocalJobQueue("q", sys.argv[1])
        await queue.get_job_counts()

    try:
        asyncio.run(main())
    except StorageError as error:
        print("StorageError:", error)
    """
)


async def test_a_queue_file_that_cannot_be_written_says_so(tmp_path: Path) -> None:
    # Was "not a readable lanemq queue file (corrupted?)". Root ignores file permissions, so as
    # root the file is put on a tmpfs remounted read-only in a mount namespace of its own
    # (`unshare`: no privilege beyond a user namespace), and opened there.
    if os.geteuid() != 0:
        data = tmp_path / "data"
        queue = LocalJobQueue("q", data)
        await queue.add("x")
        await queue.close()
        (data / "q.sqlite3").chmod(0o444)
        data.chmod(0o555)
        try:
            with pytest.raises(StorageError) as caught:
                LocalJobQueue("q", data)
        finally:
            data.chmod(0o755)
        message = str(caught.value)
    else:
        unshare = shutil.which("unshare")
        assert unshare is not None, "util-linux's unshare is needed to mount a read-only tmpfs"
        mount = tmp_path / "mount"
        mount.mkdir()
        script = tmp_path / "open.py"
        script.write_text(_OPEN)
        python = sys.executable
        steps = (
            f"mount -t tmpfs none {mount} && "
            f'{python} -c "import asyncio, lanemq; '
            f"asyncio.run(lanemq.LocalJobQueue('q', '{mount}').add('x'))\" && "
            f"mount -o remount,ro {mount} && {python} {script} {mount}"
        )
        done = await asyncio.to_thread(
            subprocess.run,
            [unshare, "-rm", "sh", "-c", steps],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        message = done.stdout
        assert message.startswith("StorageError:"), (done.stdout, done.stderr)
    assert "cannot be written" in message and "read-only" in message, message
    assert "corrupted" not in message, message


# ------------------------------------------------------------ Redis queue names


def _rename_queue(redis_url: str, prefix: str, old: str, new: str) -> None:
    """Moves the keys of queue ``old`` to the name ``new``, as a queue made under that name
    before the queue-name rule would have them."""
    with Resp.of(redis_url) as raw:
        for key in raw.scan(f"{prefix}:{{{old}}}:*"):
            raw.command("RENAME", key, key.replace(f"{{{old}}}", f"{{{new}}}", 1))


async def test_an_existing_redis_queue_with_an_old_name_opens_with_a_warning(
    redis_url: str,
) -> None:
    prefix = redis_prefix()
    made = RedisJobQueue("legacy", redis_url, prefix=prefix)
    job = await made.add("kept", {"n": 1})
    await made.close()
    _rename_queue(redis_url, prefix, "legacy", "orders:eu")
    queue = RedisJobQueue("orders:eu", redis_url, prefix=prefix)
    try:
        with pytest.warns(DeprecationWarning, match="orders:eu") as caught:
            assert await queue.get_job_counts("waiting") == {"waiting": 1}
        assert "1-200 characters" in str(caught[0].message)
        # Once per queue object; the queue works as before.
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            [claimed] = await queue.claim("w")
            assert claimed.id == job.id and claimed.data == {"n": 1}
    finally:
        await queue.obliterate(force=True)
        await queue.close()


async def test_a_new_redis_queue_with_a_name_outside_the_rule_writes_nothing(
    redis_url: str,
) -> None:
    # Redis took "a/b", "x:y", "..", spaces and "*"; now only a queue that exists keeps one.
    prefix = redis_prefix()
    for name in ("a/b", "x:y", "..", "a b", "*"):
        queue = RedisJobQueue(name, redis_url, prefix=prefix)
        try:
            with pytest.raises(ConfigError, match="1-200 characters"):
                await queue.add("x")
        finally:
            await queue.close()
    with Resp.of(redis_url) as raw:
        assert raw.scan(f"{prefix}:*") == []


# ----------------------------------------------------------------------------- lanes


def test_a_lane_id_with_a_lone_surrogate_is_a_config_error(tmp_path: Path) -> None:
    # Were bare UnicodeEncodeErrors (the lane's config; the journal's path).
    with pytest.raises(ConfigError, match=r"invalid lane_id: '\\udc80'.*surrogate"):
        LaneConfig("\udc80", priority=1)
    with pytest.raises(ConfigError, match=r"invalid storage name: '\\ud800'.*surrogate"):
        LocalStorage(tmp_path, "\ud800")
    assert list(tmp_path.iterdir()) == []
