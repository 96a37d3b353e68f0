"""Helpers shared by the test modules."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from lanemq import Event, Subscription

WAIT = 5.0  # upper bound for anything a test awaits; never reached when things work


async def wait_until(
    predicate: Callable[[], bool], what: str = "a condition", timeout: float = WAIT
) -> None:
    """Waits for ``predicate`` to hold; fails the test after ``timeout`` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(0.002)


async def collect(sub: Subscription) -> list[Event]:
    """Closes ``sub`` and returns the events still buffered in it."""
    sub.close()
    return [event async for event in sub]
