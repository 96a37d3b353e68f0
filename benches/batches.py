"""Batch processors against single processing, on the local and Redis backends (memory too).

Run it (the package built in release mode, e.g. ``maturin develop --release``)::

    python benches/batches.py [--jobs 20000] [--size 100] [--repeat 3] [--backends local,redis]

For each backend (memory: an `InMemoryJobQueue`; local: a `LocalJobQueue` in a fresh directory
under ``$TMPDIR``; Redis: a private ``redis-server`` it starts on a free port) and each way of
processing, ``--jobs`` no-op jobs are added untimed (``add_bulk``), then a `JobWorker` runs,
timed from ``worker.run()`` until the ``completed`` hook has fired for every job:

- **single@1** and **single@100**: ``@worker.processor`` at concurrency 1 and 100;
- **batch@1** and **batch@4**: ``@worker.batch_processor(size=--size)`` at concurrency 1 and 4
  (``concurrency`` counts batches), the processor returning one ``None`` per job.

Checked afterwards: every job completed, nothing waiting, active or failed. It prints the best
of ``--repeat`` runs in jobs/s, each against single@100 on its backend, and a PASS/FAIL line
for the target (batch@1 at least 2x single@1 on local and Redis: a batch costs one claim, one
renewal and one completion call for ``size`` jobs; memory, which has no round trip to save, is
the reference without a target). Exits 1 on a FAIL or a problem.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import sys
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager

from _support import RedisServer, build_profile, queue_factories, timed_run
from lanemq import Job, JobQueue, JobWorker

Factory = Callable[[], AbstractAsyncContextManager[JobQueue]]
WAYS = ("single@1", "single@100", "batch@1", "batch@4")


async def fill(queue: JobQueue, n: int) -> None:
    for start in range(0, n, 1000):
        await queue.add_bulk([("noop", {"i": i}, None) for i in range(start, min(n, start + 1000))])


def worker_for(queue: JobQueue, way: str, size: int) -> JobWorker:
    kind, concurrency = way.split("@")
    worker = JobWorker(queue, concurrency=int(concurrency))
    if kind == "single":

        async def one(job: Job) -> None:
            return None

        worker.processor("noop")(one)
    else:

        async def many(jobs: list[Job]) -> list[None]:
            return [None] * len(jobs)

        worker.batch_processor("noop", size=size, min_size=size, timeout=0.05)(many)
    return worker


async def run(factory: Factory, n: int, way: str, size: int) -> tuple[float, list[str]]:
    async with factory() as queue:
        await fill(queue, n)
        gc.collect()
        worker = worker_for(queue, way, size)
        elapsed, problems = await timed_run(queue, worker, n, way, max(60.0, n / 500))
        await queue.obliterate(force=True)
        return n / elapsed, problems


def factories(backends: list[str], server: RedisServer | None) -> dict[str, Factory]:
    return queue_factories("batches", backends, server)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--size", type=int, default=100, help="jobs per batch")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--backends", default="local,redis", help="of memory,local,redis")
    parser.add_argument("--redis-server", default="redis-server")
    args = parser.parse_args()
    backends = [b for b in args.backends.split(",") if b]
    unknown = set(backends) - {"memory", "local", "redis"}
    if unknown or not backends:
        parser.error(f"unknown backends: {sorted(unknown) or args.backends!r}")
    print(f"lanemq build: {build_profile()}; {args.jobs} jobs, batches of {args.size}")
    server = RedisServer(args.redis_server) if "redis" in backends else None
    best: dict[tuple[str, str], float] = {}
    problems: list[str] = []
    try:
        if server is not None:
            server.start()
            print(f"redis-server {server.version} on port {server.port}")
        for backend, factory in factories(backends, server).items():
            for way in WAYS:
                # single@1 moves one job per round trip: fewer jobs keep its run short.
                n = args.jobs // 10 if way == "single@1" else args.jobs
                rates = []
                for _ in range(args.repeat):
                    rate, found = asyncio.run(run(factory, n, way, args.size))
                    rates.append(rate)
                    problems += [f"{backend} {p}" for p in found]
                best[backend, way] = max(rates)
                print(
                    f"  {backend:7} {way:11} {max(rates):>10,.0f} jobs/s (runs: "
                    + ", ".join(f"{r:,.0f}" for r in rates)
                    + ")"
                )
    finally:
        if server is not None:
            server.cleanup()
    print()
    print(f"{'backend':8}| " + " | ".join(f"{w:>22}" for w in WAYS))
    for backend in backends:
        base = best[backend, "single@100"]
        cells = [f"{best[backend, w]:>11,.0f} ({best[backend, w] / base:4.2f}x)" for w in WAYS]
        print(f"{backend:8}| " + " | ".join(f"{c:>22}" for c in cells))
    print("(best of the runs, jobs/s; ratio against single@100 on the same backend)")
    ok = not problems
    for problem in problems:
        print(f"PROBLEM: {problem}")
    # The target is for the backends where a call costs a round trip or a writer thread's
    # commit (what a batch saves); memory's rows are the reference, without one.
    for backend in [b for b in backends if b != "memory"]:
        ratio = best[backend, "batch@1"] / best[backend, "single@1"]
        verdict = "PASS" if ratio >= 2 else "FAIL"
        ok = ok and verdict == "PASS"
        print(f"{verdict}: {backend} batch@1 >= 2x single@1: {ratio:.1f}x")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
