"""lanemq on Redis vs. BullMQ (Node), BullMQ (Python) and saq: the same workloads, one run.

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
- ``<scratch>/venv``: ``python -m venv`` + ``pip install bullmq saq``.

``--no-install`` uses what is there and installs nothing. A private ``redis-server`` is
started on a free loopback port (``--port N --bind 127.0.0.1 --save "" --appendonly no``, in
a temporary directory) and stopped at the end.

How a measurement runs
----------------------
Workloads run in turn, each for every system before the next workload starts (so the runs
a ratio compares are close in time); ``--rounds N`` does it all N times and keeps, per cell,
the run of median value (for the latency rows, of median p50 and of median p99). Every
(system, workload) pair is one subprocess, started after a ``FLUSHALL`` (sent by the
small RESP client below): ``benches/bullmq_bench.mjs`` under ``node`` for BullMQ (Node), and
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

Output: one table (the ratio columns are lanemq / other; for the latency rows, in ms, a ratio
below 1 means lanemq is faster), the same as JSON (``--json``, default
``benches/results/compare.json``), the target checks (PASS/FAIL, N/A when the reference system
is missing), and the Redis ``INFO commandstats`` of each system's ``process@100`` run (the
statistics are reset just before the worker starts and read right after the last completion):
calls, usec per call and share of the server time per command.

``--profile`` adds runs of ``process@100`` for lanemq and BullMQ (Node), kept out of the table,
with the server's SLOWLOG logging every command (``slowlog-log-slower-than 0``): that breaks
the script calls down per script (lanemq's FCALL names its function, ``lanemq_<hash>_<op>``;
BullMQ's EVALSHA hashes are named from its package). Logging every command slows the server,
so those rates are not comparable with the table's.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _support import RedisServer, Resp, RespError, build_profile, tail, text

HERE = Path(__file__).resolve()
BENCHES = HERE.parent
REPO = BENCHES.parent
NODE_SCRIPT = BENCHES / "bullmq_bench.mjs"
DEFAULT_JSON = BENCHES / "results" / "compare.json"
DEFAULT_SCRATCH = Path("~/.cache/lanemq-bench").expanduser()

SYSTEMS: tuple[str, ...] = ("lanemq", "bullmq-node", "bullmq-python", "saq")
LABELS: dict[str, str] = {
    "lanemq": "lanemq",
    "bullmq-node": "BullMQ Node",
    "bullmq-python": "BullMQ Python",
    "saq": "saq",
}
RATIO_LABELS: dict[str, str] = {
    "bullmq-node": "lanemq/BullMQ-Node",
    "bullmq-python": "lanemq/BullMQ-Python",
    "saq": "lanemq/saq",
}
QUEUE = "bench"
WARMUP = 200
RESULT_PREFIX = "RESULT "


# =========================================================================== runner side
#
# Everything from here to "orchestrator side" runs inside a runner subprocess. Only the standard
# library is imported at module level: the scratch venv has bullmq and saq but not lanemq, and
# the lanemq Python has lanemq but neither of the others.

Hook = Callable[[bool], None]  # called once per finished job: True = completed


class Adapter:
    """One system's queue operations, as the workloads use them."""

    system = "?"
    bulk_note: str | None = None

    def __init__(self, url: str) -> None:
        self.url = url

    def version(self) -> str:
        raise NotImplementedError

    async def open(self, name: str) -> None:
        raise NotImplementedError

    async def add(self, i: int) -> None:
        raise NotImplementedError

    async def add_bulk(self, start: int, stop: int) -> None:
        raise NotImplementedError

    async def start_worker(self, concurrency: int, hook: Hook) -> None:
        """Creates and starts one worker; returns once it runs (in the background)."""
        raise NotImplementedError

    async def stop_worker(self) -> None:
        raise NotImplementedError

    async def counts(self) -> dict[str, int]:
        """Counts of waiting, active, completed, failed (whatever the system can tell)."""
        raise NotImplementedError

    async def close(self) -> None:
        raise NotImplementedError


def _package_version(name: str) -> str:
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "?"


class LanemqAdapter(Adapter):
    """`lanemq.RedisJobQueue` and `lanemq.JobWorker`."""

    system = "lanemq"

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.queue: Any = None
        self.worker: Any = None
        self.task: asyncio.Task[None] | None = None

    def version(self) -> str:
        return f"lanemq {_package_version('lanemq')} ({build_profile()} build), {_python()}"

    async def open(self, name: str) -> None:
        from lanemq import RedisJobQueue

        self.queue = RedisJobQueue(name, self.url, prefix="lanemqbench")

    async def add(self, i: int) -> None:
        await self.queue.add("noop", {"i": i})

    async def add_bulk(self, start: int, stop: int) -> None:
        await self.queue.add_bulk([("noop", {"i": i}) for i in range(start, stop)])

    async def start_worker(self, concurrency: int, hook: Hook) -> None:
        from lanemq import JobWorker

        async def noop(job: Any) -> None:
            return None

        self.worker = worker = JobWorker(self.queue, noop, concurrency=concurrency)
        worker.on("completed", lambda job, result: hook(True))
        worker.on("failed", lambda job, error: hook(False))
        self.task = asyncio.get_running_loop().create_task(worker.run())

    async def stop_worker(self) -> None:
        await self.worker.close()
        if self.task is not None:
            await self.task

    async def counts(self) -> dict[str, int]:
        counts: dict[str, int] = await self.queue.get_job_counts(
            "waiting", "active", "completed", "failed"
        )
        return counts

    async def close(self) -> None:
        await self.queue.close()


