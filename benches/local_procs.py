"""Local backend: processing throughput of one and of two worker *processes* sharing one queue
file, under ``sync="full"`` and ``sync="normal"``.

Run it (release build installed, e.g. ``maturin develop --release``)::

    TMPDIR=/some/real/disk python benches/local_procs.py [--jobs 20000] [--concurrency 100]
                                                         [--repeat 3]

It is a report, not a test: it always exits 0 and has no PASS/FAIL line (two processes on two
cores shared with the parent and SQLite's one write lock per file make the figure a property of
the machine, not a target).

Each run: a fresh directory under ``$TMPDIR`` (say which disk it is: on a tmpfs syncs cost
nothing) and one queue file filled with ``--jobs`` no-op jobs (``add_bulk``, untimed). Then P
child processes (P = 1, 2) start, each opening the file with the run's ``sync`` and making a
``JobWorker(queue, noop, concurrency=C)``; each prints ``ready`` and waits on its stdin, so
interpreter start-up and imports stay off the clock. The clock runs from writing ``go`` to every
child until the parent, polling ``get_job_counts`` every 20 ms (``POLL``), sees all N completed.
The children are then told ``stop`` (they close their worker and exit) and the run is checked:
N completed, none waiting, active or failed, and each child's ``processed`` count summing to N.
Runs alternate between the four (sync, P) cells round by round, so drift hits all of them.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence

from _support import build_profile
from lanemq import LocalJobQueue
from lanemq.queue import LocalSync

SYNCS: tuple[LocalSync, ...] = ("full", "normal")
#: How often the parent reads the completed count: each read takes the file's write lock
#: briefly (the writer runs every batch in one), so not so often that it slows the children.
POLL = 0.02

CHILD = """
import asyncio, sys
from lanemq import JobWorker, LocalJobQueue

async def noop(job):
    return None

async def main() -> None:
    directory, sync, concurrency = sys.argv[1], sys.argv[2], int(sys.argv[3])
    queue = LocalJobQueue("procs", directory, sync=sync)
    worker = JobWorker(queue, noop, concurrency=concurrency)
    loop = asyncio.get_running_loop()
    print("ready", flush=True)
    assert (await loop.run_in_executor(None, sys.stdin.readline)).strip() == "go"
    running = asyncio.create_task(worker.run())
    await loop.run_in_executor(None, sys.stdin.readline)  # "stop"
    await worker.close()
    await running
    print("processed", worker.processed, flush=True)
    await queue.close()

asyncio.run(main())
"""


def positive_int(text: str) -> int:
    value = int(text.replace("_", ""))
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


class Run:
    __slots__ = ("problems", "rate")

    def __init__(self, rate: float, problems: list[str]) -> None:
        self.rate = rate
        self.problems = problems


async def one_run(sync: LocalSync, procs: int, n: int, concurrency: int, script: str) -> Run:
    directory = tempfile.mkdtemp(prefix="lanemq-procs-")
    children: list[asyncio.subprocess.Process] = []
    try:
        queue = LocalJobQueue("procs", directory, sync=sync)
        for start in range(0, n, 1000):
            await queue.add_bulk([("noop", {"i": i}) for i in range(start, min(start + 1000, n))])
        for _ in range(procs):
            child = await asyncio.create_subprocess_exec(
                sys.executable,
                script,
                directory,
                sync,
                str(concurrency),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
            )
            children.append(child)
        for child in children:
            assert child.stdout is not None
            line = await child.stdout.readline()
            if line.strip() != b"ready":
                return Run(0.0, [f"a child did not start (printed {line!r})"])
        t0 = time.perf_counter()
        for child in children:
            assert child.stdin is not None
            child.stdin.write(b"go\n")
            await child.stdin.drain()
        await completed(queue, n)
        rate = n / (time.perf_counter() - t0)
        processed = 0
        for child in children:
            assert child.stdin is not None and child.stdout is not None
            child.stdin.write(b"stop\n")
            await child.stdin.drain()
            words = (await child.stdout.readline()).split()
            processed += int(words[1]) if words[:1] == [b"processed"] else 0
            await asyncio.wait_for(child.wait(), 30)
        counts = await queue.get_job_counts("completed", "waiting", "active", "failed")
        expected = {"completed": n, "waiting": 0, "active": 0, "failed": 0}
        problems = [] if counts == expected else [f"counts {counts}"]
        if processed != n:
            problems.append(f"children processed {processed} (expected {n})")
        await queue.close()
        return Run(rate, problems)
    finally:
        for child in children:
            if child.returncode is None:
                child.kill()  # this run's own child, by its handle
                await child.wait()
        shutil.rmtree(directory, ignore_errors=True)


async def completed(queue: LocalJobQueue, n: int) -> None:
    """Returns once ``n`` jobs of ``queue`` are completed (read every ``POLL`` seconds)."""
    while True:
        if (await queue.get_job_counts("completed"))["completed"] >= n:
            return
        await asyncio.sleep(POLL)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--jobs", type=positive_int, default=20_000, help="jobs per run")
    parser.add_argument("--concurrency", type=positive_int, default=100, help="slots per worker")
    parser.add_argument("--repeat", type=positive_int, default=3, help="runs of each cell")
    args = parser.parse_args(argv)

    print(
        f"Python {platform.python_version()} ({platform.python_implementation()}) on {sys.platform}"
    )
    print(f"CPUs: {os.cpu_count()}; lanemq._core: {build_profile()} build")
    print(f"queue files under: {tempfile.gettempdir()}")
    print(f"jobs={args.jobs} concurrency={args.concurrency} per process repeat={args.repeat}")
    print()

    cells = [(sync, procs) for sync in SYNCS for procs in (1, 2)]
    rates: dict[tuple[LocalSync, int], list[float]] = {cell: [] for cell in cells}
    anomalies: list[str] = []
    with tempfile.TemporaryDirectory(prefix="lanemq-procs-script-") as scratch:
        script = os.path.join(scratch, "worker_child.py")
        with open(script, "w") as file:
            file.write(CHILD)
        for round_ in range(args.repeat):
            for sync, procs in cells:
                run = asyncio.run(one_run(sync, procs, args.jobs, args.concurrency, script))
                rates[(sync, procs)].append(run.rate)
                anomalies += [f"{sync}, {procs}p (run {round_ + 1}): {p}" for p in run.problems]
            print(
                f"round {round_ + 1}: "
                + ", ".join(f"{s} {p}p {rates[(s, p)][-1]:,.0f}/s" for s, p in cells)
            )
    print()
    header = (
        f"{'sync':<7} | {'worker procs':>12} | {'jobs/s best':>11} | {'median':>8} | "
        f"{'vs 1 proc':>9}"
    )
    print(header)
    print("-" * len(header))
    for sync, procs in cells:
        best = max(rates[(sync, procs)])
        one = max(rates[(sync, 1)])
        versus = f"{best / one:.2f}x" if one else "n/a"
        median = statistics.median(rates[(sync, procs)])
        print(f"{sync:<7} | {procs:>12} | {best:>11,.0f} | {median:>8,.0f} | {versus:>9}")
    if anomalies:
        print()
        print("anomalies:")
        for anomaly in anomalies:
            print(f"  {anomaly}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
