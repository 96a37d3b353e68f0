"""Leaving ``async with QueueManager``: at most ``close_timeout`` seconds of waiting for the
commands in flight (none when the body raised), then they are cancelled."""

from __future__ import annotations

import asyncio
import math

import pytest
from lanemq import CommandHandle, ConfigError, LaneConfig, QueueManager

#: Only keeps a broken exit from hanging the run; the exits under test take far less.
HANG_GUARD = 30.0


class Endless:
    """A command that never ends on its own, and says whether it was cancelled."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.cancelled = False

    async def __call__(self) -> None:
        self.started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled = True
            raise


def lanes() -> list[LaneConfig]:
    return [LaneConfig("a", 0, max_concurrency=1)]


async def test_a_body_that_raises_does_not_wait_for_commands_and_cancels_them() -> None:
    endless = Endless()
    handles: list[CommandHandle[None]] = []

    async def leave_raising() -> None:
        # An hour to wait if the body returned: the raise must make it no wait at all.
        async with QueueManager(lanes(), close_timeout=3600) as manager:
            handles.append(manager.submit_nowait("a", endless))
            await endless.started.wait()
            raise LookupError("the body failed")

    with pytest.raises(LookupError, match="the body failed"):
        await asyncio.wait_for(leave_raising(), HANG_GUARD)
    assert endless.cancelled
    assert handles[0].cancelled()


async def test_a_body_that_returns_waits_close_timeout_then_cancels() -> None:
    endless = Endless()

    async def leave() -> CommandHandle[None]:
        async with QueueManager(lanes(), close_timeout=0.2) as manager:
            handle = manager.submit_nowait("a", endless)
            await endless.started.wait()
        return handle

    handle = await asyncio.wait_for(leave(), HANG_GUARD)
    assert endless.cancelled
    assert handle.cancelled()


async def test_a_command_that_ends_within_close_timeout_completes() -> None:
    async def brief() -> str:
        await asyncio.sleep(0.05)
        return "done"

    async with QueueManager(lanes(), close_timeout=HANG_GUARD) as manager:
        handle = manager.submit_nowait("a", brief)
    assert handle.result() == "done"


@pytest.mark.parametrize("bad", [-1, -0.5, math.nan, "8", None, True])
def test_close_timeout_must_be_a_number_of_seconds(bad: object) -> None:
    with pytest.raises(ConfigError, match=rf"close_timeout: {bad!r}"):
        QueueManager(lanes(), close_timeout=bad)  # type: ignore[arg-type]
