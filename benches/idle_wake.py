"""What an idle worker costs, and how fast it starts a job another process adds.

    python benches/idle_wake.py            # about half a minute; --help for the knobs

For each backend a worker process is started (a `JobWorker` at concurrency 10, plus an
`async for` over the queue's events and a `wait_for_job`, the three waits a service holds
while idle). Then:

- **idle CPU**: the worker process's CPU time (user + system, from /proc) over --idle seconds
  with nothing to do, as % of one core;
- **wake-up**: this process adds --jobs jobs one at a time, --gap seconds apart (so the worker
  is idle each time); the processor records when it started. add() returned → processor
  started, p50 / p90 / max, in ms. On `local` this crosses processes through the queue file
  alone.

Peers in the same run: lanemq on Redis (its own redis-server, when one is on PATH), whose waits
block on the server. Targets (issue 15): local idle CPU < 1 % of a core, local wake-up p50 <
10 ms. A report: it always exits 0.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from _support import RedisServer

WORKER = textwrap.dedent(
    """
    import asyncio, json, sys, time
    from lanemq import JobWorker, LocalJobQueue, RedisJobQueue

    def make(kind, where):
        if kind == "local":
            return LocalJobQueue("idle", where)
        return RedisJobQueue("idle", where)

    async def main(kind, where, out):
        queue = make(kind, where)
        started = open(out, "a", buffering=1)

        async def record(job):
            started.write(json.dumps([job.data["i"], time.time()]) + "\\n")

        worker = JobWorker(queue, record, concurrency=10)

        async def follow():
            async for _ in queue.events():
                pass

        followers = [asyncio.create_task(follow()),
                     asyncio.create_task(queue.wait_for_job(timeout=3600))]
        print("ready", flush=True)
        await worker.run()
        for task in followers:
            task.cancel()

    asyncio.run(main(*sys.argv[1:]))
    """
)


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks  # utime + stime


async def measure(kind: str, where: str, idle: float, jobs: int, gap: float) -> dict[str, float]:
    from lanemq import LocalJobQueue, RedisJobQueue

    tmp = Path(tempfile.mkdtemp(prefix="lanemq-idle-"))
    out = tmp / "started.jsonl"
    out.touch()
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", WORKER, kind, where, str(out), stdout=subprocess.PIPE
    )
    try:
        assert proc.stdout is not None
        assert (await proc.stdout.readline()).strip() == b"ready"
        await asyncio.sleep(1.0)  # past start-up work
        before = cpu_seconds(proc.pid)
        await asyncio.sleep(idle)
        idle_cpu = (cpu_seconds(proc.pid) - before) / idle * 100

        queue = LocalJobQueue("idle", where) if kind == "local" else RedisJobQueue("idle", where)
        added: dict[int, float] = {}
        for i in range(jobs):
            job = await queue.add("probe", {"i": i})
            added[i] = time.time()
            await asyncio.sleep(gap)
        await job.wait(timeout=10)  # the last one: every start is recorded
        await queue.close()
        waits = sorted(
            (at - added[i]) * 1000
            for i, at in (json.loads(line) for line in out.read_text().splitlines())
        )
    finally:
        proc.terminate()
        await proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    return {
        "idle_cpu": idle_cpu,
        "p50": statistics.median(waits),
        "p90": waits[int(len(waits) * 0.9) - 1],
        "max": waits[-1],
        "n": len(waits),
    }


def redis_server() -> RedisServer | None:
    """A private redis-server, or None (and Redis is left out of the run) if there is none
    on PATH or it does not start."""
    if shutil.which("redis-server") is None:
        return None
    server = RedisServer()
    try:
        server.start()
    except RuntimeError:
        server.cleanup()
        return None
    return server


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--idle", type=float, default=5.0, help="seconds of idle measured")
    parser.add_argument("--jobs", type=int, default=50, help="jobs added one at a time")
    parser.add_argument("--gap", type=float, default=0.1, help="seconds between adds")
    args = parser.parse_args()

    rows: dict[str, dict[str, float]] = {}
    data = Path(tempfile.mkdtemp(prefix="lanemq-idle-data-"))
    try:
        rows["local"] = await measure("local", str(data), args.idle, args.jobs, args.gap)
        server = redis_server()
        if server is not None:
            try:
                rows["redis"] = await measure("redis", server.url, args.idle, args.jobs, args.gap)
            finally:
                server.cleanup()
    finally:
        shutil.rmtree(data, ignore_errors=True)

    print(
        f"{'backend':<8} {'idle CPU %':>11} {'wake p50 ms':>12} {'p90 ms':>8} {'max ms':>8}"
        f" {'jobs':>5} {'p50 vs redis':>13}"
    )
    ref = rows.get("redis")
    for name, row in rows.items():
        ratio = f"{row['p50'] / ref['p50']:.2f}x" if ref else "-"
        print(
            f"{name:<8} {row['idle_cpu']:>11.2f} {row['p50']:>12.2f} {row['p90']:>8.2f}"
            f" {row['max']:>8.2f} {int(row['n']):>5} {ratio:>13}"
        )
    local = rows["local"]
    verdict = "PASS" if local["idle_cpu"] < 1.0 else "FAIL"
    print(f"{verdict}: local idle worker CPU {local['idle_cpu']:.2f} % of a core (target < 1 %)")
    verdict = "PASS" if local["p50"] < 10.0 else "FAIL"
    print(f"{verdict}: local cross-process wake-up p50 {local['p50']:.2f} ms (target < 10 ms)")


if __name__ == "__main__":
    asyncio.run(main())
