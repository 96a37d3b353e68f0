"""Groups at the claim: claim + complete throughput for ungrouped jobs, one group and 10,000
groups, on Redis and the local backend.

Run it (the package built in release mode, e.g. ``maturin develop --release``)::

    python benches/groups.py [--jobs 20000] [--groups 10000] [--repeat 3] [--backends redis,local]

For each backend (Redis: a private ``redis-server`` it starts on a free port; local: a
`LocalJobQueue` in a fresh directory under ``$TMPDIR``), each kind of jobs and each
concurrency, ``--jobs`` no-op jobs are added untimed (``add_bulk``), then a `JobWorker` runs,
timed from ``worker.run()`` until the ``completed`` hook has fired for every job:

- **ungrouped**: jobs without a group (the claim's path without turns);
- **1 group**: every job in one group (each claim takes turns through the group);
- **N groups**: job i in group ``i % --groups`` (every claim a different group's turn).

at concurrency 100 and 1 (``@1`` with a tenth of the jobs: one job per round trip). On Redis
each row also shows the server's CPU time per job (``INFO cpu``, ``used_cpu_sys`` +
``used_cpu_user``, before and after the timed run, over the jobs). Checked afterwards: every
job completed, nothing waiting, active or failed. It prints the best of ``--repeat`` runs and
PASS/FAIL lines per backend at concurrency 100: N groups >= 0.5x one group, and one group >=
0.7x ungrouped. Exits 1 on a problem (a job lost), never on a FAIL line.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import sys
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

from _support import RedisServer, Resp, build_profile, queue_factories, timed_run
from lanemq import Job, JobQueue, JobWorker

Factory = Callable[[], AbstractAsyncContextManager[JobQueue]]
KINDS = ("ungrouped", "1 group", "N groups")
CONCURRENCIES = (100, 1)


def group_of(kind: str, i: int, groups: int) -> str | None:
    if kind == "ungrouped":
        return None
    if kind == "1 group":
        return "g"
    return f"g{i % groups}"


async def fill(queue: JobQueue, n: int, kind: str, groups: int) -> None:
    for start in range(0, n, 1000):
        batch: list[tuple[str, Any, dict[str, Any] | None]] = []
        for i in range(start, min(n, start + 1000)):
            group = group_of(kind, i, groups)
            batch.append(("noop", {"i": i}, None if group is None else {"group": group}))
        await queue.add_bulk(batch)


def redis_cpu(server: RedisServer | None) -> float:
    """The server's CPU seconds so far (user + sys), or 0 without a server."""
    if server is None:
        return 0.0
    resp = Resp("127.0.0.1", server.port)
    try:
        info = resp.call("INFO", "cpu")
    finally:
        resp.sock.close()
    text = info.decode() if isinstance(info, bytes) else str(info)
    values = dict(line.split(":", 1) for line in text.splitlines() if line.startswith("used_cpu_"))
    return float(values["used_cpu_sys"]) + float(values["used_cpu_user"])


async def run(
    factory: Factory, server: RedisServer | None, n: int, kind: str, groups: int, concurrency: int
) -> tuple[float, float, list[str]]:
    """Jobs/s, the server's CPU microseconds per job, and any problems found."""
    async with factory() as queue:
        await fill(queue, n, kind, groups)
        gc.collect()
        worker = JobWorker(queue, concurrency=concurrency)

        async def one(job: Job) -> None:
            return None

        worker.processor("noop")(one)
        cpu0 = redis_cpu(server)
        label = f"{kind}@{concurrency}"
        elapsed, problems = await timed_run(queue, worker, n, label, max(60.0, n / 200))
        cpu = redis_cpu(server) - cpu0
        await queue.obliterate(force=True)
        return n / elapsed, cpu / n * 1e6, problems


def factories(backends: list[str], server: RedisServer | None) -> dict[str, Factory]:
    return queue_factories("groups", backends, server)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--groups", type=int, default=10_000, help="groups of the N-groups rows")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--backends", "--backend", default="redis,local", help="of redis,local")
    parser.add_argument("--redis-server", default="redis-server")
    args = parser.parse_args()
    backends = [b for b in args.backends.split(",") if b]
    unknown = set(backends) - {"local", "redis"}
    if unknown or not backends:
        parser.error(f"unknown backends: {sorted(unknown) or args.backends!r}")
    print(f"lanemq build: {build_profile()}; {args.jobs} jobs, N = {args.groups} groups")
    server = RedisServer(args.redis_server) if "redis" in backends else None
    best: dict[tuple[str, str, int], tuple[float, float]] = {}
    problems: list[str] = []
    try:
        if server is not None:
            server.start()
            print(f"redis-server {server.version} on port {server.port}")
        for backend, factory in factories(backends, server).items():
            for concurrency in CONCURRENCIES:
                for kind in KINDS:
                    n = args.jobs // 10 if concurrency == 1 else args.jobs
                    runs: list[tuple[float, float]] = []
                    for _ in range(args.repeat):
                        shared = server if backend == "redis" else None
                        rate, cpu, found = asyncio.run(
                            run(factory, shared, n, kind, args.groups, concurrency)
                        )
                        runs.append((rate, cpu))
                        problems += [f"{backend} {p}" for p in found]
                    best[backend, kind, concurrency] = max(runs)
                    print(
                        f"  {backend:6} {kind:10} @{concurrency:<4} {max(runs)[0]:>10,.0f} jobs/s"
                        " (runs: " + ", ".join(f"{r:,.0f}" for r, _ in runs) + ")"
                    )
    finally:
        if server is not None:
            server.cleanup()
    print()
    header = f"{'backend':8}| {'jobs':10}| " + " | ".join(
        f"{f'@{c} jobs/s':>12} {'redis us/job':>12}" for c in CONCURRENCIES
    )
    print(header)
    for backend in backends:
        for kind in KINDS:
            cells = []
            for c in CONCURRENCIES:
                rate, cpu = best[backend, kind, c]
                cpu_text = f"{cpu:12.1f}" if backend == "redis" else f"{'-':>12}"
                cells.append(f"{rate:>12,.0f} {cpu_text}")
            print(f"{backend:8}| {kind:10}| " + " | ".join(cells))
    print("(best of the runs; redis us/job: the server's CPU time per job in that run)")
    ok = not problems
    for problem in problems:
        print(f"PROBLEM: {problem}")
    for backend in backends:
        ungrouped = best[backend, "ungrouped", 100][0]
        one = best[backend, "1 group", 100][0]
        many = best[backend, "N groups", 100][0]
        checks = (
            (many >= 0.5 * one, f"{args.groups} groups >= 0.5x 1 group: {many / one:.2f}x"),
            (one >= 0.7 * ungrouped, f"1 group >= 0.7x ungrouped: {one / ungrouped:.2f}x"),
        )
        for verdict_ok, text in checks:
            print(f"{'PASS' if verdict_ok else 'FAIL'}: {backend} {text}")
    # A report: a FAIL line does not change the exit status; a problem (a job lost) does.
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
