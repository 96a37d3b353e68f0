"""Job queue benchmark: adding and processing no-op jobs, against a plain-asyncio task floor.

Run it (the package must be built in release mode and installed, e.g. with `pip install .`
or `maturin develop --release`)::

    python benches/jobs.py --backend memory|local [--jobs 100000] [--concurrency 100] [--repeat 3]
                                                  [--batch 1000] [--single 10000]
                                                  [--tracing off|idle|sdk] [--sync full|normal]

It is a report, not a test: it always exits 0.

Phases
------
Every measured run gets a fresh event loop (``asyncio.run``) and a fresh queue from the backend
factory, after a ``gc.collect()``; the collector stays enabled while the clock runs. Each phase
runs ``--repeat`` times and reports the best and the median rate.

1. ``add_bulk``: ``--jobs`` jobs ``("noop", {"i": i})`` added with ``queue.add_bulk`` in batches
   of ``--batch``. The clock covers building each batch list and the awaited calls. Checked
   afterwards: ``get_job_counts`` shows N waiting.
2. ``add``: ``--single`` jobs added one ``await queue.add("noop", {"i": i})`` at a time.
   Checked afterwards: N waiting.
3. ``process``: the queue is filled with ``--jobs`` jobs (``add_bulk``, untimed), then one
   ``JobWorker(queue, noop, concurrency=C)`` runs, ``noop`` being ``async def noop(job): return
   None``. The clock runs from creating the ``worker.run()`` task until the worker's
   ``completed`` hook has been called N times (the hook counts and sets an ``asyncio.Event``
   that the benchmark awaits: no polling). The hook fires after ``complete_many`` has recorded
   the job, so the time covers claim, ``Job`` creation, one task per job, the done callback,
   the batched ``complete_many`` and the per-job hook dispatch. ``worker.close()`` runs after
   the clock stops. Checked afterwards: N completed, 0 waiting, 0 active, 0 failed, and
   ``worker.processed == N``.
4. ``asyncio floor``: plain asyncio, no lanemq: ``loop.create_task`` of a trivial coroutine N
   times, each task with a done callback that counts down and resolves a future at zero; the
   clock runs from the first ``create_task`` until that future is awaited. This is the cost of
   "one asyncio task per job" alone, the floor the issue refers to, and the reference of the
   ratio column.
5. ``floor, C live``: the same, but at most ``--concurrency`` tasks exist at once (each done
   callback creates the next task), as in the worker. With N = 100,000 this is markedly faster
   than creating all N tasks at once, whose cost is dominated by the garbage collector walking
   100,000 live tasks (with ``gc`` disabled the two come close). So it is the tighter floor for
   the ``process`` phase: a worker that runs every job as its own task cannot beat it. Its
   ratio to ``process`` is printed under the table.
6. ``add 1p full``, ``add 1p normal`` (``local`` only): phase 2 on a queue opened with
   ``sync="full"`` and with ``sync="normal"`` (whatever ``--sync`` says), one producer
   awaiting each add: the cost of a sync per commit, where group commit cannot help. Both run
   in every round, so their ratio is measured in one run; the check is
   ``normal one-producer awaited add >= 5x full`` on the best runs.

The table shows each phase's best and median jobs/s and its ratio to ``asyncio floor`` (best
over best, median over median in parentheses). The target checks (``TARGETS``, per backend) are
made on the best run of each phase: ``process >= 100,000 jobs/s`` for ``memory``;
``add_bulk >= 50,000 jobs/s`` and ``process >= 10,000 jobs/s`` for ``local``. The ratio checks
(``RATIO_TARGETS``) compare two phases of the same run, best over best, which the machine's
load moves far less than the rates: ``process >= 0.6x 'floor, C live'`` for ``memory``
(issue 18: the worker's own cost at most two thirds of a task's per job).

Tracing
-------
``--tracing`` chooses what OpenTelemetry (`lanemq.otel`) costs in every phase:

- ``off`` (the default): OpenTelemetry is not imported; lanemq's switch is off.
- ``idle``: ``opentelemetry.trace`` is imported and no provider is set (what FastAPI alone
  brings): automatic activation finds no provider, so the switch stays off; this must cost
  what ``off`` costs.
- ``sdk``: ``lanemq.otel.instrument`` with an SDK tracer provider whose
  ``BatchSpanProcessor`` feeds an exporter that drops everything, and an SDK meter provider
  with an in-memory reader: the full cost of the spans (send, create, process, settle), the
  context injected into every job and extracted by the worker, and the metrics, short of
  exporting. The processor's queue drops spans it cannot take (as in production), which does
  not change the cost of making them.

Backends
--------
``--backend`` picks a factory from ``BACKENDS`` (given ``--sync``): an async context manager
that yields a fresh, empty queue and cleans it up on exit.

- ``memory``: ``InMemoryJobQueue``; nothing to clean up.
- ``local``: ``LocalJobQueue`` (SQLite, WAL; ``--sync full``, the default: every acknowledged
  call is on disk; ``--sync normal``: on disk by the next checkpoint) in a fresh
  ``tempfile.mkdtemp`` directory (so under ``$TMPDIR``, ``/tmp`` by default: point it at
  the disk you want measured; on a tmpfs the syncs cost nothing), removed on exit. The queue
  has no ``close()``: its file is closed when the last reference goes (at the latest at the
  ``gc.collect()`` before the next run). Removing the directory before that is fine on POSIX
  (the open file is freed at close, and SQLite skips the closing checkpoint of a file that was
  unlinked); elsewhere a directory that cannot be removed yet is left behind.

A ``redis`` backend (a queue under a unique key prefix, obliterated on exit) would plug in the
same way.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import gc
import itertools
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, TypeVar

from _support import build_profile
from lanemq import InMemoryJobQueue, Job, JobQueue, JobWorker, LocalJobQueue
from lanemq.queue import LocalSync

T = TypeVar("T")
QueueFactory = Callable[[], AbstractAsyncContextManager[JobQueue]]

# Per backend: phase -> the jobs/s its best run must reach.
TARGETS: dict[str, dict[str, int]] = {
    "memory": {"process": 100_000},
    "local": {"add_bulk": 50_000, "process": 10_000},
}
# Per backend: (phase, reference phase) -> the ratio of their best runs the phase must reach.
RATIO_TARGETS: dict[str, dict[tuple[str, str], float]] = {
    "memory": {("process", "floor, C live"): 0.6},
}
_queue_names = itertools.count(1)


# --------------------------------------------------------------------------- backends


@asynccontextmanager
async def memory_queue() -> AsyncIterator[JobQueue]:
    """A fresh `InMemoryJobQueue` with the default settings; nothing to clean up."""
    yield InMemoryJobQueue(f"bench-{next(_queue_names)}")


def local_factory(sync: LocalSync) -> QueueFactory:
    """Fresh `LocalJobQueue`s opened with ``sync``, each in a new temporary directory, removed
    on exit. The queue is not closed: its SQLite file closes when the last reference goes (see
    the module docstring on removing it while still open)."""

    @asynccontextmanager
    async def local_queue() -> AsyncIterator[JobQueue]:
        directory = tempfile.mkdtemp(prefix="lanemq-bench-")
        try:
            yield LocalJobQueue(f"bench-{next(_queue_names)}", directory, sync=sync)
        finally:
            shutil.rmtree(directory, ignore_errors=True)

    return local_queue


BACKENDS: dict[str, Callable[[LocalSync], QueueFactory]] = {
    "memory": lambda _sync: memory_queue,
    "local": local_factory,
    # "redis": a RedisJobQueue under a unique prefix, obliterated (force=True) on exit.
}
#: ``add 1p normal`` over ``add 1p full`` (best runs) that the local backend must reach.
NORMAL_OVER_FULL = 5.0


# --------------------------------------------------------------------------- phases


class Outcome:
    """One timed run: the rate and any problems the after-run checks found."""

    __slots__ = ("problems", "rate")

    def __init__(self, rate: float, problems: list[str] | None = None) -> None:
        self.rate = rate
        self.problems = problems or []


def payloads(start: int, stop: int) -> list[tuple[str, dict[str, int]]]:
    return [("noop", {"i": i}) for i in range(start, stop)]


async def expect_counts(queue: JobQueue, **expected: int) -> list[str]:
    counts = await queue.get_job_counts(*expected)
    return [
        f"{state}: {counts.get(state)} (expected {want})"
        for state, want in expected.items()
        if counts.get(state) != want
    ]


async def fill(queue: JobQueue, n: int, batch: int) -> None:
    for start in range(0, n, batch):
        await queue.add_bulk(payloads(start, min(start + batch, n)))


async def add_bulk_run(factory: QueueFactory, n: int, batch: int) -> Outcome:
    async with factory() as queue:
        t0 = time.perf_counter()
        for start in range(0, n, batch):
            await queue.add_bulk(payloads(start, min(start + batch, n)))
        elapsed = time.perf_counter() - t0
        return Outcome(n / elapsed, await expect_counts(queue, waiting=n, active=0))


async def add_single_run(factory: QueueFactory, n: int) -> Outcome:
    async with factory() as queue:
        t0 = time.perf_counter()
        for i in range(n):
            await queue.add("noop", {"i": i})
        elapsed = time.perf_counter() - t0
        return Outcome(n / elapsed, await expect_counts(queue, waiting=n, active=0))


async def noop(job: Job) -> None:
    return None


async def process_run(factory: QueueFactory, n: int, concurrency: int, batch: int) -> Outcome:
    async with factory() as queue:
        await fill(queue, n, batch)
        gc.collect()
        worker = JobWorker(queue, noop, concurrency=concurrency)
        all_done = asyncio.Event()
        completed = failed = 0

        def on_completed(job: Job, result: Any) -> None:
            nonlocal completed
            completed += 1
            if completed + failed == n:
                all_done.set()

        def on_failed(job: Job, error: BaseException) -> None:  # not expected: stop early
            nonlocal failed
            failed += 1
            if completed + failed == n:
                all_done.set()

        worker.on("completed", on_completed)
        worker.on("failed", on_failed)
        loop = asyncio.get_running_loop()
        timeout = max(60.0, n / 2_000)  # a stuck worker must not hang the benchmark

        t0 = time.perf_counter()
        runner = loop.create_task(worker.run())
        waiter = loop.create_task(all_done.wait())
        await asyncio.wait({runner, waiter}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        elapsed = time.perf_counter() - t0

        problems: list[str] = []
        if completed != n:
            problems.append(
                f"only {completed} of {n} jobs completed, {failed} failed attempts"
                + ("" if all_done.is_set() else f", stopped after {elapsed:.0f} s")
            )
        waiter.cancel()
        await worker.close()
        await asyncio.gather(runner, waiter, return_exceptions=True)
        if runner.done() and not runner.cancelled() and runner.exception() is not None:
            problems.append(f"worker.run() raised {runner.exception()!r}")
        problems += await expect_counts(queue, completed=n, waiting=0, active=0, failed=0)
        if worker.processed != n or worker.failed:
            problems.append(f"worker.processed={worker.processed} worker.failed={worker.failed}")
        return Outcome(completed / elapsed, problems)


async def trivial() -> None:
    return None


async def floor_run(n: int) -> Outcome:
    loop = asyncio.get_running_loop()
    finished: asyncio.Future[None] = loop.create_future()
    left = n

    def done(_task: asyncio.Task[None]) -> None:
        nonlocal left
        left -= 1
        if left == 0:
            finished.set_result(None)

    t0 = time.perf_counter()
    for _ in range(n):
        loop.create_task(trivial()).add_done_callback(done)
    await finished
    return Outcome(n / (time.perf_counter() - t0))


async def floor_bounded_run(n: int, concurrency: int) -> Outcome:
    """As `floor_run`, but with at most ``concurrency`` tasks alive, like the worker: each done
    callback starts the next task."""
    loop = asyncio.get_running_loop()
    finished: asyncio.Future[None] = loop.create_future()
    left = n
    to_start = n

    def done(_task: asyncio.Task[None]) -> None:
        nonlocal left, to_start
        left -= 1
        if left == 0:
            finished.set_result(None)
        elif to_start:
            to_start -= 1
            loop.create_task(trivial()).add_done_callback(done)

    t0 = time.perf_counter()
    for _ in range(min(concurrency, n)):
        to_start -= 1
        loop.create_task(trivial()).add_done_callback(done)
    await finished
    return Outcome(n / (time.perf_counter() - t0))


def fresh_run(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Runs one measurement on a fresh event loop, after a full collection."""
    gc.collect()
    return asyncio.run(make())


