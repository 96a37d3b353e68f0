"""RedisJobQueue's hot calls (add, add_bulk, claim, complete) on the connection the event loop
drives: that they take it (and a new one once it is killed), many calls in flight at once, a
request bigger than the socket takes at once, a cancelled call, one loop after another, a
call in flight when the server dies, and the handshake (password, ACL user, database, unix
socket) that connection makes on its own."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from lanemq import Job, JobWorker, RedisJobQueue
from redis_support import MakeServer, Resp
from support import eventually, redis_prefix

WAIT = 10.0  # upper bound for anything awaited in a test; never reached when things work


def _last_commands(port: int) -> dict[str, str]:
    """The last command of each client of the server but the one asking, by client id."""
    with Resp("127.0.0.1", port) as raw:
        listing = raw.command("CLIENT", "LIST")
    clients = [dict(f.split("=", 1) for f in line.split()) for line in listing.splitlines()]
    return {c["id"]: c["cmd"] for c in clients if c["cmd"] != "client|list"}


async def test_hot_calls_take_a_connection_of_their_own_and_a_new_one_once_it_is_killed(
    own_redis: MakeServer,
) -> None:
    server = own_redis()
    server.start()
    queue = RedisJobQueue("wire-own", server.url, prefix=redis_prefix())

    async def wire_after_an_add_and_a_count() -> str | None:
        """The client whose last command is the add's FCALL while another connection
        counted after it, if there is one (there is none if both went the same way)."""
        await queue.add("job")
        await queue.get_job_counts("waiting")  # ZCOUNTs, on the ordinary connection
        commands = _last_commands(server.port)
        assert "zcount" in commands.values(), commands
        wires = [client for client, cmd in commands.items() if cmd == "fcall"]
        assert len(wires) <= 1, commands
        return wires[0] if wires else None

    try:
        await queue.connect()  # opens the wire too (else the first calls go the ordinary way)
        first = await wire_after_an_add_and_a_count()
        assert first is not None, "the add went over the connection the count took"
        with Resp("127.0.0.1", server.port) as raw:
            assert raw.command("CLIENT", "KILL", "ID", first) == 1
        # A call sent before the loop saw the connection close would fail, as on any
        # connection the server drops; once it has, calls go on (the ordinary way) while a
        # new wire opens in the background, and then take that.
        await asyncio.sleep(0.05)

        async def a_new_wire() -> bool:
            return await wire_after_an_add_and_a_count() not in (None, first)

        await eventually(a_new_wire, "a new wire to take the adds", WAIT)
        counts = await queue.get_job_counts("waiting")
        assert counts["waiting"] >= 3
    finally:
        await queue.close()


async def test_calls_in_flight_together_each_get_their_own_reply(redis_url: str) -> None:
    queue = RedisJobQueue("wire-many", redis_url, prefix=redis_prefix())
    try:
        singles = [queue.add("one", {"n": n}) for n in range(200)]
        bulk = queue.add_bulk([("many", {"m": m}, None) for m in range(50)])
        added = await asyncio.wait_for(asyncio.gather(*singles[:100], bulk, *singles[100:]), WAIT)
        jobs: list[Job] = [*added[:100], *added[101:]]
        assert [job.data for job in jobs] == [{"n": n} for n in range(200)]
        assert [job.data for job in added[100]] == [{"m": m} for m in range(50)]
        assert len({job.id for job in jobs} | {job.id for job in added[100]}) == 250
        for job in jobs[::20]:
            stored = await queue.get_job(job.id)
            assert stored is not None and stored.data == job.data
    finally:
        await queue.obliterate(force=True)
        await queue.close()


async def test_a_bulk_add_bigger_than_the_socket_takes_at_once_goes_out_whole(
    redis_url: str,
) -> None:
    queue = RedisJobQueue("wire-big", redis_url, prefix=redis_prefix())
    padding = "x" * 20_000
    try:
        # About 8 MB in one request, and an add queued behind it on the same connection.
        big = queue.add_bulk([("big", {"n": n, "pad": padding}, None) for n in range(400)])
        after = queue.add("after", {"n": -1})
        added, last = await asyncio.wait_for(asyncio.gather(big, after), WAIT)
        assert [job.data["n"] for job in added] == list(range(400))
        assert last.data == {"n": -1}
        counts = await queue.get_job_counts("waiting")
        assert counts["waiting"] == 401
        stored = await queue.get_job(added[399].id)
        assert stored is not None and stored.data == {"n": 399, "pad": padding}
    finally:
        await queue.obliterate(force=True)
        await queue.close()


async def test_a_cancelled_call_leaves_later_calls_their_own_replies(redis_url: str) -> None:
    queue = RedisJobQueue("wire-cancel", redis_url, prefix=redis_prefix())
    try:
        await queue.add("warm")
        cancelled = asyncio.create_task(queue.add("cancelled", {"n": 0}))
        await asyncio.sleep(0)  # the task sends its request and waits for the reply
        cancelled.cancel()
        later = await asyncio.wait_for(
            asyncio.gather(*(queue.add("later", {"n": n}) for n in range(1, 6))), WAIT
        )
        assert [job.data for job in later] == [{"n": n} for n in range(1, 6)]
        assert cancelled.cancelled()
        # The request had gone out: the server ran it, as it runs any call sent to it.
        counts = await queue.get_job_counts("waiting")
        assert counts["waiting"] == 7
    finally:
        await queue.obliterate(force=True)
        await queue.close()


def test_a_queue_serves_one_event_loop_after_another(redis_url: str) -> None:
    queue = RedisJobQueue("wire-loops", redis_url, prefix=redis_prefix())

    async def add_and_claim(n: int) -> list[Any]:
        job = await queue.add("job", {"n": n})
        claimed = await queue.claim("w", 30.0, 1)
        return [job.data, [c.id for c in claimed] == [job.id]]

    assert asyncio.run(add_and_claim(1)) == [{"n": 1}, True]
    assert asyncio.run(add_and_claim(2)) == [{"n": 2}, True]
    assert asyncio.run(add_and_claim(3)) == [{"n": 3}, True]

    async def finish() -> None:
        await queue.obliterate(force=True)
        await queue.close()

    asyncio.run(finish())


async def test_a_call_in_flight_when_the_server_dies_fails_as_a_connection_error(
    own_redis: MakeServer,
) -> None:
    server = own_redis()
    server.start()
    queue = RedisJobQueue("wire-dies", server.url, prefix=redis_prefix())
    await queue.add("warm")
    with Resp("127.0.0.1", server.port) as raw:
        assert raw.command("CLIENT", "PAUSE", 10_000, "WRITE") == "OK"
    in_flight = asyncio.create_task(queue.add("held", {"n": 1}))
    await asyncio.sleep(0.2)
    assert not in_flight.done(), "the paused server holds the add"
    server.stop()
    with pytest.raises(ConnectionError) as raised:
        await asyncio.wait_for(in_flight, WAIT)
    assert f"127.0.0.1:{server.port}" in str(raised.value)

    server.start()  # same port, empty: the library is gone too
    added: list[Job] = []

    async def added_again() -> bool:
        try:
            added.append(await queue.add("after", {"n": 2}))
        except ConnectionError:
            return False
        return True

    await eventually(added_again, "an add to succeed after the restart", WAIT)
    job = added[0]
    more = [await queue.add("after", {"n": n}) for n in range(3, 23)]
    assert [j.data["n"] for j in more] == list(range(3, 23))
    counts = await queue.get_job_counts("waiting")
    assert counts["waiting"] == 21
    stored = await queue.get_job(job.id)
    assert stored is not None and stored.data == {"n": 2}
    await queue.close()


async def test_password_user_database_and_unix_socket(own_redis: MakeServer) -> None:
    short = Path(tempfile.mkdtemp(prefix="lq"))  # a unix socket path has ~100 bytes at most
    socket_path = short / "redis.sock"
    server = own_redis()
    try:
        server.start("--unixsocket", str(socket_path), "--unixsocketperm", "700")
        with Resp("127.0.0.1", server.port) as raw:
            raw.command("ACL", "SETUSER", "worker", "on", ">w0rker", "~*", "&*", "+@all")
            raw.command("CONFIG", "SET", "requirepass", "s3cret")
        prefix = redis_prefix()
        tcp = RedisJobQueue("auth", f"redis://:s3cret@127.0.0.1:{server.port}/3", prefix=prefix)
        user = RedisJobQueue(
            "auth", f"redis://worker:w0rker@127.0.0.1:{server.port}/3", prefix=prefix
        )
        unix = RedisJobQueue("auth", f"unix://{socket_path}?db=3&pass=s3cret", prefix=prefix)

        first = await tcp.add("job", {"n": 1})
        rest = await user.add_bulk([("job", {"n": n}, None) for n in range(2, 6)])

        async def double(job: Job) -> int:
            return int(job.data["n"]) * 2

        worker = JobWorker(unix, double, concurrency=2)
        running = asyncio.create_task(worker.run())
        try:
            for job in [first, *rest]:
                assert await asyncio.wait_for(job.wait(timeout=5.0), 6.0) == job.data["n"] * 2
        finally:
            await asyncio.wait_for(worker.close(), WAIT)
            await asyncio.gather(running, return_exceptions=True)

        with Resp("127.0.0.1", server.port) as raw:
            raw.command("AUTH", "s3cret")
            assert raw.scan(f"{prefix}:*") == [], "nothing in database 0"
            raw.command("SELECT", 3)
            assert raw.scan(f"{prefix}:*"), "the queue is in database 3"
        for queue in (tcp, user, unix):
            await queue.close()
    finally:
        shutil.rmtree(short, ignore_errors=True)
