"""``lanemq queues URL``, run as a subprocess: the queue files of a local directory, the
queues under a Redis prefix, and its refusals (exit code 2)."""

from __future__ import annotations

from pathlib import Path

from cli_support import lanemq
from lanemq import LocalJobQueue, RedisJobQueue
from redis_support import MakeServer, Resp, free_port
from support import redis_prefix


async def test_lists_the_queue_files_of_a_local_directory(tmp_path: Path) -> None:
    for name in ("reports", "emails"):
        queue = LocalJobQueue(name, tmp_path / "data")
        await queue.add("a")
        await queue.close()
    listed = await lanemq("queues", "local:./data", cwd=tmp_path)
    assert (listed.code, listed.out.split()) == (0, ["emails", "reports"])
    assert (await lanemq("queues", "local:./data", "--json", cwd=tmp_path)).json() == [
        "emails",
        "reports",
    ]


async def test_lists_the_queues_under_a_redis_prefix(tmp_path: Path, redis_url: str) -> None:
    prefix = redis_prefix()
    queue = RedisJobQueue("orders", redis_url, prefix=prefix)
    try:
        await queue.add("a")
        listed = await lanemq("queues", redis_url, "--prefix", prefix, "--json", cwd=tmp_path)
        assert listed.json() == ["orders"]
    finally:
        await queue.obliterate(force=True)
        await queue.close()


async def test_bad_arguments_exit_2_with_the_reason(tmp_path: Path) -> None:
    unknown = await lanemq("queues", "nope://x", cwd=tmp_path)
    assert unknown.code == 2 and "unknown queue URL scheme" in unknown.err
    prefixed = await lanemq("queues", "local:./data", "--prefix", "p", cwd=tmp_path)
    assert prefixed.code == 2 and "--prefix applies to Redis URLs only" in prefixed.err
    assert not (tmp_path / "data").exists()


async def test_a_redis_that_cannot_answer_is_one_error_line_without_the_password(
    tmp_path: Path, own_redis: MakeServer
) -> None:
    # (it was a 38-line traceback, exit code 1)
    server = own_redis()
    server.start()
    with Resp("127.0.0.1", server.port) as raw:
        raw.command("CONFIG", "SET", "requirepass", "right-hunter2")
    for url, said in (
        (f"redis://:hunter2@127.0.0.1:{free_port()}/0", "cannot connect"),
        (f"redis://:wrong-hunter2@127.0.0.1:{server.port}/0", "refused the credentials"),
    ):
        result = await lanemq("queues", url, "--json", cwd=tmp_path)
        assert result.code == 1, (url, result)
        assert result.err.startswith("Error: ") and said in result.err, result.err
        assert len(result.err.splitlines()) == 1 and result.out == ""
        assert "hunter2" not in result.err