class BullmqPythonAdapter(Adapter):
    """`bullmq.Queue` and `bullmq.Worker` (the official Python port)."""

    system = "bullmq-python"

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.queue: Any = None
        self.worker: Any = None
        self.task: asyncio.Task[Any] | None = None
        self.name = QUEUE

    def version(self) -> str:
        return f"bullmq {_package_version('bullmq')}, {_python()}"

    async def open(self, name: str) -> None:
        from bullmq import Queue

        self.name = name
        self.queue = Queue(name, {"connection": self.url})

    async def add(self, i: int) -> None:
        await self.queue.add("noop", {"i": i})

    async def add_bulk(self, start: int, stop: int) -> None:
        await self.queue.addBulk([{"name": "noop", "data": {"i": i}} for i in range(start, stop)])

    async def start_worker(self, concurrency: int, hook: Hook) -> None:
        from bullmq import Worker

        async def noop(job: Any, token: str) -> None:
            return None

        options = {"connection": self.url, "concurrency": concurrency, "autorun": False}
        self.worker = worker = Worker(self.name, noop, options)
        worker.on("completed", lambda job, result: hook(True))
        worker.on("failed", lambda job, error: hook(False))
        self.task = asyncio.get_running_loop().create_task(worker.run())

    async def stop_worker(self) -> None:
        await self.worker.close()
        if self.task is not None:
            await asyncio.gather(self.task, return_exceptions=True)

    async def counts(self) -> dict[str, int]:
        counts: dict[str, int] = await self.queue.getJobCounts(
            "waiting", "active", "completed", "failed"
        )
        return counts

    async def close(self) -> None:
        await self.queue.close()


class SaqAdapter(Adapter):
    """`saq.Queue` (Redis) and `saq.Worker`; completion seen by the ``after_process`` hook."""

    system = "saq"
    bulk_note = "saq has no bulk enqueue: asyncio.gather of enqueue() per batch"

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.queue: Any = None
        self.worker: Any = None
        self.task: asyncio.Task[Any] | None = None
        self.completed = 0
        self.failed = 0

    def version(self) -> str:
        return f"saq {_package_version('saq')}, {_python()}"

    async def open(self, name: str) -> None:
        from saq import Queue

        self.queue = Queue.from_url(self.url, name=name)
        await self.queue.connect()

    async def add(self, i: int) -> None:
        await self.queue.enqueue("noop", i=i)

    async def add_bulk(self, start: int, stop: int) -> None:
        await asyncio.gather(*(self.queue.enqueue("noop", i=i) for i in range(start, stop)))

    async def start_worker(self, concurrency: int, hook: Hook) -> None:
        from saq import Worker
        from saq.job import Status

        async def noop(ctx: Any, **kwargs: Any) -> None:
            return None

        async def after_process(ctx: Any) -> None:  # async: a plain function runs in a thread
            job = ctx.get("job")
            if job is None:
                return
            ok = job.status == Status.COMPLETE
            if ok:
                self.completed += 1
            else:
                self.failed += 1
            hook(ok)

        self.worker = worker = Worker(
            self.queue,
            functions=[("noop", noop)],
            concurrency=concurrency,
            after_process=[after_process],
        )
        self.task = asyncio.get_running_loop().create_task(worker.start())
        await asyncio.sleep(0)

    async def stop_worker(self) -> None:
        await self.worker.stop()
        if self.task is not None:
            await asyncio.gather(self.task, return_exceptions=True)

    async def counts(self) -> dict[str, int]:
        return {
            "waiting": await self.queue.count("queued"),
            "active": await self.queue.count("active"),
            "incomplete": await self.queue.count("incomplete"),
        }

    async def close(self) -> None:
        await self.queue.disconnect()


ADAPTERS: dict[str, type[Adapter]] = {
    "lanemq": LanemqAdapter,
    "bullmq-python": BullmqPythonAdapter,
    "saq": SaqAdapter,
}


def _python() -> str:
    return f"Python {platform.python_version()}"


def expect(actual: dict[str, int], **expected: int) -> list[str]:
    return [
        f"{state}: {actual.get(state)} (expected {want})"
        for state, want in expected.items()
        if state in actual and actual[state] != want
    ]


def expected_after_process(system: str, n: int) -> dict[str, int]:
    if system == "saq":  # saq has no finished counts; incomplete = queued + active + scheduled
        return {"waiting": 0, "active": 0, "incomplete": 0}
    return {"completed": n, "waiting": 0, "active": 0, "failed": 0}


