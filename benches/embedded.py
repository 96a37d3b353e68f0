"""The embedded backend against bunqueue: lanemq's `LocalJobQueue` (SQLite, WAL) and bunqueue
in its embedded SQLite mode, on no-op jobs, on one machine in one run.

Run it (the package built in release mode, e.g. ``maturin develop --release``)::

    python benches/embedded.py [--rounds 3] [--single 2000] [--jobs 20000] [--batch 1000]
                               [--concurrency 100] [--commits 500] [--scratch DIR]
                               [--data DIR] [--no-install]

It is a report, not a test: it always exits 0.

Peers
-----
bunqueue runs under Bun, both installed by this bench from npm into ``<scratch>/bun``
(``--scratch``, default ``~/.cache/lanemq-bench``, as compare.py does for BullMQ Node):
``@oven/bun-linux-x64`` (a Linux x86_64 build; elsewhere bunqueue is reported "unavailable"
and the lanemq rows still run) and ``bunqueue``. ``benches/bunqueue_bench.ts`` runs one
workload per Bun process (bunqueue keeps one embedded manager per process) and prints one
``RESULT {json}`` line. lanemq runs in this process, each run on a fresh event loop after a
``gc.collect()``, in a fresh directory. Both sides' files live under ``--data`` (default
``<scratch>/data``): point it at the disk you want measured (on a tmpfs syncs cost nothing).

Rows (each round runs every row, the two systems one after the other; the table shows the
median over ``--rounds``)
----
- ``WAL commit FULL`` / ``WAL commit NORMAL``: Python's sqlite3 on a file in WAL mode with
  ``synchronous=FULL`` (``NORMAL``), ``--commits`` times one one-row INSERT and its COMMIT on
  this thread: what one durable commit costs on this disk, the floor of an awaited add.
- ``add, 1 awaited``: ``--single`` jobs added one ``await`` at a time. lanemq with
  ``sync="normal"`` and with ``sync="full"``; bunqueue's plain ``queue.add`` (buffered: it
  acknowledges before the job is written) and, for reference, ``{durable: true}``.
- ``add_bulk``: ``--jobs`` jobs in batches of ``--batch`` (lanemq ``sync="full"``).
- ``process@C``: ``--jobs`` jobs added first (untimed), then one worker of concurrency
  ``--concurrency`` drains them; the clock stops at the last "completed" event.
- ``add, 100 at once``: the same ``--single`` jobs, 100 tasks' adds gathered at a time: the
  case the writer thread's group commit serves (a lone add commits on the loop's thread).
- ``loop gap``: while one task adds ``--single`` jobs one by one (lanemq, each sync), a ticker
  task on the same loop sleeps 1 ms at a time; the row gives the largest delay past its 1 ms
  (and the 99th percentile): what a commit on the loop's thread costs the loop's other work.

Targets (PASS/FAIL, on the medians)
-------
- add, 1 awaited, ``sync="normal"`` >= bunqueue's plain add (jobs/s);
- add, 1 awaited, ``sync="full"``: latency <= 1.5x one inline ``WAL commit FULL``;
- add_bulk >= 3x bunqueue; process@C >= 10x bunqueue.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import platform
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

from _support import build_profile, tail
from comparison.install import System, npm_packages, run_command
from jobs import Outcome, add_bulk_run, add_single_run, process_run
from lanemq import JobQueue, LocalJobQueue
from lanemq.queue import LocalSync

T = TypeVar("T")
BUN_SCRIPT = Path(__file__).resolve().parent / "bunqueue_bench.ts"
BUN_PACKAGE = "@oven/bun-linux-x64"

#: (row, what the ratio lanemq / reference must reach, how it reads).
THROUGHPUT_TARGETS: list[tuple[str, float, str]] = [
    ("add, 1 awaited (normal)", 1.0, 'single awaited add, sync="normal" >= bunqueue'),
    ("add_bulk", 3.0, "add_bulk >= 3x bunqueue"),
]
#: sync="full" add latency over one inline FULL commit: at most this.
FULL_OVER_COMMIT = 1.5
PROCESS_OVER_BUNQUEUE = 10.0


# --------------------------------------------------------------------------- set-up


def setup_bun(scratch: Path, install: bool) -> System:
    """Bun and bunqueue in ``<scratch>/bun`` (npm), installed unless there or ``--no-install``."""
    system = System("bunqueue")
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "AMD64"):
        system.status = f"unavailable: {BUN_PACKAGE} is Linux x86_64 only ({platform.machine()})"
        return system
    prefix = scratch / "bun"
    modules = prefix / "node_modules"
    bun = modules / "@oven" / "bun-linux-x64" / "bin" / "bun"
    have = bun.is_file() and (modules / "bunqueue" / "package.json").is_file()
    if not npm_packages(system, prefix, [BUN_PACKAGE, "bunqueue"], have, install):
        return system
    ok, detail = run_command([str(bun), "--version"], timeout=60)
    if not ok:
        system.status = f"unavailable: {bun} does not run: {detail}"
        return system
    package = json.loads((modules / "bunqueue" / "package.json").read_text())
    system.version = f"bunqueue {package['version']}, Bun {detail.strip()}"
    system.command = [str(bun), str(BUN_SCRIPT), str(prefix)]
    return system


def run_bunqueue(system: System, data: Path, spec: dict[str, Any]) -> Outcome | str:
    """One bunqueue workload in a fresh Bun process on a fresh file: its outcome, or why not."""
    directory = Path(tempfile.mkdtemp(prefix="bunqueue-", dir=data))
    try:
        spec = {**spec, "data_path": str(directory / "bunqueue.db"), "timeout_s": 300}
        done = subprocess.run(
            [*system.command, json.dumps(spec)],
            capture_output=True,
            text=True,
            timeout=600,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        return "timed out"
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            result = json.loads(line[len("RESULT ") :])
            return Outcome(float(result["value"]), list(result["problems"]))
    return f"exit {done.returncode}: {tail(done.stdout + done.stderr)}"


# --------------------------------------------------------------------------- lanemq side


def local_factory(
    data: Path, sync: LocalSync
) -> Callable[[], AbstractAsyncContextManager[JobQueue]]:
    """Fresh `LocalJobQueue`s opened with ``sync``, each in a new directory under ``data``."""

    @asynccontextmanager
    async def local_queue() -> AsyncIterator[JobQueue]:
        directory = tempfile.mkdtemp(prefix="lanemq-", dir=data)
        queue = LocalJobQueue("bench", directory, sync=sync)
        try:
            yield queue
        finally:
            await queue.close()
            shutil.rmtree(directory, ignore_errors=True)

    return local_queue


async def add_burst_run(
    factory: Callable[[], AbstractAsyncContextManager[JobQueue]], n: int, width: int = 100
) -> Outcome:
    """``n`` adds, ``width`` tasks' adds gathered at a time."""
    async with factory() as queue:
        t0 = time.perf_counter()
        for start in range(0, n, width):
            stop = min(start + width, n)
            await asyncio.gather(*(queue.add("noop", {"i": i}) for i in range(start, stop)))
        elapsed = time.perf_counter() - t0
        counts = await queue.get_job_counts("waiting")
        problems = [] if counts["waiting"] == n else [f"waiting {counts['waiting']} of {n}"]
        return Outcome(n / elapsed, problems)


