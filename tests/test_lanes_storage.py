"""Durable named commands: LocalStorage replay, dead letters, crash safety and locking."""

from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path
from typing import Any

import pytest
from lanemq import (
    LaneConfig,
    LocalStorage,
    QueueManager,
    RetryPolicy,
    StorageError,
)
from support import wait_until

WAIT = 5.0  # upper bound for anything awaited in a test; never reached when things work


def make_manager(directory: Path) -> QueueManager:
    return QueueManager(
        [LaneConfig("query", 0, max_concurrency=1, retry=RetryPolicy.none())],
        storage=LocalStorage(directory),
    )


class Recorder:
    """A named-command handler that records the payloads it ran with."""

    def __init__(self) -> None:
        self.payloads: list[Any] = []

    async def __call__(self, payload: Any) -> None:
        self.payloads.append(payload)


async def replayed(directory: Path, name: str = "fetch") -> list[Any]:
    """Starts a fresh manager on ``directory`` and returns the payloads it replayed."""
    recorder = Recorder()
    m = make_manager(directory)
    m.register(name, recorder)
    try:
        await m.start()
        await m.drain(WAIT)
    finally:
        await m.close()
    return recorder.payloads


async def never_finishes(payload: Any) -> None:
    await asyncio.Event().wait()


async def test_unfinished_command_cancelled_by_close_is_replayed(tmp_path: Path) -> None:
    a = make_manager(tmp_path)
    started = asyncio.Event()

    async def blocks_forever(payload: Any) -> None:
        started.set()
        await asyncio.Event().wait()

    a.register("fetch", blocks_forever)
    try:
        handle = await a.submit_named("query", "fetch", {"url": "x"})
        await asyncio.wait_for(started.wait(), WAIT)
    finally:
        await a.close()  # cancels the running command: it never finished
    assert handle.done() and handle.cancelled()

    assert await replayed(tmp_path) == [{"url": "x"}]
    # Once it has run to completion it is gone.
    assert await replayed(tmp_path) == []


async def test_queued_commands_left_by_close_are_replayed_in_order(tmp_path: Path) -> None:
    a = make_manager(tmp_path)  # max_concurrency=1: the first blocks, the others stay queued
    a.register("fetch", never_finishes)
    try:
        handles = [await a.submit_named("query", "fetch", {"n": n}) for n in range(3)]
        await wait_until(lambda: a.stats()["query"]["active"] == 1)
        assert a.stats()["query"]["pending"] == 2
    finally:
        await a.close()
    assert all(h.cancelled() for h in handles)

    assert await replayed(tmp_path) == [{"n": 0}, {"n": 1}, {"n": 2}]
    assert await replayed(tmp_path) == []


async def test_explicitly_cancelled_named_command_is_not_replayed(tmp_path: Path) -> None:
    a = make_manager(tmp_path)
    a.register("fetch", never_finishes)
    try:
        running = await a.submit_named("query", "fetch", {"n": 0})
        queued = await a.submit_named("query", "fetch", {"n": 1})
        await wait_until(lambda: running.running())
        assert not queued.running()
        assert queued.cancel()
        assert running.cancel()
        await a.drain(WAIT)
        assert running.cancelled() and queued.cancelled()
    finally:
        await a.close()

    assert await replayed(tmp_path) == []


async def test_completed_named_command_is_not_replayed(tmp_path: Path) -> None:
    a = make_manager(tmp_path)
    recorder = Recorder()
    a.register("fetch", recorder)
    try:
        handle = await a.submit_named("query", "fetch", {"url": "done"})
        await asyncio.wait_for(handle, WAIT)
        await a.drain(WAIT)
    finally:
        await a.close()
    assert recorder.payloads == [{"url": "done"}]

    assert await replayed(tmp_path) == []