# --------------------------------------------------------------------------- tracing


def tracing_off() -> str:
    return "opentelemetry not imported"


def tracing_idle() -> str:
    import opentelemetry.trace  # noqa: F401 - loaded, as FastAPI loads it; no provider set
    from lanemq import _tracing

    on = _tracing.refresh() is not None  # what every worker start does: finds no provider
    return f"API loaded, no provider; lanemq tracing on: {on}"


def tracing_sdk() -> str:
    from collections.abc import Sequence as Spans

    import lanemq.otel
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
    from opentelemetry.sdk.trace.export import (
        BatchSpanProcessor,
        SpanExporter,
        SpanExportResult,
    )

    class Dropping(SpanExporter):
        def export(self, spans: Spans[ReadableSpan]) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(BatchSpanProcessor(Dropping()))
    meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
    lanemq.otel.instrument(tracer_provider, meter_provider)
    return "SDK, BatchSpanProcessor to a dropping exporter, in-memory metric reader"


TRACING: dict[str, Callable[[], str]] = {
    "off": tracing_off,
    "idle": tracing_idle,
    "sdk": tracing_sdk,
}


# --------------------------------------------------------------------------- report


def positive_int(text: str) -> int:
    value = int(text.replace("_", ""))
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "--backend", choices=sorted(BACKENDS), default="memory", help="queue backend"
    )
    parser.add_argument("--jobs", type=positive_int, default=100_000, help="jobs per run")
    parser.add_argument("--concurrency", type=positive_int, default=100, help="worker slots")
    parser.add_argument("--repeat", type=positive_int, default=3, help="runs of each phase")
    parser.add_argument("--batch", type=positive_int, default=1_000, help="jobs per add_bulk")
    parser.add_argument(
        "--single", type=positive_int, default=10_000, help="jobs added one at a time"
    )
    parser.add_argument(
        "--tracing", choices=TRACING, default="off", help="OpenTelemetry (see the docstring)"
    )
    parser.add_argument(
        "--sync",
        choices=("full", "normal"),
        default="full",
        help="LocalJobQueue(sync=...) of the local backend's phases 1-3",
    )
    args = parser.parse_args(argv)
    if args.sync != "full" and args.backend != "local":
        parser.error("--sync applies to --backend local only")
    tracing = TRACING[args.tracing]()
    factory = BACKENDS[args.backend](args.sync)
    n = args.jobs

    print(
        f"Python {platform.python_version()} ({platform.python_implementation()}) on {sys.platform}"
    )
    print(f"CPUs: {os.cpu_count()}")
    print(f"backend: {args.backend} (lanemq._core: {build_profile()} build)")
    if args.backend == "local":
        print(f"queue files under: {tempfile.gettempdir()} (sync={args.sync})")
    print(
        f"jobs={n} concurrency={args.concurrency} batch={args.batch} single={args.single} "
        f"repeat={args.repeat} tracing={args.tracing} ({tracing})"
    )
    print()

    phases: dict[str, Callable[[], Coroutine[Any, Any, Outcome]]] = {
        "add_bulk": lambda: add_bulk_run(factory, n, args.batch),
        "add (single)": lambda: add_single_run(factory, args.single),
        "process": lambda: process_run(factory, n, args.concurrency, args.batch),
        "asyncio floor": lambda: floor_run(n),
        "floor, C live": lambda: floor_bounded_run(n, args.concurrency),
    }
    if args.backend == "local":
        syncs: tuple[LocalSync, ...] = ("full", "normal")
        for sync in syncs:
            phases[f"add 1p {sync}"] = functools.partial(
                add_single_run, local_factory(sync), args.single
            )
    rates: dict[str, list[float]] = {name: [] for name in phases}
    anomalies: list[str] = []
    started = time.perf_counter()
    for round_ in range(args.repeat):
        for name, make in phases.items():
            try:
                outcome = fresh_run(make)
            except Exception as error:  # a report, not a test: note it and go on
                outcome = Outcome(0.0, [f"raised {error!r}"])
            rates[name].append(outcome.rate)
            anomalies += [f"{name} (run {round_ + 1}): {p}" for p in outcome.problems]
        print(
            f"round {round_ + 1}: "
            + ", ".join(f"{name} {rates[name][-1]:,.0f}/s" for name in phases)
        )
    print(f"({time.perf_counter() - started:.1f} s)")
    print()

    floor_best = max(rates["asyncio floor"])
    floor_median = statistics.median(rates["asyncio floor"])
    header = (
        f"{'phase':<14} | {'jobs/s best':>12} | {'jobs/s median':>13} | "
        f"{'vs asyncio-task floor':>21}"
    )
    print(header)
    print("-" * len(header))
    for name in phases:
        best = max(rates[name])
        median = statistics.median(rates[name])
        ratio = (
            f"{best / floor_best:.2f}x ({median / floor_median:.2f}x)"
            if floor_best and floor_median
            else "n/a"
        )
        print(f"{name:<14} | {best:>12,.0f} | {median:>13,.0f} | {ratio:>21}")
    print()
    print("vs floor: best / floor best (median / floor median); asyncio floor = plain asyncio,")
    print("N create_task of a no-op coroutine at once, done-callback counter; 'floor, C live':")
    print("the same with at most --concurrency tasks alive (each done callback starts the next)")
    bounded_best = max(rates["floor, C live"])
    if bounded_best:
        print(f"process / 'floor, C live' (best): {max(rates['process']) / bounded_best:.2f}x")
    print()

    for phase, target in TARGETS.get(args.backend, {}).items():
        best = max(rates[phase])
        verdict = "PASS" if best >= target else "FAIL"
        print(f"{phase} >= {target:,} jobs/s: {verdict} (best {best:,.0f} jobs/s)")
    if args.backend == "local":
        full, normal = max(rates["add 1p full"]), max(rates["add 1p normal"])
        gain = normal / full if full else 0.0
        verdict = "PASS" if gain >= NORMAL_OVER_FULL else "FAIL"
        print(
            f"normal one-producer awaited add >= {NORMAL_OVER_FULL:g}x full: {verdict} "
            f"({gain:.1f}x: {normal:,.0f} vs {full:,.0f} adds/s, best of {args.repeat})"
        )
    for (phase, reference), least in RATIO_TARGETS.get(args.backend, {}).items():
        of = max(rates[reference])
        ratio = max(rates[phase]) / of if of else 0.0
        verdict = "PASS" if ratio >= least else "FAIL"
        print(f"{phase} >= {least}x '{reference}' (best): {verdict} ({ratio:.2f}x)")
    if anomalies:
        print()
        print("anomalies:")
        for anomaly in anomalies:
            print(f"  {anomaly}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
