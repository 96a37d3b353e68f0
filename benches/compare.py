"""lanemq on Redis vs. BullMQ (Node), BullMQ (Python), saq, streaq, taskiq and ChasquiMQ: the
same workloads, one run, with issue 32's targets and floors.

Run it (lanemq built in release mode and importable by the Python that runs this file, or
pass ``--lanemq-python``)::

    python benches/compare.py            # full run: a few minutes
    python benches/compare.py --quick    # every count divided by 10
    python benches/compare.py --help     # counts, systems, scratch dir, --profile, ...

It is a report, not a test: it always exits 0, and a system that cannot be installed or run is
shown as ``unavailable: <reason>`` (a single failed run as ``error``) while the rest goes on.

Set-up (nothing goes into the repo or the global environments)
--------------------------------------------------------------
Everything the other systems need is installed, when missing, into a scratch directory
(``--scratch``, default ``~/.cache/lanemq-bench``):

- ``<scratch>/node``: ``npm install --prefix <scratch>/node bullmq ioredis`` (BullMQ 6 made
  its Redis driver an optional peer dependency, so ioredis is named explicitly);
- ``<scratch>/venv``: ``python -m venv`` + ``pip install bullmq saq``; streaq, taskiq
  (+ taskiq-redis) and ChasquiMQ each in a venv of their own (``comparison/install.py``,
  ``VENV_PEERS``: their redis-py pins conflict). These three run a smoke test first; one that
  fails it (ChasquiMQ on Redis < 8.2) is reported unavailable.

``--no-install`` uses what is there and installs nothing. A private ``redis-server`` is
started on a free loopback port (``--port N --bind 127.0.0.1 --save "" --appendonly no``, in
a temporary directory) and stopped at the end.

How a measurement runs
----------------------
Workloads run in turn, each for every system before the next workload starts (so the runs
a ratio compares are close in time); ``--rounds N`` does it all N times and keeps, per cell,
the run of median value (for the latency rows, of median p50 and of median p99). Every
(system, workload) pair is one subprocess, started after a ``FLUSHALL`` (sent by the
RESP client of ``_support.py``): ``benches/bullmq_bench.mjs`` under ``node`` for BullMQ (Node), and
this very file in runner mode (``--runner SYSTEM --spec JSON``) for the Python systems: with
the scratch venv's Python for BullMQ (Python) and saq, with ``--lanemq-python`` (default: the
Python running this file) for lanemq. A runner first adds 200 jobs one by one and 200 in one
bulk call to a ``warmup`` queue (untimed: loads scripts, opens connections, warms the JIT),
then runs its workload on the queue ``bench`` and prints ``RESULT {json}``. Every system uses
its default queue and worker options (completed jobs are kept, as BullMQ and lanemq do by
default; saq keeps them for its default ttl), job name ``noop``, data ``{"i": i}``, and a
processor that returns None at once.

Workloads (``--quick`` divides every count by 10):

- ``add_single`` (``--single``, 10,000): jobs added one at a time, each awaited; jobs/s.
- ``add_bulk`` (``--bulk``, 50,000): in batches of ``--batch`` (1,000) with the system's bulk
  call (lanemq ``add_bulk``, BullMQ ``addBulk``). saq has no bulk enqueue: each batch is an
  ``asyncio.gather`` of ``enqueue`` calls (saq itself keeps at most ``max_concurrent_ops``,
  20, in flight); the table notes it.
- ``process@C`` (``--process``, 20,000; ``--concurrency`` 1,10,100): the queue is filled with
  the bulk call (untimed), then one worker with concurrency C starts; the clock runs from
  starting the worker until the completion hook (lanemq ``worker.on("completed")``, BullMQ's
  ``completed`` event, saq's ``after_process``) has fired N times, taking the time of the last
  hook call. BullMQ's Node worker is made with ``autorun: false`` and ``waitUntilReady()``
  first (its connections open before the clock, as lanemq's queue connection is). Checked
  afterwards: N completed, nothing waiting/active/failed.
- ``latency`` (``--latency``, 1,000): a worker (concurrency 1) is started and left idle for
  0.5 s; then, one job at a time, the time from just before the awaited add to the worker's
  completion hook (its own timestamp), then a pause of ``--gap`` ms (default 2) so the worker
  is idle again before the next add. p50 and p99 in ms.

- ``memory/job`` (``--memory``, 100,000; first round only): INFO memory used_memory before
  and after that many bulk-added no-op jobs, per job.
- ``backlog`` (lanemq and BullMQ Node; ``--backlog`` 500,000 and ``--backlog-small`` 10,000):
  a worker at concurrency 100 timed over ``--backlog-take`` (10,000) jobs from the head.
- ``round trip`` and ``memory backend@100`` (lanemq's runner): the floors' measurements
  (``comparison/floors.py``; benches/jobs.py's process phase on ``InMemoryJobQueue``).

The peers other than BullMQ Node run 1/``--peer-scale`` (4) of the add and process jobs.
benches/README.md says what each row, floor and target means.

Output: a table of values and one of ratios (lanemq / other; for the latency and memory rows
a ratio below 1 means lanemq is better), the floors, the same as JSON (``--json``, default
``benches/results/compare.json``), the target checks (PASS/FAIL, N/A when the reference system
is missing), and the Redis ``INFO commandstats`` of each system's ``process@100`` run (the
statistics are reset just before the worker starts and read right after the last completion):
calls, usec per call and share of the server time per command.

``--profile`` adds runs of ``process@100`` for lanemq and BullMQ (Node), kept out of the table,
with the server's SLOWLOG logging every command (``slowlog-log-slower-than 0``): that breaks
the script calls down per script (lanemq's FCALL names its function, ``lanemq_<hash>_<op>``;
BullMQ's EVALSHA hashes are named from its package). Logging every command slows the server,
so those rates are not comparable with the table's.

This file is the command line, the set-up and the rounds; the runner side, the adapters, the
server statistics and the report are modules of ``benches/comparison/`` (its ``__init__``
says which holds what).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from _support import RedisServer, RespError, tail
from comparison.adapter import python_label
from comparison.install import VENV_PEERS, System, setup_lanemq, setup_node, setup_venv
from comparison.report import (
    Results,
    format_value,
    json_document,
    median_run,
    print_report,
    print_run,
)
from comparison.runner import ADAPTERS, runner
from comparison.specs import (
    LABELS,
    RESULT_PREFIX,
    SCALED_PEERS,
    SCALED_WORKLOADS,
    SYSTEMS,
    Counts,
    Row,
    rows_for,
    scaled_for,
    workload_spec,
)
from comparison.targets import script_commands_in

SMOKE_TESTED = ("streaq", "taskiq", "chasquimq")
# What a peer needs of the server, said with its smoke test's failure.
SERVER_NEEDS = {
    "chasquimq": "ChasquiMQ needs a newer Redis (it acks with XACKDEL, Redis 8.2+; its own "
    "tests ask for 8.6+)",
}
HERE = Path(__file__).resolve()
BENCHES = HERE.parent
REPO = BENCHES.parent
DEFAULT_JSON = BENCHES / "results" / "compare.json"
DEFAULT_SCRATCH = Path("~/.cache/lanemq-bench").expanduser()


def positive_int(value: str) -> int:
    number_ = int(value.replace("_", ""))
    if number_ < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {number_}")
    return number_


def concurrency_list(value: str) -> list[int]:
    return [positive_int(part) for part in value.split(",") if part.strip()]


def default_lanemq_python() -> str:
    import importlib.util

    if importlib.util.find_spec("lanemq") is not None:
        return sys.executable
    venv = Path("/work/venv/bin/python")
    return str(venv) if venv.is_file() else sys.executable


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=(__doc__ or "").split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--quick", action="store_true", help="divide every count by 10")
    parser.add_argument("--single", type=positive_int, default=10_000, help="add_single jobs")
    parser.add_argument("--bulk", type=positive_int, default=50_000, help="add_bulk jobs")
    parser.add_argument("--batch", type=positive_int, default=1_000, help="jobs per bulk call")
    parser.add_argument("--process", type=positive_int, default=20_000, help="process jobs")
    parser.add_argument(
        "--concurrency", type=concurrency_list, default=[1, 10, 100], help="process levels"
    )
    parser.add_argument("--latency", type=positive_int, default=1_000, help="latency jobs")
    parser.add_argument("--gap", type=float, default=2.0, help="ms idle between latency jobs")
    parser.add_argument(
        "--memory", type=positive_int, default=100_000, help="jobs bulk-added for memory/job"
    )
    parser.add_argument(
        "--backlog", type=positive_int, default=500_000, help="the deep backlog's jobs"
    )
    parser.add_argument(
        "--backlog-small", type=positive_int, default=10_000, help="the shallow backlog's jobs"
    )
    parser.add_argument(
        "--backlog-take",
        type=positive_int,
        default=10_000,
        help="jobs completed from the head of each backlog (at most --backlog-small)",
    )
    parser.add_argument(
        "--peer-scale",
        type=positive_int,
        default=4,
        help="the peers other than BullMQ Node run 1/N of the add and process jobs",
    )
    parser.add_argument(
        "--rtt-calls", type=positive_int, default=5_000, help="PINGs of the round-trip floor"
    )
    parser.add_argument(
        "--systems", default=",".join(SYSTEMS), help=f"subset of {','.join(SYSTEMS)}"
    )
    parser.add_argument("--scratch", type=Path, default=DEFAULT_SCRATCH, help="install dir")
    parser.add_argument("--no-install", action="store_true", help="install nothing")
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON, help="JSON output")
    parser.add_argument("--redis-server", default="redis-server", help="redis-server binary")
    parser.add_argument(
        "--lanemq-python", default=None, help="Python with lanemq (default: this one, if it has it)"
    )
    parser.add_argument("--timeout", type=float, default=300.0, help="s per run's wait")
    parser.add_argument(
        "--rounds",
        type=positive_int,
        default=1,
        help="measure everything this many times; each cell is the median run",
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="extra process@100 runs with SLOWLOG on every command (per-script usec)",
    )
    parser.add_argument("--runner", choices=sorted(ADAPTERS), help=argparse.SUPPRESS)
    parser.add_argument("--spec", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.runner:
        return runner(args.runner, args.spec or "{}")
    try:
        return orchestrate(args)
    except KeyboardInterrupt:
        print("interrupted")
        return 0


def orchestrate(args: argparse.Namespace) -> int:
    scale = 10 if args.quick else 1
    counts = Counts(
        single=max(1, args.single // scale),
        bulk=max(1, args.bulk // scale),
        batch=args.batch,
        process=max(1, args.process // scale),
        concurrency=args.concurrency,
        latency=max(1, args.latency // scale),
        gap_ms=args.gap,
        memory=max(1, args.memory // scale),
        backlog=max(1, args.backlog // scale),
        backlog_small=max(1, args.backlog_small // scale),
        backlog_take=max(1, min(args.backlog_take, args.backlog_small) // scale),
        rtt_calls=max(100, args.rtt_calls // scale),
    )
    wanted = [s.strip() for s in args.systems.split(",") if s.strip()]
    unknown = [s for s in wanted if s not in SYSTEMS]
    if unknown:
        print(f"unknown systems ignored: {', '.join(unknown)}")
    scratch: Path = args.scratch.expanduser().resolve()
    if scratch == REPO or REPO in scratch.parents:
        print(f"--scratch {scratch} is inside the repo; using {DEFAULT_SCRATCH}")
        scratch = DEFAULT_SCRATCH
    scratch.mkdir(parents=True, exist_ok=True)
    lanemq_python = args.lanemq_python or default_lanemq_python()

    print(f"{platform.platform()}, {os.cpu_count()} CPUs, orchestrator {python_label()}")
    print(
        f"counts: single={counts.single} bulk={counts.bulk} (batch {counts.batch}) "
        f"process={counts.process} at {counts.concurrency} latency={counts.latency} "
        f"(gap {counts.gap_ms:g} ms) memory={counts.memory} backlog={counts.backlog_take} of "
        f"{counts.backlog_small} and of {counts.backlog}" + (" [--quick]" if args.quick else "")
    )
    if args.peer_scale > 1:
        peers = ", ".join(LABELS[name] for name in SCALED_PEERS)
        print(
            f"{peers}: 1/{args.peer_scale} of the jobs of {', '.join(SCALED_WORKLOADS)} "
            "(--peer-scale)"
        )
    print(f"scratch: {scratch}")

    systems: dict[str, System] = {name: System(name) for name in SYSTEMS}
    install = not args.no_install
    for name in SYSTEMS:
        if name not in wanted:
            systems[name].status = "unavailable: not selected (--systems)"
    if "lanemq" in wanted:
        systems["lanemq"] = setup_lanemq(lanemq_python, HERE)
    if "bullmq-node" in wanted:
        systems["bullmq-node"] = setup_node(scratch, install)
    venv_wanted = [name for name in VENV_PEERS if name in wanted]
    if venv_wanted:
        systems.update(setup_venv(scratch, install, HERE, venv_wanted))

    rows = rows_for(counts)
    results: Results = {row.key: {} for row in rows}
    profiles: dict[str, dict[str, Any]] = {}
    redis_version = "?"
    redis_binary = shutil.which(args.redis_server)
    redis: RedisServer | None = None
    started = time.perf_counter()
    try:
        if redis_binary is None:
            for system in systems.values():
                if system.ok:
                    system.status = f"unavailable: {args.redis_server} not found"
        else:
            redis = RedisServer(redis_binary)
            try:
                redis.start()
                redis_version = redis.version
                print(f"redis-server {redis_version} on 127.0.0.1:{redis.port}")
            except (RuntimeError, OSError) as error:
                for system in systems.values():
                    if system.ok:
                        system.status = f"unavailable: {error}"
                redis.cleanup()
                redis = None
        print()
        if redis is not None:
            smoke_test(systems, redis, args.timeout)
            run_all(
                rows, counts, systems, results, redis, args.timeout, args.rounds, args.peer_scale
            )
            if args.profile:
                profiles = run_profiles(counts, systems, redis, args.timeout)
    finally:
        if redis is not None:
            redis.cleanup()
    elapsed = time.perf_counter() - started

    inside_scripts = script_commands_in(REPO / "lua") if (REPO / "lua").is_dir() else frozenset()
    summary = print_report(rows, counts, systems, results, profiles, elapsed, inside_scripts)
    document = json_document(summary, counts, args.quick, redis_version, systems, results, profiles)
    try:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(document, indent=2) + "\n")
        print()
        print(f"JSON: {args.json}")
    except OSError as error:
        print(f"could not write {args.json}: {error}")
    return 0


def run_one(
    system: System, spec: dict[str, Any], redis: RedisServer, timeout: float
) -> dict[str, Any]:
    """FLUSHALL, then one runner subprocess; its result, or {"error": ...}."""
    try:
        redis.call("FLUSHALL")
    except (OSError, RespError) as error:
        return {"error": f"FLUSHALL failed: {error}"}
    command = [*system.command, json.dumps(spec)]
    started = time.perf_counter()
    try:
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=timeout + 120,
            stdin=subprocess.DEVNULL,
            cwd=BENCHES,
        )
    except subprocess.TimeoutExpired as expired:
        return {"error": f"runner killed after {timeout + 120:.0f} s: {tail(expired.stderr)}"}
    wall = time.perf_counter() - started
    for line in reversed((done.stdout or "").splitlines()):
        if line.startswith(RESULT_PREFIX):
            try:
                result: dict[str, Any] = json.loads(line[len(RESULT_PREFIX) :])
            except ValueError as error:
                return {"error": f"unreadable result ({error}): {line[:200]}"}
            result["wall_s"] = wall
            if result.get("error"):
                result["error"] = f"{result['error']} ({tail(done.stderr, 2)})"
            return result
    detail = tail(done.stderr or done.stdout)
    return {"error": f"runner exit {done.returncode}, no result: {detail}"}


def run_all(
    rows: list[Row],
    counts: Counts,
    systems: dict[str, System],
    results: Results,
    redis: RedisServer,
    timeout: float,
    rounds: int = 1,
    peer_scale: int = 1,
) -> None:
    """Every workload of every available system, ``rounds`` times. Within a round each
    workload runs for every system in turn before the next workload starts, so the runs a
    ratio compares are minutes apart at most, whatever the machine's speed does over the
    whole run. With several rounds, each (workload, system) keeps the run of median value
    (all values are listed under ``rounds`` in its result). A row marked ``once`` (the
    memory per job: a size, not a timing) is measured in the first round only."""
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for round_number in range(1, rounds + 1):
        if rounds > 1:
            print(f"-- round {round_number} of {rounds}", flush=True)
        done: set[str] = set()
        for row in rows:
            if row.run_key in done:  # latency p50/p99 come from the same run
                continue
            done.add(row.run_key)
            if row.once and round_number > 1:
                continue
            spec = workload_spec(
                row.workload, row.concurrency, counts, redis.port, timeout, row.fill
            )
            for name in SYSTEMS:
                system = systems[name]
                if not system.ok or not row.runs_on(name):
                    continue
                if name in row.first_round_only and round_number > 1:
                    continue
                try:
                    result = run_one(system, scaled_for(spec, name, peer_scale), redis, timeout)
                except Exception as error:  # a report: note it and go on
                    result = {"error": f"{type(error).__name__}: {error}"}
                runs.setdefault(row.run_key, {}).setdefault(name, []).append(result)
                system.version = system.version or result.get("version")
                print_run(name, row, result)
    for row in rows:
        for name, measured in runs.get(row.run_key, {}).items():
            results[row.key][name] = median_run(measured, row.field)


def smoke_test(systems: dict[str, System], redis: RedisServer, timeout: float) -> None:
    """The newer peers run a tiny add-and-process first: one that cannot run on this server
    (ChasquiMQ needs Redis 8.2's XACKDEL) is reported unavailable instead of failing every
    row."""
    for name in SMOKE_TESTED:
        system = systems[name]
        if not system.ok:
            continue
        spec = {
            "workload": "smoke",
            "host": "127.0.0.1",
            "port": redis.port,
            "n": 6,
            "batch": 3,
            "concurrency": 2,
            "timeout_s": 20.0,
            "stats": False,
            "slowlog": False,
        }
        result = run_one(system, spec, redis, min(timeout, 60.0))
        system.version = system.version or result.get("version")
        if result.get("error"):
            needs = SERVER_NEEDS.get(name)
            server = f"on Redis {redis.version}"
            reason = f"{needs}; {server}: {result['error']}" if needs else result["error"]
            system.status = f"unavailable: {reason}"
            print(f"{LABELS[name]:<14} smoke test failed: {result['error'][:300]}", flush=True)


def run_profiles(
    counts: Counts, systems: dict[str, System], redis: RedisServer, timeout: float
) -> dict[str, dict[str, Any]]:
    """process@100 with SLOWLOG on every command, for lanemq and BullMQ (Node)."""
    out: dict[str, dict[str, Any]] = {}
    for name in ("lanemq", "bullmq-node"):
        system = systems[name]
        if not system.ok:
            continue
        spec = workload_spec("process", 100, counts, redis.port, timeout)
        spec["stats"] = False
        spec["slowlog"] = True
        try:
            result = run_one(system, spec, redis, timeout)
        except Exception as error:  # a report: note it and go on
            result = {"error": f"{type(error).__name__}: {error}"}
        stats = result.get("stats") or {}
        if not result.get("error"):
            result["per_command"] = stats.get("per_command") or []
            print(
                f"{LABELS[name]:<14} profile      {format_value(result.get('value'), 'jobs/s')} "
                f"jobs/s with SLOWLOG on ({stats.get('slowlog_entries')} entries)",
                flush=True,
            )
        out[name] = result
    return out


if __name__ == "__main__":
    sys.exit(main())