def aggregate_slowlog(entries: Iterable[Any], names: dict[str, str]) -> list[dict[str, Any]]:
    """SLOWLOG entries -> per command (EVALSHA and FCALL per script) calls, usec, usec/call."""
    table: dict[str, dict[str, Any]] = {}
    for entry in entries:
        if not isinstance(entry, list) or len(entry) < 4 or not isinstance(entry[3], list):
            continue
        duration, args = int(entry[2]), [text(a) for a in entry[3]]
        command = args[0].lower() if args else "?"
        if command in ("evalsha", "eval", "evalsha_ro") and len(args) > 1:
            sha = args[1] if command != "eval" else hashlib.sha1(args[1].encode()).hexdigest()
            command = f"{command} {names.get(sha, sha[:12])}"
        elif command in ("fcall", "fcall_ro") and len(args) > 1:
            command = f"{command} {args[1]}"
        slot = table.setdefault(command, {"command": command, "calls": 0, "usec": 0})
        slot["calls"] += 1
        slot["usec"] += duration
    out = sorted(table.values(), key=lambda e: e["usec"], reverse=True)
    for entry in out:
        entry["usec_per_call"] = entry["usec"] / entry["calls"]
    return out


class StatsProbe:
    """Server statistics around the timed part of a process run: CONFIG RESETSTAT and INFO cpu
    before, INFO commandstats and INFO cpu after; with ``slowlog``, every command logged and
    returned (the per-script breakdown)."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.stats = bool(spec.get("stats"))
        self.slowlog = bool(spec.get("slowlog"))
        wanted = self.stats or self.slowlog
        self.client = Resp(spec["host"], spec["port"]) if wanted else None
        self.script_names: dict[str, str] = {}
        if self.slowlog:
            system = spec.get("system")
            if system == "bullmq-python":
                self.script_names = bullmq_python_script_names()

    def start(self) -> None:
        if self.client is None:
            return
        if self.slowlog:
            self.client.call("CONFIG", "SET", "slowlog-log-slower-than", 0)
            self.client.call("CONFIG", "SET", "slowlog-max-len", 1_000_000)
            self.client.call("SLOWLOG", "RESET")
        self.client.call("CONFIG", "RESETSTAT")
        self.cpu_before = text(self.client.call("INFO", "cpu"))

    def stop(self) -> dict[str, Any] | None:
        if self.client is None:
            return None
        out: dict[str, Any] = {
            "cpu_before": self.cpu_before,
            "cpu_after": text(self.client.call("INFO", "cpu")),
            "commandstats": text(self.client.call("INFO", "commandstats")),
        }
        if self.slowlog:
            entries = self.client.call("SLOWLOG", "GET", -1) or []
            self.client.call("CONFIG", "SET", "slowlog-log-slower-than", 10_000)
            self.client.call("CONFIG", "SET", "slowlog-max-len", 128)
            self.client.call("SLOWLOG", "RESET")
            out["slowlog_entries"] = len(entries)
            out["per_command"] = aggregate_slowlog(entries, self.script_names)
        self.client.close()
        self.client = None
        return out


def percentile(sorted_values: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile (the same rule as bullmq_bench.mjs)."""
    if not sorted_values:
        return None
    rank = min(len(sorted_values) - 1, max(0, math.ceil(q * len(sorted_values)) - 1))
    return sorted_values[rank]


async def run_add_single(adapter: Adapter, spec: dict[str, Any]) -> dict[str, Any]:
    n = spec["n"]
    t0 = time.perf_counter()
    for i in range(n):
        await adapter.add(i)
    seconds = time.perf_counter() - t0
    problems = expect(await adapter.counts(), waiting=n, active=0)
    return {"value": n / seconds, "unit": "jobs/s", "seconds": seconds, "problems": problems}


async def run_add_bulk(adapter: Adapter, spec: dict[str, Any]) -> dict[str, Any]:
    n, batch = spec["n"], spec["batch"]
    t0 = time.perf_counter()
    for start in range(0, n, batch):
        await adapter.add_bulk(start, min(start + batch, n))
    seconds = time.perf_counter() - t0
    problems = expect(await adapter.counts(), waiting=n, active=0)
    return {
        "value": n / seconds,
        "unit": "jobs/s",
        "seconds": seconds,
        "problems": problems,
        "note": adapter.bulk_note,
    }


async def run_process(adapter: Adapter, spec: dict[str, Any]) -> dict[str, Any]:
    n, batch, concurrency = spec["n"], spec["batch"], spec["concurrency"]
    for start in range(0, n, batch):
        await adapter.add_bulk(start, min(start + batch, n))
    all_done = asyncio.Event()
    completed = failed = 0
    last_done = 0.0

    def hook(ok: bool) -> None:
        nonlocal completed, failed, last_done
        if ok:
            completed += 1
        else:
            failed += 1
        last_done = time.perf_counter()
        if completed + failed == n:
            all_done.set()

    probe = StatsProbe(spec)
    probe.start()
    t0 = time.perf_counter()
    await adapter.start_worker(concurrency, hook)
    try:
        await asyncio.wait_for(all_done.wait(), spec["timeout_s"])
        finished = True
    except asyncio.TimeoutError:
        finished = False
    seconds = (last_done if finished else time.perf_counter()) - t0
    stats = probe.stop()

    problems: list[str] = []
    if not finished:
        problems.append(f"only {completed} of {n} completed ({failed} failed) in time")
    elif failed:
        problems.append(f"{failed} jobs failed")
    await adapter.stop_worker()
    problems += expect(await adapter.counts(), **expected_after_process(adapter.system, n))
    return {
        "value": completed / seconds,
        "unit": "jobs/s",
        "seconds": seconds,
        "problems": problems,
        "stats": stats,
    }


