"""Many workers on one Redis: 1, 2 and 4 worker *processes* on one queue and on four queues,
against the two ceilings that bound them (issue 32).

Run it (release build installed, e.g. ``maturin develop --release``)::

    python benches/many_workers.py [--jobs 40000] [--concurrency 100] [--procs 1,2,4]
                                   [--queues 1,4] [--repeat 2] [--redis-server redis-server]

It starts its own ``redis-server`` on a free port (``_support.RedisServer``, never 6379).

Each run: FLUSHALL, then ``--jobs`` no-op jobs bulk-added (untimed) to one queue, or spread
evenly over four. P child processes start (real OS processes, interpreter start-up and imports
off the clock: each prints ``ready`` and waits on its stdin). Each child runs one
``JobWorker(queue, noop, concurrency=C)`` per queue it is given: on one queue every child works
it; on four, queue q goes to child q % P (so one child runs four workers, four children one
each). The clock runs from writing ``go`` to every child until the parent, reading
``get_job_counts`` every 20 ms, sees every job completed. Around that the parent reads the
server's main-thread CPU (``INFO cpu``), and each child its own CPU (``getrusage``, every thread:
the event loop and the binding's runtime thread). The run is then checked: every job completed,
none waiting, active or failed, and the children's ``processed`` summing to the jobs.

Printed per (queues, processes): aggregate jobs/s; Redis busy % (server main-thread CPU over
the wall time); server CPU per job; worker CPU per job (all children together); the server
ceiling, 1 / server CPU per job (what one Redis main thread allows); the client ceiling, the
cores left after Redis divided by the worker CPU per job, where Redis's share is taken at that
same rate: cores / (server CPU per job + worker CPU per job); and a PASS/FAIL line: aggregate >=
90 % of min(server ceiling, client ceiling). The parent's polling is left out of both. "cores
used" (server and workers' CPU over the wall time) tells a run that had the machine from one
that shared it: the ceilings assume every core.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from _support import RedisServer, build_profile, text
from lanemq import RedisJobQueue

#: How often the parent reads the completed counts (one HGETALL-sized call per queue: small
#: beside the workers' calls, and left out of neither ceiling's CPU figures).
POLL = 0.02
#: The share of min(server ceiling, client ceiling) the aggregate must reach.
TARGET = 0.90
BULK = 1_000

CHILD = """
import asyncio, resource, sys
from lanemq import JobWorker, RedisJobQueue

async def noop(job):
    return None

def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime

async def main() -> None:
    url, concurrency, names = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(",")
    queues = [RedisJobQueue(name, url) for name in names]
    workers = [JobWorker(queue, noop, concurrency=concurrency) for queue in queues]
    loop = asyncio.get_running_loop()
    print("ready", flush=True)
    assert (await loop.run_in_executor(None, sys.stdin.readline)).strip() == "go"
    started = cpu()
    running = [asyncio.create_task(worker.run()) for worker in workers]
    await loop.run_in_executor(None, sys.stdin.readline)  # "stop"
    used = cpu() - started
    for worker in workers:
        await worker.close()
    await asyncio.gather(*running)
    print("processed", sum(worker.processed for worker in workers), used, flush=True)
    for queue in queues:
        await queue.close()

asyncio.run(main())
"""


def positive_int(value: str) -> int:
    number = int(value.replace("_", ""))
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {number}")
    return number


def int_list(value: str) -> list[int]:
    try:
        numbers = [positive_int(part) for part in value.split(",") if part.strip()]
    except ValueError as error:
        raise argparse.ArgumentTypeError(
            f"a comma-separated list of integers: {value!r}"
        ) from error
    if not numbers:
        raise argparse.ArgumentTypeError(f"no number in {value!r}")
    return numbers


@dataclass
class Run:
    rate: float
    seconds: float
    server_cpu: float
    worker_cpu: float
    problems: list[str] = field(default_factory=list)


def main_thread_cpu(server: RedisServer) -> float:
    """Seconds of CPU the server's main thread has used (``INFO cpu``)."""
    values = dict(
        line.split(":", 1) for line in text(server.call("INFO", "cpu")).splitlines() if ":" in line
    )
    for user, system in (
        ("used_cpu_user_main_thread", "used_cpu_sys_main_thread"),
        ("used_cpu_user", "used_cpu_sys"),
    ):
        if user in values and system in values:
            return float(values[user]) + float(values[system])
    raise RuntimeError("INFO cpu has no used_cpu_user / used_cpu_sys")