async def test_dead_letters_of_named_commands_survive_a_restart(tmp_path: Path) -> None:
    a = make_manager(tmp_path)
    calls: list[Any] = []

    async def failing(payload: Any) -> None:
        calls.append(payload)
        raise ValueError(f"bad payload {payload['n']}")

    a.register("fetch", failing)
    try:
        handle = await a.submit_named("query", "fetch", {"n": 7})
        with pytest.raises(ValueError, match="bad payload 7"):
            await asyncio.wait_for(handle, WAIT)
        await a.drain(WAIT)
        (original,) = a.dead_letters()
    finally:
        await a.close()
    assert calls == [{"n": 7}]

    b = make_manager(tmp_path)
    recorder = Recorder()
    b.register("fetch", recorder)
    try:
        await b.start()
        await b.drain(WAIT)
        letters = b.dead_letters()
    finally:
        await b.close()

    assert recorder.payloads == []  # a dead letter is not replayed as a command
    assert len(letters) == 1
    (letter,) = letters
    assert letter.lane_id == "query"
    assert letter.command_type == original.command_type == handle.command_type
    assert "failing" in letter.command_type
    assert letter.error == "ValueError: bad payload 7"
    assert letter.attempts == 1
    assert letter.command_id == original.command_id
    assert letter.failed_at == original.failed_at > 0


@pytest.mark.parametrize("payload", [{"x": object()}, {1, 2}, b"bytes"])
async def test_non_json_payload_is_refused_and_not_stored(tmp_path: Path, payload: Any) -> None:
    a = make_manager(tmp_path)
    recorder = Recorder()
    a.register("fetch", recorder)
    try:
        with pytest.raises(TypeError):
            await a.submit_named("query", "fetch", payload)
        assert a.in_flight == 0
        await a.drain(WAIT)
    finally:
        await a.close()
    assert recorder.payloads == []

    assert await replayed(tmp_path) == []


CRASH_SCRIPT = """
import asyncio
import sys

from lanemq import LaneConfig, LocalStorage, QueueManager


async def main() -> None:
    m = QueueManager([LaneConfig("query", 0, max_concurrency=1)], storage=LocalStorage(sys.argv[1]))

    async def blocks(payload):
        await asyncio.Event().wait()

    m.register("fetch", blocks)
    for n in range(3):
        await m.submit_named("query", "fetch", {"n": n})
    print("stored", flush=True)
    await asyncio.sleep(3600)


asyncio.run(main())
"""


async def test_stored_commands_survive_sigkill(tmp_path: Path) -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        CRASH_SCRIPT,
        str(tmp_path),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        line = await asyncio.wait_for(proc.stdout.readline(), 20)
        if line != b"stored\n":
            assert proc.stderr is not None
            proc.kill()
            _, err = await asyncio.wait_for(proc.communicate(), 10)
            raise AssertionError(f"child said {line!r}; stderr: {err.decode(errors='replace')}")
        proc.send_signal(signal.SIGKILL)
        await asyncio.wait_for(proc.wait(), 10)
        assert proc.returncode == -signal.SIGKILL
    finally:
        if proc.returncode is None:
            proc.kill()
            await asyncio.wait_for(proc.wait(), 10)

    assert await replayed(tmp_path) == [{"n": 0}, {"n": 1}, {"n": 2}]
    assert await replayed(tmp_path) == []


async def test_second_manager_on_the_same_storage_fails(tmp_path: Path) -> None:
    a = make_manager(tmp_path)

    async def failing(payload: Any) -> None:
        raise RuntimeError(f"failed {payload}")

    a.register("fetch", Recorder())
    a.register("fail", failing)
    b = make_manager(tmp_path)
    b.register("fetch", Recorder())
    try:
        await a.start()
        with pytest.raises(StorageError) as info:
            await b.start()
        assert isinstance(info.value, OSError)
        with pytest.raises(StorageError):
            await b.submit_named("query", "fetch", {"from": "b"})
        # The first manager is unaffected and keeps writing.
        done = await a.submit_named("query", "fetch", {"from": "a"})
        await asyncio.wait_for(done, WAIT)
        dead = await a.submit_named("query", "fail", 1)
        with pytest.raises(RuntimeError):
            await asyncio.wait_for(dead, WAIT)
        await a.drain(WAIT)
    finally:
        await b.close()
        await a.close()

    # The journal is intact: exactly the first manager's dead letter, nothing to replay.
    c = make_manager(tmp_path)
    recorder = Recorder()
    c.register("fetch", recorder)
    c.register("fail", recorder)
    try:
        await c.start()
        await c.drain(WAIT)
        letters = c.dead_letters()
    finally:
        await c.close()
    assert recorder.payloads == []
    assert [(x.lane_id, x.error, x.attempts) for x in letters] == [
        ("query", "RuntimeError: failed 1", 1)
    ]