async def run_latency(adapter: Adapter, spec: dict[str, Any]) -> dict[str, Any]:
    n, gap = spec["n"], spec["gap_ms"] / 1000
    loop = asyncio.get_running_loop()
    pending: asyncio.Future[bool] | None = None
    done_at = 0.0

    def hook(ok: bool) -> None:
        nonlocal done_at
        done_at = time.perf_counter()
        if pending is not None and not pending.done():
            pending.set_result(ok)

    await adapter.start_worker(1, hook)
    await asyncio.sleep(0.5)  # let the worker settle into its idle wait
    samples: list[float] = []
    problems: list[str] = []
    started = time.perf_counter()
    for i in range(n):
        pending = loop.create_future()
        t0 = time.perf_counter()
        await adapter.add(i)
        try:
            ok = await asyncio.wait_for(pending, 10.0)
        except asyncio.TimeoutError:
            problems.append(f"job {i} not completed within 10 s")
            break
        if not ok:
            problems.append(f"job {i} failed")
        samples.append((done_at - t0) * 1000)
        if gap > 0:
            await asyncio.sleep(gap)
    seconds = time.perf_counter() - started
    pending = None
    await adapter.stop_worker()
    samples.sort()
    return {
        "value": percentile(samples, 0.5),
        "unit": "ms",
        "p50": percentile(samples, 0.5),
        "p99": percentile(samples, 0.99),
        "mean": sum(samples) / len(samples) if samples else None,
        "max": samples[-1] if samples else None,
        "samples": len(samples),
        "seconds": seconds,
        "problems": problems,
    }


WORKLOAD_RUNNERS: dict[str, Callable[[Adapter, dict[str, Any]], Awaitable[dict[str, Any]]]] = {
    "add_single": run_add_single,
    "add_bulk": run_add_bulk,
    "process": run_process,
    "latency": run_latency,
}


def bullmq_python_script_names() -> dict[str, str]:
    try:
        import bullmq

        commands = Path(bullmq.__file__).parent / "commands"
        return {
            hashlib.sha1(path.read_bytes()).hexdigest(): path.name
            for path in sorted(commands.glob("*.lua"))
        }
    except (ImportError, OSError):
        return {}


async def runner_main(system: str, spec: dict[str, Any]) -> dict[str, Any]:
    url = f"redis://{spec['host']}:{spec['port']}/0"
    result: dict[str, Any] = {"system": system, "workload": spec["workload"]}
    adapter = ADAPTERS[system](url)
    result["version"] = adapter.version()
    warm = ADAPTERS[system](url)
    await warm.open("warmup")
    for i in range(WARMUP):
        await warm.add(i)
    await warm.add_bulk(0, WARMUP)
    await warm.close()
    await adapter.open(QUEUE)
    try:
        result.update(await WORKLOAD_RUNNERS[spec["workload"]](adapter, spec))
    finally:
        await adapter.close()
    return result


def runner(system: str, spec_text: str) -> int:
    spec = json.loads(spec_text)
    spec["system"] = system
    try:
        result = asyncio.run(runner_main(system, spec))
    except Exception as error:  # reported to the orchestrator, which goes on
        result = {"system": system, "workload": spec.get("workload"), "error": repr(error)}
    sys.stdout.write(RESULT_PREFIX + json.dumps(result) + "\n")
    sys.stdout.flush()
    # saq and bullmq may leave background tasks or threads; the result is out, so stop here.
    os._exit(0)


# =========================================================================== orchestrator side


@dataclass
class Counts:
    single: int
    bulk: int
    batch: int
    process: int
    concurrency: list[int]
    latency: int
    gap_ms: float