def assignments(queues: list[str], procs: int) -> list[list[str]]:
    """The queues each child works: all of one queue, or queue q to child q % procs (main()
    refuses more children than queues)."""
    if len(queues) == 1:
        return [queues[:] for _ in range(procs)]
    return [queues[child::procs] for child in range(procs)]


async def fill(server: RedisServer, queues: list[str], jobs: int) -> None:
    for index, name in enumerate(queues):
        queue = RedisJobQueue(name, server.url)
        ids = list(range(index, jobs, len(queues)))  # an even share of the jobs
        for start in range(0, len(ids), BULK):
            await queue.add_bulk([("noop", {"i": i}) for i in ids[start : start + BULK]])
        await queue.close()


async def completed(server: RedisServer, queues: list[str], jobs: int) -> list[RedisJobQueue]:
    """Returns (the parent's queue handles) once every job of `queues` is completed."""
    handles = [RedisJobQueue(name, server.url) for name in queues]
    while True:
        done = 0
        for handle in handles:
            done += (await handle.get_job_counts("completed"))["completed"]
        if done >= jobs:
            return handles
        await asyncio.sleep(POLL)


async def one_run(
    server: RedisServer, script: str, queues: list[str], procs: int, jobs: int, concurrency: int
) -> Run:
    server.call("FLUSHALL")
    await fill(server, queues, jobs)
    children: list[asyncio.subprocess.Process] = []
    try:
        for names in assignments(queues, procs):
            children.append(
                await asyncio.create_subprocess_exec(
                    sys.executable,
                    script,
                    server.url,
                    str(concurrency),
                    ",".join(names),
                    stdin=asyncio.subprocess.PIPE,
                    stdout=asyncio.subprocess.PIPE,
                )
            )
        for child in children:
            assert child.stdout is not None
            line = await child.stdout.readline()
            if line.strip() != b"ready":
                return Run(0.0, 0.0, 0.0, 0.0, [f"a child did not start (printed {line!r})"])
        cpu_before = main_thread_cpu(server)
        started = time.perf_counter()
        for child in children:
            assert child.stdin is not None
            child.stdin.write(b"go\n")
            await child.stdin.drain()
        handles = await completed(server, queues, jobs)
        seconds = time.perf_counter() - started
        server_cpu = main_thread_cpu(server) - cpu_before
        processed, worker_cpu = 0, 0.0
        for child in children:
            assert child.stdin is not None and child.stdout is not None
            child.stdin.write(b"stop\n")
            await child.stdin.drain()
        for child in children:
            assert child.stdout is not None
            words = (await child.stdout.readline()).split()
            if words[:1] == [b"processed"]:
                processed += int(words[1])
                worker_cpu += float(words[2])
            await asyncio.wait_for(child.wait(), 30)
        problems: list[str] = []
        totals = {"completed": 0, "waiting": 0, "active": 0, "failed": 0}
        for handle in handles:
            counts = await handle.get_job_counts(*totals)
            for state in totals:
                totals[state] += counts[state]
            await handle.close()
        if totals != {"completed": jobs, "waiting": 0, "active": 0, "failed": 0}:
            problems.append(f"counts {totals}")
        if processed != jobs:
            problems.append(f"children processed {processed} (expected {jobs})")
        return Run(jobs / seconds, seconds, server_cpu, worker_cpu, problems)
    finally:
        for child in children:
            if child.returncode is None:
                child.kill()  # this run's own child, by its handle
                await child.wait()


