"""A worker process of the fault tests: one JobWorker on the queue a URL names, through the
public API only. Every run of a job appends ``start <id> <pid> <attempt>`` before the
processor runs and ``finish <id> <pid> <attempt>`` after it (``fail ...`` for a failed
attempt; ``cancelled ...`` when a ``work`` job's sleep is cancelled), and every ``error`` hook
call appends ``error <id> <pid> <kind>``, to an execution log opened with O_APPEND: each
line is one write(2), in the kernel when it returns, so a SIGKILL loses none and processes
never interleave. Prints ``ready`` once the worker runs, ``processed N`` when SIGTERM stopped
it.

Job names: ``work`` sleeps ``--work`` seconds (asyncio; or its data's ``sleep``); ``flaky``
fails its first attempt; ``block`` sleeps ``--block`` seconds with time.sleep, holding the
event loop (so leases are not renewed); anything else returns at once."""

from __future__ import annotations

import argparse
import asyncio
import os
import time
from typing import Any

import lanemq


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("queue")
    parser.add_argument("log")
    parser.add_argument("--prefix", default="lanemq")
    parser.add_argument("--concurrency", type=int, default=5)
    parser.add_argument("--lease", type=float, default=1.0)
    parser.add_argument("--renew-every", type=float, default=None)
    parser.add_argument("--stalled-interval", type=float, default=0.3)
    parser.add_argument("--work", type=float, default=0.02)
    parser.add_argument("--block", type=float, default=0.0)
    return parser.parse_args()


async def main() -> None:
    args = arguments()
    options: dict[str, Any] = {}
    if not args.url.startswith("local:"):
        options["prefix"] = args.prefix
    queue = lanemq.from_url(args.url, args.queue, **options)
    log = os.open(args.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    pid = os.getpid()

    def write(line: str) -> None:
        os.write(log, f"{line}\n".encode())

    async def process(job: lanemq.Job) -> dict[str, Any]:
        attempt = job.attempts_started
        write(f"start {job.id} {pid} {attempt}")
        if job.name == "work":
            seconds = job.data.get("sleep", args.work) if isinstance(job.data, dict) else args.work
            try:
                await asyncio.sleep(seconds)
            except asyncio.CancelledError:
                write(f"cancelled {job.id} {pid} {attempt}")  # (the processor's `finally`)
                raise
        elif job.name == "block":
            # The fault under test: the loop is held, so no renewal, no recovery.
            time.sleep(args.block)  # noqa: ASYNC251
        elif job.name == "flaky" and attempt == 1:
            write(f"fail {job.id} {pid} {attempt}")
            raise RuntimeError("first attempts of flaky jobs fail")
        write(f"finish {job.id} {pid} {attempt}")
        return {"pid": pid, "attempt": attempt}

    def on_error(error: BaseException) -> None:
        job_id = getattr(error, "job_id", "-")
        write(f"error {job_id} {pid} {type(error).__name__}")

    worker = lanemq.JobWorker(
        queue,
        process,
        concurrency=args.concurrency,
        lease=args.lease,
        renew_every=args.renew_every,
        stalled_interval=args.stalled_interval,
    )
    worker.on("error", on_error)
    if isinstance(queue, lanemq.RedisJobQueue):
        await queue.connect()
    running = asyncio.create_task(worker.run(install_signal_handlers=True, grace=5.0))
    await asyncio.sleep(0)
    print("ready", flush=True)
    await running
    await queue.close()
    print("processed", worker.processed, flush=True)


asyncio.run(main())
