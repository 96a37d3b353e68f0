"""A first look at lanemq.

Lanes: commands submitted to the six default lanes in the order prompt, skill, query, control
are started by lane priority, not arrival; a flaky command is retried; a failing one lands in
the dead-letter queue.

Jobs, on the embedded durable backend (LocalJobQueue: a SQLite file in ./lanemq-data, no
server): jobs added with priorities are processed by a worker in priority order; a job that
fails once is retried with backoff; the caller awaits a job's result. Run it twice: the queue
remembers the jobs of the earlier runs.

Run: pip install . && python examples/quickstart.py
"""

from __future__ import annotations

import asyncio

from lanemq import Backoff, Job, JobWorker, LaneConfig, LocalJobQueue, QueueManager, RetryPolicy


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
    print("lanes submitted in this order:", ", ".join(h.lane_id for h in handles))
    print("lanes started by priority:", ", ".join(order))
    print("lane results (each handle awaited):", ", ".join(results))

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
        print("flaky lane command:", await manager.submit("jobs", flaky))
        try:
            await manager.submit("jobs", broken)
        except RuntimeError as error:
            print("broken lane command raised:", error)
        for letter in manager.dead_letters():
            print(f"dead letter: {letter.command_type}, {letter.attempts} attempts: {letter.error}")
        metrics = manager.metrics()["jobs"]
        print(f"lane metrics: {metrics['completed']} completed, {metrics['retried']} retried")

    await jobs_demo()


async def jobs_demo() -> None:
    queue = LocalJobQueue("email", "./lanemq-data")
    before = (await queue.get_job_counts("completed"))["completed"]
    await queue.pause()  # add everything first, so the order shows the priorities
    for to, priority in (("bulk@example.com", 10), ("ops@example.com", 1), ("ceo@example.com", 0)):
        await queue.add("send", {"to": to}, priority=priority)
    flaky = await queue.add(
        "send", {"to": "flaky@example.com"}, attempts=3, backoff=Backoff.exponential(0.05)
    )
    await queue.resume()

    worker = JobWorker(queue, concurrency=1)  # one at a time, so the order shows priorities
    runs: list[str] = []
    tries = 0

    @worker.processor("send")
    async def send(job: Job) -> dict[str, str]:
        nonlocal tries
        to = job.data["to"]
        if to.startswith("flaky"):
            tries += 1
            if tries == 1:
                runs.append(f"{to} (priority {job.priority}; failed: provider timed out)")
                raise ConnectionError("provider timed out")
            runs.append(f"{to} (retry)")
        else:
            runs.append(f"{to} (priority {job.priority})")
        await job.update_progress(100)
        return {"sent": to}

    async with worker:
        result = await flaky.wait(timeout=10)
    # Priority 0 (none) runs first, then 1, 10; a failed attempt waits out its backoff.
    print("jobs ran in this order:", ", ".join(runs))
    print("flaky job result:", result, f"after {tries} attempts")
    counts = await queue.get_job_counts("completed", "failed")
    print(f"stored in {queue.path}: {counts} ({before} completed by earlier runs)")


if __name__ == "__main__":
    asyncio.run(main())