async def loop_gap_run(
    factory: Callable[[], AbstractAsyncContextManager[JobQueue]], n: int
) -> tuple[float, float]:
    """(largest, 99th percentile) delay in us past a 1 ms sleep of a ticker task, while
    another task of the loop adds ``n`` jobs one awaited add at a time."""
    delays: list[float] = []
    stop = asyncio.Event()

    async def ticker() -> None:
        while not stop.is_set():
            before = time.perf_counter()
            await asyncio.sleep(0.001)
            delays.append((time.perf_counter() - before - 0.001) * 1e6)

    async with factory() as queue:
        ticking = asyncio.create_task(ticker())
        await asyncio.sleep(0.01)  # the ticker runs before the adds start
        for i in range(n):
            await queue.add("noop", {"i": i})
        stop.set()
        await ticking
    delays.sort()
    return delays[-1], delays[int(len(delays) * 0.99) - 1]


def wal_commit_us(data: Path, synchronous: str, commits: int) -> float:
    """Median us of one one-row INSERT + COMMIT on a WAL file with ``synchronous``."""
    directory = tempfile.mkdtemp(prefix="wal-", dir=data)
    try:
        conn = sqlite3.connect(Path(directory) / "probe.db", isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(f"PRAGMA synchronous={synchronous}")
        conn.execute("CREATE TABLE jobs (id INTEGER PRIMARY KEY, data TEXT NOT NULL)")
        took = []
        for i in range(commits):
            t0 = time.perf_counter()
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("INSERT INTO jobs (data) VALUES (?)", (json.dumps({"i": i}),))
            conn.execute("COMMIT")
            took.append(time.perf_counter() - t0)
        conn.close()
        return statistics.median(took) * 1e6
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def fresh_run(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    gc.collect()
    return asyncio.run(make())


# --------------------------------------------------------------------------- report


class Column:
    """One system's values of one row across rounds (jobs/s, or us for the latency rows)."""

    def __init__(self) -> None:
        self.values: list[float] = []
        self.problems: list[str] = []
        self.unavailable: str | None = None

    def add(self, outcome: Outcome | str | float) -> None:
        if isinstance(outcome, str):
            self.unavailable = outcome
        elif isinstance(outcome, Outcome):
            self.values.append(outcome.rate)
            self.problems += outcome.problems
        else:
            self.values.append(outcome)

    @property
    def median(self) -> float | None:
        return statistics.median(self.values) if self.values else None


def shown(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    if unit == "us":
        return f"{value:,.0f} us"
    return f"{value:,.0f}/s ({1e6 / value:,.0f} us)"


def print_table(rows: dict[str, tuple[Column, Column, str]]) -> None:
    print(f"{'row':<34} {'lanemq':>22} {'bunqueue':>22} {'ratio':>7}")
    for name, (ours, theirs, unit) in rows.items():
        a, b = ours.median, theirs.median
        ratio = f"{a / b:.2f}x" if a and b else "-"
        print(f"{name:<34} {shown(a, unit):>22} {shown(b, unit):>22} {ratio:>7}")
    for name, (ours, theirs, _unit) in rows.items():
        for who, column in (("lanemq", ours), ("bunqueue", theirs)):
            if column.problems:
                print(f"  {name} ({who}) problems: {'; '.join(sorted(set(column.problems)))}")
            if column.unavailable and column.values:
                print(f"  {name} ({who}) failed in some rounds: {column.unavailable}")


def verdict(ok: bool | None) -> str:
    return "SKIP" if ok is None else "PASS" if ok else "FAIL"


def print_targets(rows: dict[str, tuple[Column, Column, str]], concurrency: int) -> None:
    print()
    for row, wanted, text in THROUGHPUT_TARGETS:
        ours, theirs, _ = rows[row]
        a, b = ours.median, theirs.median
        ok = None if a is None or b is None else a >= wanted * b
        got = f"{a / b:.2f}x" if a and b else "no figure"
        print(f"{verdict(ok)}  {text}: {got}")
    full, commit = rows["add, 1 awaited (full)"][0].median, rows["WAL commit FULL"][0].median
    ok = None if full is None or commit is None else 1e6 / full <= FULL_OVER_COMMIT * commit
    got = f"{1e6 / full / commit:.2f}x" if full and commit else "no figure"
    print(
        f'{verdict(ok)}  single awaited add, sync="full" <= {FULL_OVER_COMMIT}x one inline '
        f"WAL FULL commit (latency): {got}"
    )
    ours, theirs, _ = rows[f"process@{concurrency}"]
    a, b = ours.median, theirs.median
    ok = None if a is None or b is None else a >= PROCESS_OVER_BUNQUEUE * b
    got = f"{a / b:.2f}x" if a and b else "no figure"
    print(f"{verdict(ok)}  process@{concurrency} >= {PROCESS_OVER_BUNQUEUE:.0f}x bunqueue: {got}")


# --------------------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--single", type=int, default=2000, help="awaited adds per run")
    parser.add_argument("--jobs", type=int, default=20000, help="jobs of add_bulk and process")
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=100)
    parser.add_argument("--commits", type=int, default=500, help="inline WAL commits per row")
    parser.add_argument("--scratch", type=Path, default=Path.home() / ".cache" / "lanemq-bench")
    parser.add_argument("--data", type=Path, help="where the queue files go")
    parser.add_argument("--no-install", action="store_true")
    args = parser.parse_args()
    data: Path = args.data or args.scratch / "data"
    data.mkdir(parents=True, exist_ok=True)
    bun = setup_bun(args.scratch, not args.no_install)

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"lanemq build {build_profile()}, Python {platform.python_version()}, "
        f"{os.cpu_count()} cores, load {load:.1f}; files under {data}"
    )
    print(f"bunqueue: {bun.version if bun.ok else bun.status}")
    print(
        f"rounds {args.rounds}, single {args.single}, jobs {args.jobs}, batch {args.batch}, "
        f"concurrency {args.concurrency}, commits {args.commits}\n"
    )
    process_row = f"process@{args.concurrency}"
    rows: dict[str, tuple[Column, Column, str]] = {
        name: (Column(), Column(), unit)
        for name, unit in [
            ("WAL commit FULL", "us"),
            ("WAL commit NORMAL", "us"),
            ("add, 1 awaited (normal)", "rate"),
            ("add, 1 awaited (full)", "rate"),
            ("add, 1 awaited (bunqueue durable)", "rate"),
            ("add, 100 at once (normal)", "rate"),
            ("add, 100 at once (full)", "rate"),
            ("add_bulk", "rate"),
            (process_row, "rate"),
            ("loop gap max (normal)", "us"),
            ("loop gap p99 (normal)", "us"),
            ("loop gap max (full)", "us"),
            ("loop gap p99 (full)", "us"),
        ]
    }
    unavailable = "" if bun.ok else bun.status

    def peer(spec: dict[str, Any]) -> Outcome | str:
        return run_bunqueue(bun, data, spec) if bun.ok else unavailable

    normal, full = local_factory(data, "normal"), local_factory(data, "full")
    for round_number in range(1, args.rounds + 1):
        print(f"round {round_number}/{args.rounds} ...", flush=True)
        rows["WAL commit FULL"][0].add(wal_commit_us(data, "FULL", args.commits))
        rows["WAL commit NORMAL"][0].add(wal_commit_us(data, "NORMAL", args.commits))
        single = {"n": args.single, "batch": args.batch, "concurrency": args.concurrency}
        bulk = {"n": args.jobs, "batch": args.batch, "concurrency": args.concurrency}
        row = rows["add, 1 awaited (normal)"]
        row[0].add(fresh_run(lambda: add_single_run(normal, args.single)))
        row[1].add(peer({**single, "workload": "add_single"}))
        row = rows["add, 1 awaited (full)"]
        row[0].add(fresh_run(lambda: add_single_run(full, args.single)))
        rows["add, 1 awaited (bunqueue durable)"][1].add(
            peer({**single, "workload": "add_single_durable"})
        )
        row = rows["add_bulk"]
        row[0].add(fresh_run(lambda: add_bulk_run(full, args.jobs, args.batch)))
        row[1].add(peer({**bulk, "workload": "add_bulk"}))
        row = rows[process_row]
        row[0].add(fresh_run(lambda: process_run(full, args.jobs, args.concurrency, args.batch)))
        row[1].add(peer({**bulk, "workload": "process"}))
        for sync, factory in (("normal", normal), ("full", full)):
            burst = fresh_run(lambda: add_burst_run(factory, args.single))  # noqa: B023
            rows[f"add, 100 at once ({sync})"][0].add(burst)
            biggest, p99 = fresh_run(lambda: loop_gap_run(factory, args.single))  # noqa: B023
            rows[f"loop gap max ({sync})"][0].add(biggest)
            rows[f"loop gap p99 ({sync})"][0].add(p99)

    print()
    print_table(rows)
    print_targets(rows, args.concurrency)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