@dataclass
class Cell:
    """One (queues, processes) cell over its runs: the run of median rate stands for it."""

    queues: int
    procs: int
    runs: list[Run] = field(default_factory=list)

    def spread(self) -> str:
        rates = [run.rate for run in self.runs]
        return f"{self.queues}q {self.procs}p {min(rates):,.0f}-{max(rates):,.0f}"

    def median_run(self) -> Run:
        ordered = sorted(self.runs, key=lambda run: run.rate)
        return ordered[(len(ordered) - 1) // 2]


def ceilings(run: Run, jobs: int, cores: int) -> tuple[float, float, float, float]:
    """(server CPU per job, worker CPU per job, server ceiling, client ceiling), seconds and
    jobs/s."""
    server = run.server_cpu / jobs
    worker = run.worker_cpu / jobs
    server_ceiling = 1 / server if server > 0 else float("inf")
    client_ceiling = cores / (server + worker) if server + worker > 0 else float("inf")
    return server, worker, server_ceiling, client_ceiling


def report(cells: list[Cell], jobs: int, cores: int) -> list[str]:
    """Prints the table; returns the PASS/FAIL lines."""
    header = (
        f"{'queues':>6} | {'procs':>5} | {'jobs/s':>8} | {'Redis busy':>10} | "
        f"{'server us/job':>13} | {'worker us/job':>13} | {'server ceil':>11} | "
        f"{'client ceil':>11} | {'of min':>6} | {'cores used':>10}"
    )
    print(header)
    print("-" * len(header))
    verdicts: list[str] = []
    for cell in cells:
        run = cell.median_run()
        server, worker, server_ceiling, client_ceiling = ceilings(run, jobs, cores)
        bound = min(server_ceiling, client_ceiling)
        share = run.rate / bound if bound else 0.0
        busy = run.server_cpu / run.seconds if run.seconds else 0.0
        used = (run.server_cpu + run.worker_cpu) / run.seconds if run.seconds else 0.0
        print(
            f"{cell.queues:>6} | {cell.procs:>5} | {run.rate:>8,.0f} | {busy:>10.0%} | "
            f"{server * 1e6:>13.1f} | {worker * 1e6:>13.1f} | {server_ceiling:>11,.0f} | "
            f"{client_ceiling:>11,.0f} | {share:>6.0%} | {used:>10.2f}"
        )
        binds = "client" if client_ceiling < server_ceiling else "server"
        verdict = "PASS" if share >= TARGET and not run.problems else "FAIL"
        verdicts.append(
            f"{verdict} {cell.queues} queue(s), {cell.procs} worker process(es): "
            f"{run.rate:,.0f} jobs/s = {share:.0%} of min(server {server_ceiling:,.0f}, client "
            f"{client_ceiling:,.0f}) (the {binds} side binds; target >= {TARGET:.0%})"
        )
    return verdicts


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--jobs", type=positive_int, default=40_000, help="jobs per run")
    parser.add_argument("--concurrency", type=positive_int, default=100, help="slots per worker")
    parser.add_argument("--procs", type=int_list, default=[1, 2, 4], help="worker processes")
    parser.add_argument("--queues", type=int_list, default=[1, 4], help="queue layouts")
    parser.add_argument("--repeat", type=positive_int, default=2, help="runs of each cell")
    parser.add_argument("--redis-server", default="redis-server", help="redis-server binary")
    args = parser.parse_args(argv)
    cores = os.cpu_count() or 1
    for queues in args.queues:
        too_many = [procs for procs in args.procs if queues > 1 and procs > queues]
        if too_many:
            parser.error(f"--procs {too_many} exceed --queues {queues}: a child would idle")

    print(
        f"Python {platform.python_version()} ({platform.python_implementation()}) on {sys.platform}"
    )
    print(f"CPUs: {cores}; lanemq._core: {build_profile()} build; load {os.getloadavg()[0]:.1f}")
    print(
        f"jobs={args.jobs} concurrency={args.concurrency} per worker, procs={args.procs}, "
        f"queues={args.queues}, repeat={args.repeat}"
    )
    cells = [Cell(queues, procs) for queues in args.queues for procs in args.procs]
    anomalies: list[str] = []
    with RedisServer(args.redis_server) as server, tempfile.TemporaryDirectory() as scratch:
        print(f"redis-server {server.version} on port {server.port}")
        print()
        script = os.path.join(scratch, "many_workers_child.py")
        with open(script, "w") as file:
            file.write(CHILD)
        for round_ in range(args.repeat):
            # Cells alternate round by round, so the machine's drift hits all of them.
            for cell in cells:
                names = [f"mw-{q}" for q in range(cell.queues)]
                run = asyncio.run(
                    one_run(server, script, names, cell.procs, args.jobs, args.concurrency)
                )
                cell.runs.append(run)
                anomalies += [
                    f"{cell.queues}q {cell.procs}p (run {round_ + 1}): {problem}"
                    for problem in run.problems
                ]
            print(
                f"round {round_ + 1}: "
                + ", ".join(f"{c.queues}q {c.procs}p {c.runs[-1].rate:,.0f}/s" for c in cells)
            )
    print()
    verdicts = report(cells, args.jobs, cores)
    print()
    print(
        f"rates of each cell's median run; {cores} cores; Redis busy = server main-thread CPU / "
        "wall time; server ceiling = 1 / server CPU per job; client ceiling = cores / (server + "
        "worker CPU per job); cores used = (server + workers' CPU) / wall time: well under "
        f"{cores} means other processes had the cores, and the ceilings (which assume all "
        f"{cores}) are out of reach"
    )
    print("range of the runs: " + ", ".join(cell.spread() for cell in cells))
    print()
    for line in verdicts:
        print(line)
    if anomalies:
        print()
        print("anomalies:")
        for anomaly in anomalies:
            print(f"  {anomaly}")
    return 1 if anomalies else 0


if __name__ == "__main__":
    sys.exit(main())
