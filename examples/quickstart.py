"""A first look at lanemq's lanes: commands submitted to the six default lanes in the order
prompt, skill, query, control are started by lane priority, not arrival; a flaky command is
retried; a failing one lands in the dead-letter queue.

Run: pip install . && python examples/quickstart.py
"""

from __future__ import annotations

import asyncio

from lanemq import LaneConfig, QueueManager, RetryPolicy


async def main() -> None:
    order: list[str] = []

    async def work(label: str) -> str:
        order.append(label)
        await asyncio.sleep(0.01)
        return label.upper()

    # autostart=False: queue everything first, then start, so priority decides the order.
    manager = QueueManager.with_default_lanes(autostart=False)
    handles = [
        manager.submit_nowait(lane, work, f"{lane}-{i}")
        for i in range(2)
        for lane in ("prompt", "skill", "query", "control")
    ]
    async with manager:
        results = [await handle for handle in handles]
    print("submitted:", ", ".join(h.lane_id for h in handles))
    print("started:  ", ", ".join(order))
    print("results:  ", ", ".join(results))

    attempts = 0

    async def flaky() -> str:
        nonlocal attempts
        attempts += 1
        if attempts < 3:
            raise ConnectionError(f"attempt {attempts} failed")
        return f"ok after {attempts} attempts"

    async def broken() -> None:
        raise RuntimeError("always fails")

    lanes = [LaneConfig("jobs", priority=0, max_concurrency=2, retry=RetryPolicy.fixed(2, 0.05))]
    async with QueueManager(lanes) as manager:
        print("flaky:    ", await manager.submit("jobs", flaky))
        try:
            await manager.submit("jobs", broken)
        except RuntimeError as error:
            print("broken:   ", error)
        for letter in manager.dead_letters():
            print(f"dead letter: {letter.command_type}, {letter.attempts} attempts: {letter.error}")
        completed = manager.metrics()["jobs"]["completed"]
        print("metrics:   jobs lane completed", completed)


if __name__ == "__main__":
    asyncio.run(main())
