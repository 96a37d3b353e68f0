"""Lanes: in-process async work dispatched by lane priority, with per-lane concurrency caps,
a global cap whose per-lane reservations keep a flood in one lane from starving another, and
retries. Commands are ordinary `async def` functions; submit is typed from their signature.

    python examples/lanes_priorities.py
"""

from __future__ import annotations

import asyncio

from lanemq import LaneConfig, QueueManager, RetryPolicy

started: list[str] = []
running = 0
peak = 0


async def handle(label: str, seconds: float = 0.02) -> str:
    global running, peak
    started.append(label)
    running += 1
    peak = max(peak, running)
    await asyncio.sleep(seconds)
    running -= 1
    return label.upper()


async def main() -> None:
    global peak
    lanes = [
        LaneConfig("interactive", priority=0, max_concurrency=2),
        LaneConfig("batch", priority=5, max_concurrency=4, retry=RetryPolicy.fixed(2, 0.01)),
    ]
    # 1. Priority: all queued before the start, batch first. Interactive starts first, up to
    #    its cap of 2; batch fills its own slots meanwhile; click-2 waits for a free slot.
    manager = QueueManager(lanes, autostart=False)
    handles = [manager.submit_nowait("batch", handle, f"batch-{n}") for n in range(3)]
    handles += [manager.submit_nowait("interactive", handle, f"click-{n}") for n in range(3)]
    async with manager:
        results = [await h for h in handles]  # each handle is awaitable: the command's result
    print("submitted:", ", ".join(h.lane_id for h in handles))
    print("started:  ", ", ".join(started))
    print("results:  ", ", ".join(results))
    print("peak concurrency:", peak, "(each lane has its own cap, no global one)")

    # 2. A global cap of 2 with min_concurrency=1 per lane: one slot stays batch's, so a flood
    #    of interactive work cannot starve it.
    started.clear()
    peak = 0
    capped = QueueManager(
        [
            LaneConfig("interactive", priority=0, min_concurrency=1, max_concurrency=2),
            LaneConfig("batch", priority=5, min_concurrency=1, max_concurrency=2),
        ],
        max_concurrency=2,
        autostart=False,
    )
    flood = [capped.submit_nowait("interactive", handle, f"click-{n}") for n in range(4)]
    nightly = capped.submit_nowait("batch", handle, "nightly")
    async with capped:
        await asyncio.gather(*flood, nightly)
    print("with a global cap:", ", ".join(started), "| peak", peak)

    # 3. Retries: a command that fails twice succeeds on its third attempt (RetryPolicy.fixed).
    attempts = 0

    async def flaky() -> str:
        nonlocal attempts
        attempts += 1
        if attempts < 3:
            raise ConnectionError(f"attempt {attempts} failed")
        return f"ok after {attempts} attempts"

    async with QueueManager(lanes) as manager:
        print("retried:", await manager.submit("batch", flaky))
        stats = manager.metrics()["batch"]
        print("batch lane metrics: completed", stats["completed"], "retried", stats["retried"])


if __name__ == "__main__":
    asyncio.run(main())