@dataclass
class System:
    """A system's availability and how to start its runner."""

    name: str
    status: str = "ok"  # "ok" or "unavailable: <reason>"
    command: list[str] = field(default_factory=list)  # the runner; the spec JSON goes last
    version: str | None = None
    install_log: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def run_command(
    command: Sequence[str], timeout: float, cwd: Path | None = None
) -> tuple[bool, str]:
    """Runs a set-up command; (succeeded, last lines of its output)."""
    try:
        done = subprocess.run(
            list(command),
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
    except FileNotFoundError as error:
        return False, f"{command[0]} not found: {error}"
    except subprocess.TimeoutExpired:
        return False, f"timed out after {timeout:.0f} s"
    output = (done.stdout or "") + (done.stderr or "")
    if done.returncode != 0:
        return False, f"exit {done.returncode}: {tail(output)}"
    return True, tail(output, 1)


def setup_node(scratch: Path, install: bool) -> System:
    system = System("bullmq-node")
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None:
        system.status = "unavailable: node not found on PATH"
        return system
    prefix = scratch / "node"
    modules = prefix / "node_modules"
    have = (modules / "bullmq" / "package.json").is_file() and (
        modules / "ioredis" / "package.json"
    ).is_file()
    if not have:
        if not install:
            system.status = f"unavailable: bullmq/ioredis not in {modules} (--no-install)"
            return system
        if npm is None:
            system.status = "unavailable: npm not found on PATH"
            return system
        prefix.mkdir(parents=True, exist_ok=True)
        print(f"installing BullMQ for Node into {prefix} ...", flush=True)
        npm_install = [npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund"]
        ok, detail = run_command([*npm_install, "bullmq", "ioredis"], timeout=900)
        system.install_log.append(detail)
        if not ok:
            system.status = f"unavailable: npm install failed: {detail}"
            return system
    if not NODE_SCRIPT.is_file():
        system.status = f"unavailable: {NODE_SCRIPT} missing"
        return system
    system.command = [node, str(NODE_SCRIPT), str(prefix)]
    return system


def setup_venv(scratch: Path, install: bool) -> dict[str, System]:
    """The scratch venv with bullmq and saq; one System for each (either may be missing)."""
    systems = {name: System(name) for name in ("bullmq-python", "saq")}
    modules = {"bullmq-python": "bullmq", "saq": "saq"}
    # saq's Redis support is its `redis` extra (redis-py < 8, which bullmq accepts too), and
    # saq imports typing_extensions without declaring it.
    requirements = {"bullmq-python": ["bullmq"], "saq": ["saq[redis]", "typing_extensions"]}
    venv = scratch / "venv"
    python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")

    def importable(module: str) -> bool:
        if not python.is_file():
            return False
        ok, _ = run_command([str(python), "-c", f"import {module}"], timeout=120)
        return ok

    missing = [name for name, module in modules.items() if not importable(module)]
    if missing and install:
        if not python.is_file():
            print(f"creating the scratch virtualenv {venv} ...", flush=True)
            ok, detail = run_command([sys.executable, "-m", "venv", str(venv)], timeout=300)
            if not ok:
                for system in systems.values():
                    system.status = f"unavailable: python -m venv failed: {detail}"
                return systems
        packages = [package for name in missing for package in requirements[name]]
        print(f"installing {' '.join(packages)} into {venv} ...", flush=True)
        pip = [str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q"]
        ok, detail = run_command([*pip, *packages], timeout=900)
        details = dict.fromkeys(missing, detail)
        if not ok:  # one may install where both together do not
            for name in missing:
                details[name] = run_command([*pip, *requirements[name]], timeout=900)[1]
        for name in missing:
            systems[name].install_log.append(details[name])
        missing = [name for name in missing if not importable(modules[name])]
        for name in missing:
            reason = details[name] if details[name] != "(no output)" else "not importable after"
            systems[
                name
            ].status = f"unavailable: pip install {' '.join(requirements[name])}: {reason}"
    elif missing:
        for name in missing:
            systems[name].status = f"unavailable: {modules[name]} not in {venv} (--no-install)"
    for name, system in systems.items():
        if system.ok:
            system.command = [str(python), str(HERE), "--runner", name, "--spec"]
    return systems


def setup_lanemq(python: str) -> System:
    system = System("lanemq")
    ok, detail = run_command([python, "-c", "import lanemq; lanemq.RedisJobQueue"], timeout=120)
    if not ok:
        system.status = f"unavailable: cannot import lanemq with {python}: {detail}"
    else:
        system.command = [python, str(HERE), "--runner", "lanemq", "--spec"]
    return system


@dataclass
class Row:
    """A table row: a workload (and for process, a concurrency); `field` picks the value."""

    key: str
    workload: str
    unit: str
    concurrency: int | None = None
    field: str = "value"


def rows_for(counts: Counts) -> list[Row]:
    rows = [Row("add_single", "add_single", "jobs/s"), Row("add_bulk", "add_bulk", "jobs/s")]
    rows += [Row(f"process@{c}", "process", "jobs/s", c) for c in counts.concurrency]
    rows += [
        Row("latency p50", "latency", "ms", field="p50"),
        Row("latency p99", "latency", "ms", field="p99"),
    ]
    return rows


def workload_spec(
    row_workload: str, concurrency: int | None, counts: Counts, port: int, timeout: float
) -> dict[str, Any]:
    n = {
        "add_single": counts.single,
        "add_bulk": counts.bulk,
        "process": counts.process,
        "latency": counts.latency,
    }[row_workload]
    return {
        "workload": row_workload,
        "host": "127.0.0.1",
        "port": port,
        "n": n,
        "batch": counts.batch,
        "concurrency": concurrency or 1,
        "gap_ms": counts.gap_ms,
        "timeout_s": timeout,
        "stats": row_workload == "process",
        "slowlog": False,
    }


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


# ------------------------------------------------------------------------------ report


def parse_commandstats(raw: str) -> list[dict[str, Any]]:
    """INFO commandstats -> [{command, calls, usec, usec_per_call}], most total time first."""
    out: list[dict[str, Any]] = []
    for line in raw.splitlines():
        if not line.startswith("cmdstat_"):
            continue
        name, _, fields = line.partition(":")
        values = dict(part.split("=", 1) for part in fields.split(",") if "=" in part)
        out.append(
            {
                "command": name.removeprefix("cmdstat_"),
                "calls": int(values.get("calls", 0)),
                "usec": int(values.get("usec", 0)),
                "usec_per_call": float(values.get("usec_per_call", 0)),
            }
        )
    out.sort(key=lambda entry: entry["usec"], reverse=True)
    return out


def format_value(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    return f"{value:,.3f}" if unit == "ms" else f"{value:,.0f}"


def cell(result: dict[str, Any] | None, row: Row, system: System) -> str:
    if not system.ok:
        reason = system.status
        return reason if len(reason) <= 34 else reason[:31] + "..."
    if result is None:
        return "-"
    if result.get("error"):
        return "error"
    value = format_value(result.get(row.field), row.unit)
    return value + ("*" if result.get("problems") else "")


def number(result: dict[str, Any] | None, row: Row) -> float | None:
    if not result or result.get("error"):
        return None
    value = result.get(row.field)
    return float(value) if isinstance(value, (int, float)) else None


def print_table(
    rows: list[Row],
    systems: dict[str, System],
    results: dict[str, dict[str, dict[str, Any]]],
) -> list[dict[str, Any]]:
    header = ["workload", *(LABELS[s] for s in SYSTEMS), *RATIO_LABELS.values()]
    table: list[list[str]] = []
    json_rows: list[dict[str, Any]] = []
    for row in rows:
        own = number(results[row.key].get("lanemq"), row)
        cells = [f"{row.key} ({row.unit})"]
        json_row: dict[str, Any] = {"workload": row.key, "unit": row.unit}
        for name in SYSTEMS:
            result = results[row.key].get(name)
            cells.append(cell(result, row, systems[name]))
            json_row[name] = (
                number(result, row) if systems[name].ok else systems[name].status
            ) or (f"error: {result['error']}" if result and result.get("error") else None)
        for name, label in RATIO_LABELS.items():
            other = number(results[row.key].get(name), row)
            ratio = own / other if own is not None and other else None
            cells.append(f"{ratio:.2f}x" if ratio is not None else "-")
            json_row[label] = ratio
        table.append(cells)
        json_rows.append(json_row)
    widths = [max(len(line[i]) for line in [header, *table]) for i in range(len(header))]

    def joined(cells: list[str]) -> str:
        return " | ".join(
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        )

    print(joined(header))
    print("-" * len(joined(header)))
    for cells in table:
        print(joined(cells))
    return json_rows


@dataclass
class Target:
    text: str
    verdict: str
    detail: str


def ratio_target(
    results: dict[str, dict[str, dict[str, Any]]],
    systems: dict[str, System],
    row: Row,
    other: str,
    factor: float,
) -> Target:
    label = f"{row.key} >= {factor:g}x {LABELS[other]}"
    own = number(results.get(row.key, {}).get("lanemq"), row)
    theirs = number(results.get(row.key, {}).get(other), row)
    if own is None or not theirs:
        missing = "lanemq" if own is None else LABELS[other]
        return Target(label, "N/A", f"no {missing} result")
    ratio = own / theirs
    verdict = "PASS" if ratio >= factor else "FAIL"
    return Target(label, verdict, f"{ratio:.2f}x ({own:,.0f} vs {theirs:,.0f} jobs/s)")


def limit_target(
    results: dict[str, dict[str, dict[str, Any]]], row: Row, limit_ms: float
) -> Target:
    label = f"{row.key} < {limit_ms:g} ms"
    own = number(results.get(row.key, {}).get("lanemq"), row)
    if own is None:
        return Target(label, "N/A", "no lanemq result")
    return Target(label, "PASS" if own < limit_ms else "FAIL", f"{own:.3f} ms")


def targets(
    rows: list[Row], results: dict[str, dict[str, dict[str, Any]]], systems: dict[str, System]
) -> list[Target]:
    by_key = {row.key: row for row in rows}
    top = by_key.get("process@100") or Row("process@100", "process", "jobs/s", 100)
    return [
        ratio_target(results, systems, top, "bullmq-node", 3),
        ratio_target(results, systems, top, "bullmq-python", 10),
        ratio_target(results, systems, by_key["add_bulk"], "bullmq-node", 3),
        ratio_target(results, systems, by_key["add_single"], "bullmq-node", 1.5),
        limit_target(results, by_key["latency p50"], 0.5),
        limit_target(results, by_key["latency p99"], 2.0),
    ]


def server_cpu(stats: dict[str, Any]) -> float | None:
    """Seconds of CPU the server's main thread used between the two INFO cpu snapshots."""

    def parse(raw: str | None) -> float | None:
        values = dict(line.split(":", 1) for line in (raw or "").splitlines() if ":" in line)
        for user, system in (
            ("used_cpu_user_main_thread", "used_cpu_sys_main_thread"),
            ("used_cpu_user", "used_cpu_sys"),
        ):
            if user in values and system in values:
                return float(values[user]) + float(values[system])
        return None

    before, after = parse(stats.get("cpu_before")), parse(stats.get("cpu_after"))
    return after - before if before is not None and after is not None else None


def print_stats(
    title: str,
    per_command: list[dict[str, Any]],
    jobs: int,
    seconds: float | None,
    cpu: float | None,
    limit: int = 14,
) -> None:
    """A per-command table: calls, calls per job, usec per call, usec per job."""
    print(title)
    print(f"  {'command':<36} {'calls':>9} {'per job':>8} {'usec/call':>10} {'usec/job':>9}")
    for entry in per_command[:limit]:
        print(
            f"  {entry['command'][:36]:<36} {entry['calls']:>9,} {entry['calls'] / jobs:>8.3f} "
            f"{entry['usec_per_call']:>10.2f} {entry['usec'] / jobs:>9.2f}"
        )
    if cpu is not None and seconds:
        print(
            f"  server main thread CPU {cpu:.3f} s in {seconds:.3f} s of run "
            f"({cpu / seconds:.0%} busy), {cpu * 1e6 / jobs:.1f} usec per job"
        )


# --------------------------------------------------------------------------------- main


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

    print(f"{platform.platform()}, {os.cpu_count()} CPUs, orchestrator {_python()}")
    print(
        f"counts: single={counts.single} bulk={counts.bulk} (batch {counts.batch}) "
        f"process={counts.process} at {counts.concurrency} latency={counts.latency} "
        f"(gap {counts.gap_ms:g} ms)" + (" [--quick]" if args.quick else "")
    )
    print(f"scratch: {scratch}")

    systems: dict[str, System] = {name: System(name) for name in SYSTEMS}
    install = not args.no_install
    for name in SYSTEMS:
        if name not in wanted:
            systems[name].status = "unavailable: not selected (--systems)"
    if "lanemq" in wanted:
        systems["lanemq"] = setup_lanemq(lanemq_python)
    if "bullmq-node" in wanted:
        systems["bullmq-node"] = setup_node(scratch, install)
    if "bullmq-python" in wanted or "saq" in wanted:
        venv_systems = setup_venv(scratch, install)
        for name, system in venv_systems.items():
            if name in wanted:
                systems[name] = system

    rows = rows_for(counts)
    results: dict[str, dict[str, dict[str, Any]]] = {row.key: {} for row in rows}
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
            run_all(rows, counts, systems, results, redis, args.timeout, args.rounds)
            if args.profile:
                profiles = run_profiles(counts, systems, redis, args.timeout)
    finally:
        if redis is not None:
            redis.cleanup()
    elapsed = time.perf_counter() - started

    print()
    print(f"(measured in {elapsed:.0f} s)")
    for name in SYSTEMS:
        system = systems[name]
        version = system.version or ""
        print(f"  {LABELS[name]:<14} {system.status if not system.ok else version}")
    print()
    json_rows = print_table(rows, systems, results)
    print()
    print(
        "jobs/s (higher is better) or ms (lower is better); ratio = lanemq / other, so for the "
        "latency rows a ratio below 1 means lanemq is faster. * = the run reported problems."
    )
    notes = report_notes(rows, systems, results)
    for note in notes:
        print(f"  {note}")
    print()
    checks = targets(rows, results, systems)
    print("targets:")
    for check in checks:
        print(f"  {check.verdict:<4} {check.text}: {check.detail}")

    stats_report: dict[str, Any] = {}
    top = next((row for row in rows if row.key == "process@100"), None)
    if top is not None:
        for name in SYSTEMS:
            result = results[top.key].get(name) or {}
            stats = result.get("stats")
            if stats and stats.get("commandstats"):
                parsed = parse_commandstats(stats["commandstats"])
                cpu = server_cpu(stats)
                stats_report[name] = {
                    "server_cpu_s": cpu,
                    "seconds": result.get("seconds"),
                    "commands": parsed,
                }
                print()
                print_stats(
                    f"Redis INFO commandstats, {LABELS[name]} process@100 (commands run by "
                    "scripts are listed on their own AND inside evalsha's or fcall's time):",
                    parsed,
                    counts.process,
                    result.get("seconds"),
                    cpu,
                )
    for name, profile in profiles.items():
        print()
        if profile.get("error"):
            print(f"SLOWLOG profile, {LABELS[name]}: error: {profile['error']}")
            continue
        print_stats(
            f"SLOWLOG profile, {LABELS[name]} process@100 ({profile.get('value', 0):,.0f} jobs/s "
            "with every command logged; commands run by scripts are logged too, and counted "
            "inside their script's time):",
            profile["per_command"],
            counts.process,
            profile.get("seconds"),
            None,
        )

    document = {
        "generated": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "redis": redis_version,
        "counts": counts.__dict__,
        "quick": args.quick,
        "systems": {
            name: {"status": s.status, "version": s.version, "install": s.install_log}
            for name, s in systems.items()
        },
        "table": json_rows,
        "notes": notes,
        "targets": [check.__dict__ for check in checks],
        "results": {
            key: {name: strip_raw(result) for name, result in by_system.items()}
            for key, by_system in results.items()
        },
        "commandstats_process_100": stats_report,
        "profile": {
            name: {k: v for k, v in profile.items() if k != "stats"}
            for name, profile in profiles.items()
        },
    }
    try:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(document, indent=2) + "\n")
        print()
        print(f"JSON: {args.json}")
    except OSError as error:
        print(f"could not write {args.json}: {error}")
    return 0


def strip_raw(result: dict[str, Any]) -> dict[str, Any]:
    """A result without the raw server statistics (they are summarised elsewhere)."""
    return {key: value for key, value in result.items() if key != "stats"}


def report_notes(
    rows: list[Row], systems: dict[str, System], results: dict[str, dict[str, dict[str, Any]]]
) -> list[str]:
    notes: list[str] = []
    for name in SYSTEMS:
        if not systems[name].ok and "not selected" not in systems[name].status:
            notes.append(f"{LABELS[name]}: {systems[name].status}")
    seen: set[str] = set()
    for row in rows:
        for name in SYSTEMS:
            result = results[row.key].get(name)
            if not result:
                continue
            note = result.get("note")
            if note and note not in seen:
                seen.add(note)
                notes.append(f"{LABELS[name]} {row.workload}: {note}")
            if result.get("error"):
                notes.append(f"{LABELS[name]} {row.key}: error: {result['error']}")
            for problem in result.get("problems") or []:
                notes.append(f"{LABELS[name]} {row.key}: {problem}")
    return notes


def run_all(
    rows: list[Row],
    counts: Counts,
    systems: dict[str, System],
    results: dict[str, dict[str, dict[str, Any]]],
    redis: RedisServer,
    timeout: float,
    rounds: int = 1,
) -> None:
    """Every workload of every available system, ``rounds`` times. Within a round each
    workload runs for every system in turn before the next workload starts, so the runs a
    ratio compares are minutes apart at most, whatever the machine's speed does over the
    whole run. With several rounds, each (workload, system) keeps the run of median value
    (all values are listed under ``rounds`` in its result)."""
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for round_number in range(1, rounds + 1):
        if rounds > 1:
            print(f"-- round {round_number} of {rounds}", flush=True)
        done: set[str] = set()
        for row in rows:
            run_key = f"{row.workload}@{row.concurrency}"
            if run_key in done:  # latency p50/p99 come from the same run
                continue
            done.add(run_key)
            spec = workload_spec(row.workload, row.concurrency, counts, redis.port, timeout)
            for name in SYSTEMS:
                system = systems[name]
                if not system.ok:
                    continue
                try:
                    result = run_one(system, spec, redis, timeout)
                except Exception as error:  # a report: note it and go on
                    result = {"error": f"{type(error).__name__}: {error}"}
                runs.setdefault(row.key, {}).setdefault(name, []).append(result)
                system.version = system.version or result.get("version")
                print_run(name, row, result)
    for row in rows:
        for name, measured in runs.get(prev_key(rows, row), {}).items():
            results[row.key][name] = median_run(measured, row.field)


def print_run(name: str, row: Row, result: dict[str, Any]) -> None:
    if result.get("error"):
        print(f"{LABELS[name]:<14} {row.key:<12} error: {result['error'][:300]}", flush=True)
        return
    wall = f"({result.get('wall_s', 0):.1f} s)"
    problems = f" problems: {result['problems']}" if result.get("problems") else ""
    if row.unit == "ms":
        p50, p99 = (format_value(result.get(k), "ms") for k in ("p50", "p99"))
        shown = f"p50 {p50} ms, p99 {p99} ms"
    else:
        shown = f"{format_value(result.get('value'), 'jobs/s')} jobs/s"
    print(f"{LABELS[name]:<14} {row.key:<12} {shown} {wall}{problems}", flush=True)


def median_run(measured: list[dict[str, Any]], field: str) -> dict[str, Any]:
    """The run of median ``field`` (a row's value: jobs/s, p50 or p99) among those that gave
    one (an error if none did), with every run's value of it listed under ``rounds``."""
    valued = [r for r in measured if not r.get("error") and r.get(field) is not None]
    if not valued:
        return measured[-1]
    valued.sort(key=lambda r: float(r[field]))
    chosen = dict(valued[(len(valued) - 1) // 2])
    if len(measured) > 1:
        chosen["rounds"] = [r.get(field) for r in measured]
    return chosen


def prev_key(rows: list[Row], row: Row) -> str:
    """The key of the first row measured by the same run as `row`."""
    same = (r for r in rows if r.workload == row.workload and r.concurrency == row.concurrency)
    return next(same).key


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
