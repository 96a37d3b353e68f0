"""What many open local queues cost one process, and what a long job log costs an append.

    python benches/many_queues.py [--queues 10000] [--nofile 1024] [--logs 100000]

Queues: the process sets its soft limit of open files to --nofile (hard limit unchanged),
then opens --queues `LocalJobQueue`s in one fresh directory, all kept alive, and reports:

- **open**: queues opened per second (each a new file: created, checked, registered);
- **threads**, **open files**: the process's, from /proc, after opening (and before, for the
  baseline), and the resident memory (VmRSS) added by opening, per queue;
- **add**: one job added to each queue (all the adds in flight at once), per second;
- **count**: ``get_job_count("waiting")`` of each queue in turn, per second (most files
  must be opened again: a process keeps a bounded number open);
- **exit**: the time from the last count to the end of a child process that exits without
  closing its queues (only in the ``--child`` run the parent starts for it).

Logs: ``job.log`` --logs times on one job, one awaited call at a time (each a commit, full
sync); the rate of the first and of the last 1,000 appends (alike when an append does not
depend on the log's length), and the total time.

Linux only (/proc). A report, not a test: it always exits 0.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _support import build_profile
from lanemq import LocalJobQueue


def threads() -> int:
    return len(os.listdir("/proc/self/task"))


def open_files() -> int:
    return len(os.listdir("/proc/self/fd"))


def rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


async def many_queues(directory: Path, n: int) -> None:
    before = (threads(), open_files(), rss_kib())
    start = time.perf_counter()
    queues = [LocalJobQueue(f"q{i}", directory) for i in range(n)]
    opened = time.perf_counter() - start
    after = (threads(), open_files(), rss_kib())
    print(f"open:   {n / opened:,.0f} queues/s ({n:,} in {opened:.1f} s)")
    print(f"threads: {before[0]} -> {after[0]}; open files: {before[1]} -> {after[1]}")
    per_queue = (after[2] - before[2]) / n
    mib = (before[2] / 1024, after[2] / 1024)
    print(f"memory: {mib[0]:,.0f} -> {mib[1]:,.0f} MiB ({per_queue:.1f} KiB/queue)")
    start = time.perf_counter()
    await asyncio.gather(*(queue.add("noop", {"i": i}) for i, queue in enumerate(queues)))
    added = time.perf_counter() - start
    print(f"add:    {n / added:,.0f} jobs/s (one per queue, all in flight)")
    start = time.perf_counter()
    counts = [await queue.get_job_count("waiting") for queue in queues]
    counted = time.perf_counter() - start
    assert counts == [1] * n, "every queue holds its one job"
    print(f"count:  {n / counted:,.0f} queues/s (one after the other)")
    print(
        f"after:  threads {threads()}, open files {open_files()}, "
        f"memory {rss_kib() / 1024:,.0f} MiB"
    )


async def long_log(directory: Path, lines: int) -> None:
    queue = LocalJobQueue("logs", directory)
    job = await queue.add("noop", {})
    window = min(1_000, lines)
    rates = []
    began = start = time.perf_counter()
    for i in range(1, lines + 1):
        await job.log(f"line {i}")
        if i % window == 0:
            now = time.perf_counter()
            rates.append(window / (now - start))
            start = now
    first, last = rates[0], rates[-1]
    print(
        f"logs:   first {window:,} appends {first:,.0f}/s, last {window:,} {last:,.0f}/s "
        f"({lines:,} lines on one job in {time.perf_counter() - began:.1f} s)"
    )
    await queue.close()


def child_exit(directory: Path, n: int, nofile: int) -> None:
    """Times a child that opens, adds to, counts and then leaves its queues open at exit."""
    start = time.perf_counter()
    done = subprocess.run(
        [
            sys.executable,
            __file__,
            "--child",
            "--queues",
            str(n),
            "--nofile",
            str(nofile),
            "--dir",
            str(directory),
            "--logs",
            "0",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    total = time.perf_counter() - start
    marks = [line for line in done.stdout.splitlines() if line.startswith("counted-at ")]
    exit_s = time.time() - float(marks[0].split()[1]) if marks else float("nan")
    print(
        f"child:  rc={done.returncode} in {total:.1f} s; exit after its last count "
        f"(queues left open) {exit_s * 1000:,.0f} ms"
    )
    if done.returncode:
        print(done.stderr[-2000:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--queues", type=int, default=10_000)
    parser.add_argument("--nofile", type=int, default=1024, help="soft RLIMIT_NOFILE")
    parser.add_argument("--logs", type=int, default=100_000, help="log lines on one job")
    parser.add_argument("--dir", type=Path, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    limit = args.nofile if hard == resource.RLIM_INFINITY else min(args.nofile, hard)
    resource.setrlimit(resource.RLIMIT_NOFILE, (limit, hard))
    if args.child:
        asyncio.run(many_queues(args.dir, args.queues))
        print(f"counted-at {time.time()}", flush=True)
        return  # every queue still open
    print(f"lanemq._core: {build_profile()} build; RLIMIT_NOFILE soft {limit}")
    with tempfile.TemporaryDirectory(prefix="lanemq-many-") as tmp:
        if args.queues:
            try:
                asyncio.run(many_queues(Path(tmp) / "queues", args.queues))
            except Exception as error:  # a report: say what stopped it
                print(f"stopped: {type(error).__name__}: {error}")
            child_exit(Path(tmp) / "child", args.queues, limit)
        if args.logs:
            asyncio.run(long_log(Path(tmp) / "logs", args.logs))


if __name__ == "__main__":
    main()