async def test_unregistered_name_raises_lookup_error(tmp_path: Path) -> None:
    m = make_manager(tmp_path)
    m.register("fetch", Recorder())
    try:
        with pytest.raises(LookupError, match="nope"):
            await m.submit_named("query", "nope", {"url": "x"})
        assert m.in_flight == 0
    finally:
        await m.close()

    # Nothing was stored for it: a manager that knows the name replays nothing.
    assert await replayed(tmp_path, name="nope") == []


async def test_storage_can_be_reopened_right_after_close(tmp_path: Path) -> None:
    # After `await close()` the storage is released: a new manager on the same directory can
    # open it at once, every time (the lock must not depend on when objects are collected).
    for round_number in range(500):
        m = make_manager(tmp_path)
        try:
            try:
                await m.start()
            except StorageError as error:
                raise AssertionError(
                    f"round {round_number}: storage still locked after close(): {error}"
                ) from None
        finally:
            await m.close()


DONE_THEN_KILLED = """
import asyncio
import os
import signal
import sys
from pathlib import Path

from lanemq import LaneConfig, LocalStorage, QueueManager


async def main() -> None:
    runs = Path(sys.argv[2])
    m = QueueManager([LaneConfig("query", 0)], storage=LocalStorage(sys.argv[1]))

    async def work(payload):
        with runs.open("a") as f:
            f.write(f"{payload['n']}\\n")
        return payload["n"]

    m.register("work", work)
    handle = await m.submit_named("query", "work", {"n": 7})
    assert await handle == 7
    # Killed the moment the caller has the result: nothing else of this process runs.
    os.kill(os.getpid(), signal.SIGKILL)


asyncio.run(main())
"""


async def test_a_command_killed_as_it_finishes_does_not_run_again(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    for trial in range(5):
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            DONE_THEN_KILLED,
            str(tmp_path / "store"),
            str(runs),
            stderr=asyncio.subprocess.PIPE,
        )
        _, err = await asyncio.wait_for(proc.communicate(), 30)
        assert proc.returncode == -signal.SIGKILL, err.decode(errors="replace")
        # The completion was journaled before the handle resolved: nothing is replayed.
        assert await replayed(tmp_path / "store", "work") == [], f"trial {trial}"
    assert runs.read_text().split() == ["7"] * 5


async def test_dead_letters_of_ad_hoc_commands_with_a_name_survive_a_restart(
    tmp_path: Path,
) -> None:
    class Resize:
        command_type = "resize-image"

        async def execute(self) -> None:
            raise OSError("disk full")

    async def fetch_page() -> None:
        raise ValueError("404")

    async with make_manager(tmp_path) as a:
        for command in (Resize(), fetch_page, lambda: 1 / 0):
            with pytest.raises((OSError, ValueError, ZeroDivisionError)):
                await asyncio.wait_for(a.submit_nowait("query", command), WAIT)
        assert len(a.dead_letters()) == 3
    async with make_manager(tmp_path) as b:
        kept = [(letter.command_type, letter.error) for letter in b.dead_letters()]
    # A lambda's letter is not kept: it names nothing a restarted process could recognise.
    assert kept == [
        ("resize-image", "OSError: disk full"),
        (fetch_page.__qualname__, "ValueError: 404"),
    ]


async def test_clear_all_empties_the_storage(tmp_path: Path) -> None:
    storage = LocalStorage(tmp_path)
    await storage.open()
    await storage.store_command("query", "fetch", {"n": 1})
    stored = await storage.store_command("query", "fetch", {"n": 2})
    await storage.bury(stored, None)
    await storage.clear_all()
    storage.close()
    again = LocalStorage(tmp_path)
    await again.open()
    assert again.pending_commands() == []
    assert again.dead_letters() == []
    again.close()
