"""Lanes shared by processes: `QueueManager(backend=...)` with 1, 2 and 4 worker processes, on
the local backend (one SQLite file) and on Redis, against the in-process manager.

Run it (release build installed, e.g. ``maturin develop --release``)::

    python benches/lanes_distributed.py [--commands 2000] [--backlog 2000] [--probes 200]
        [--probe-gap 2] [--prompt-ms 5] [--processes 1,2,4] [--backends local,redis]
        [--slots 8] [--repeat 3]
    python benches/lanes_distributed.py --quick      # a smoke run: small sizes, one round

It is a report, not a test: it always exits 0, and it has no PASS/FAIL line (no target was
set for these figures yet). A failed check (a result missing or wrong, a worker pool that did
not start or stop cleanly) is listed under "anomalies".

Setups
------
**in-process**: one ``QueueManager(LANES)`` in the bench's own process, which registers the
handlers and submits. **local, P** and **redis, P**: P worker processes started by the bench as
``python -m lanemq lanes worker lanes_distributed:worker_manager --processes P`` (the command's
own supervisor and child entry point; the children build their manager with `worker_manager`,
from the environment the bench sets), and one manager in the bench's process on the same
backend and name that registers nothing and submits: every command runs in a worker process.
Each run has a fresh name (local: under a fresh directory under ``$TMPDIR``; redis: a private
``redis-server`` on a free port, FLUSHALL between runs). Interpreter start-up stays off the
clock: before timing, the bench submits no-op commands until every worker process has run one
(each returns its PID).

Two lanes, both ``max_concurrency=--slots`` (shared by all processes): ``control``
(priority 1) and ``prompt`` (priority 5).

Measurements (each run)
-----------------------
1. **Throughput**: ``--commands`` no-op named commands (``noop``, on ``prompt``) submitted at
   once (``submit_named``, gathered) and their results awaited; the clock runs from the first
   submit to the last result. Checked: every result is a worker's PID.
2. **Latency**: ``--backlog`` ``prompt`` commands (each sleeps ``--prompt-ms``, so that the
   backlog outlasts the probes on every setup: it drains at most ``--slots`` at a time) are
   submitted, then ``--probes`` ``control`` commands, one every ``--probe-gap`` ms, while it
   drains. A probe returns ``time.perf_counter()`` at the first line of its body; its latency is
   that minus the ``perf_counter()`` taken just before its ``submit_named`` (CLOCK_MONOTONIC on
   Linux: one clock for every process of the machine). Reported: p50, p99, max, and how many
   prompt commands had not finished when the last probe was submitted (> 0: the probes really
   ran behind a backlog).

Each setup runs ``--repeat`` times, round by round (the order reversed every other round, so
drift hits every setup). Throughput: best and median run; latency: the run of best p99, and the
median p99. Ratios are against the in-process manager of the same run (benches/README.md).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _support import RedisServer, build_profile
from lanemq import LaneConfig, QueueManager

HERE = Path(__file__).resolve().parent
ENV_BACKEND = "LANEMQ_BENCH_BACKEND"
ENV_NAME = "LANEMQ_BENCH_NAME"
ENV_SLOTS = "LANEMQ_BENCH_SLOTS"
#: Upper bound of one wait (a pool's start, a run's results, a pool's stop); never reached
#: when things work, so a stuck run becomes an anomaly rather than a hang.
WAIT = 120.0
QUICK = {"commands": 300, "backlog": 200, "probes": 20, "repeat": 1}


def lanes(slots: int) -> list[LaneConfig]:
    return [
        LaneConfig("control", priority=1, max_concurrency=slots),
        LaneConfig("prompt", priority=5, max_concurrency=slots),
    ]


async def noop(_: Any) -> int:
    return os.getpid()


async def prompt(payload: dict[str, float]) -> None:
    await asyncio.sleep(payload["ms"] / 1000)


async def probe(_: Any) -> float:
    return time.perf_counter()


def with_handlers(manager: QueueManager) -> QueueManager:
    manager.register("noop", noop)
    manager.register("prompt", prompt)
    manager.register("probe", probe)
    return manager


def worker_manager() -> QueueManager:
    """The factory each worker process calls (``lanemq lanes worker`` imports this module)."""
    return with_handlers(
        QueueManager(
            lanes(int(os.environ[ENV_SLOTS])),
            backend=os.environ[ENV_BACKEND],
            name=os.environ[ENV_NAME],
        )
    )


# --------------------------------------------------------------------------- worker pools


@dataclass(frozen=True)
class Setup:
    backend: str  # "in-process", "local" or "redis"
    processes: int  # worker processes (0: the bench's own)

    @property
    def label(self) -> str:
        return self.backend if not self.processes else f"{self.backend}, {self.processes}"


class Pool:
    """``lanemq lanes worker ... --processes P`` on one backend and name."""

    def __init__(self, url: str, name: str, processes: int, slots: int) -> None:
        env = dict(os.environ, **{ENV_BACKEND: url, ENV_NAME: name, ENV_SLOTS: str(slots)})
        command = [sys.executable, "-m", "lanemq", "lanes", "worker"]
        command += ["lanes_distributed:worker_manager", "--processes", str(processes)]
        self.process = subprocess.Popen(
            [*command, "--log-level", "warning"],
            cwd=HERE,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
        )

    def stop(self) -> str | None:
        """SIGTERM to the supervisor; a problem if it did not exit 0 in time (then killed)."""
        self.process.send_signal(signal.SIGTERM)
        try:
            code = self.process.wait(WAIT)
        except subprocess.TimeoutExpired:
            self.process.kill()  # the supervisor this pool started, by its handle
            self.process.wait()
            return "the worker pool did not stop in time (killed)"
        return None if code == 0 else f"the worker pool exited {code}"


async def warm_up(manager: QueueManager, processes: int) -> set[int]:
    """Submits no-op commands until every worker process ran one; returns their PIDs."""
    seen: set[int] = set()
    deadline = time.monotonic() + WAIT
    while len(seen) < processes:
        if time.monotonic() > deadline:
            raise RuntimeError(f"only {len(seen)} of {processes} worker processes ran a command")
        handles = [await manager.submit_named("prompt", "noop") for _ in range(4 * processes)]
        seen.update(await asyncio.gather(*handles))
    return seen


# --------------------------------------------------------------------------- measurements


@dataclass
class Latency:
    p50: float
    p99: float
    max: float
    backlog_left: int


@dataclass
class Results:
    rates: list[float] = field(default_factory=list)
    latencies: list[Latency] = field(default_factory=list)


def percentile(ordered: Sequence[float], q: float) -> float:
    """Nearest-rank percentile of an ascending sequence."""
    if not ordered:
        return float("nan")
    rank = max(1, min(len(ordered), int(-(-q * len(ordered) // 100))))
    return ordered[rank - 1]


async def throughput(manager: QueueManager, n: int, pids: set[int]) -> tuple[float, str]:
    start = time.perf_counter()
    handles = await asyncio.gather(*(manager.submit_named("prompt", "noop") for _ in range(n)))
    results = await asyncio.gather(*handles)
    rate = n / (time.perf_counter() - start)
    strangers = [r for r in results if r not in pids]
    return rate, f"{len(strangers)} results not from a worker process" if strangers else ""


async def latency(manager: QueueManager, args: argparse.Namespace) -> Latency:
    work = {"ms": args.prompt_ms}
    prompts = await asyncio.gather(
        *(manager.submit_named("prompt", "prompt", work) for _ in range(args.backlog))
    )
    gap = args.probe_gap / 1000
    sent: list[tuple[float, Any]] = []
    for _ in range(args.probes):
        submitted = time.perf_counter()
        sent.append((submitted, await manager.submit_named("control", "probe")))
        await asyncio.sleep(gap)
    backlog_left = sum(1 for handle in prompts if not handle.done())
    waits = sorted([await handle - submitted for submitted, handle in sent])
    await asyncio.gather(*prompts)
    return Latency(percentile(waits, 50), percentile(waits, 99), waits[-1], backlog_left)


async def one_run(
    setup: Setup, url: str | None, name: str, args: argparse.Namespace
) -> tuple[float, Latency]:
    """One run of both measurements on a fresh manager (and worker pool)."""
    if url is None:
        manager = with_handlers(QueueManager(lanes(args.slots)))
        pool = None
    else:
        manager = QueueManager(lanes(args.slots), backend=url, name=name)
        pool = Pool(url, name, setup.processes, args.slots)
    problems: list[str] = []
    try:
        async with manager:
            if pool is None:
                pids = {os.getpid()}
            else:
                pids = await asyncio.wait_for(warm_up(manager, setup.processes), WAIT)
            rate, problem = await asyncio.wait_for(throughput(manager, args.commands, pids), WAIT)
            problems += [problem] if problem else []
            measured = await asyncio.wait_for(latency(manager, args), WAIT)
    finally:
        if pool is not None:
            stopped = pool.stop()
            problems += [stopped] if stopped else []
    if problems:
        raise RuntimeError("; ".join(problems))
    return rate, measured


# --------------------------------------------------------------------------- report


def fmt_ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2f}"


def print_table(setups: list[Setup], results: dict[Setup, Results]) -> None:
    base = results[setups[0]]
    base_best = max(base.rates, default=0.0)
    base_median = statistics.median(base.rates) if base.rates else 0.0
    base_p99 = min((r.p99 for r in base.latencies), default=float("nan"))
    header = (
        f"{'setup':<13} | {'cmd/s best':>10} | {'median':>8} | {'ratio best (median)':>19} | "
        f"{'p50 ms':>7} | {'p99 ms':>7} | {'max ms':>7} | {'p99 med':>7} | "
        f"{'p99 ratio':>9} | {'backlog left':>12}"
    )
    print(header)
    print("-" * len(header))
    for setup in setups:
        done = results[setup]
        if not done.rates:
            print(f"{setup.label:<13} | (no run finished: see the anomalies)")
            continue
        best, median = max(done.rates), statistics.median(done.rates)
        ratios = f"{best / base_best:.3f}x ({median / base_median:.3f}x)" if base_best else "n/a"
        lat = min(done.latencies, key=lambda r: r.p99)
        p99_median = statistics.median(r.p99 for r in done.latencies)
        print(
            f"{setup.label:<13} | {best:>10,.0f} | {median:>8,.0f} | {ratios:>19} | "
            f"{fmt_ms(lat.p50):>7} | {fmt_ms(lat.p99):>7} | {fmt_ms(lat.max):>7} | "
            f"{fmt_ms(p99_median):>7} | {lat.p99 / base_p99:>8.1f}x | {lat.backlog_left:>12}"
        )
    print()
    print("cmd/s: no-op named commands submitted at once, results awaited; ratio = setup /")
    print("in-process. latency: control (priority 1) submit -> start of its body, behind a")
    print("prompt (priority 5) backlog; best run by p99; 'backlog left' > 0: probes ran behind it")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--commands", type=int, default=2_000, help="commands per throughput run")
    parser.add_argument("--backlog", type=int, default=2_000, help="prompt commands queued first")
    parser.add_argument("--probes", type=int, default=200, help="control commands timed")
    parser.add_argument("--probe-gap", type=float, default=2.0, help="ms between two probes")
    parser.add_argument(
        "--prompt-ms", type=float, default=5.0, help="ms each backlog command sleeps"
    )
    parser.add_argument(
        "--processes", default="1,2,4", help="worker process counts, comma-separated"
    )
    parser.add_argument("--backends", default="local,redis", help="local and/or redis")
    parser.add_argument("--slots", type=int, default=8, help="max_concurrency of each lane")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each setup")
    parser.add_argument("--redis-server", default="redis-server", help="redis-server binary")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="a smoke run: " + ", ".join(f"--{k} {v}" for k, v in QUICK.items()),
    )
    args = parser.parse_args(argv)
    if args.quick:
        for key, value in QUICK.items():
            setattr(args, key, value)
    args.processes = [int(p) for p in args.processes.split(",")]
    args.backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    unknown = [b for b in args.backends if b not in ("local", "redis")]
    if unknown or any(p < 1 for p in args.processes):
        parser.error(f"--backends takes local and redis, --processes counts >= 1: {argv}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    print(
        f"Python {platform.python_version()} ({platform.python_implementation()}) on {sys.platform}"
    )
    print(f"CPUs: {os.cpu_count()}; lanemq._core: {build_profile()} build")
    print(
        f"commands={args.commands} backlog={args.backlog} probes={args.probes} "
        f"probe-gap={args.probe_gap}ms prompt-ms={args.prompt_ms} slots={args.slots} "
        f"repeat={args.repeat}"
    )
    anomalies: list[str] = []
    server: RedisServer | None = None
    if "redis" in args.backends:
        server = RedisServer(args.redis_server)
        try:
            server.start()
            print(f"redis-server {server.version} on port {server.port}")
        except (OSError, RuntimeError) as error:
            anomalies.append(f"redis: skipped ({error})")
            args.backends.remove("redis")
            server.cleanup()
            server = None
    directory = tempfile.mkdtemp(prefix="lanemq-bench-lanes-")
    print(f"local stores under: {directory}")
    print()
    setups = [Setup("in-process", 0)] + [
        Setup(backend, processes) for backend in args.backends for processes in args.processes
    ]
    results = {setup: Results() for setup in setups}
    try:
        for round_ in range(args.repeat):
            order = setups if round_ % 2 == 0 else setups[::-1]
            for number, setup in enumerate(order):
                name = f"bench-{round_}-{number}"
                url = {
                    "in-process": None,
                    "local": f"local:{directory}",
                    "redis": server.url if server is not None else None,
                }[setup.backend]
                if server is not None:
                    server.call("FLUSHALL")
                try:
                    rate, measured = asyncio.run(one_run(setup, url, name, args))
                except Exception as error:
                    anomalies.append(f"{setup.label} (round {round_ + 1}): {error!r}")
                    continue
                results[setup].rates.append(rate)
                results[setup].latencies.append(measured)
            print(
                f"round {round_ + 1}: "
                + ", ".join(
                    f"{s.label} {results[s].rates[-1]:,.0f}/s" for s in order if results[s].rates
                )
            )
    finally:
        shutil.rmtree(directory, ignore_errors=True)
        if server is not None:
            server.cleanup()
    print()
    print_table(setups, results)
    if anomalies:
        print()
        print("anomalies:")
        for anomaly in anomalies:
            print(f"  {anomaly}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
