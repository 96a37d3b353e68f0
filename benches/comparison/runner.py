"""Runner mode (``compare.py --runner SYSTEM --spec JSON``): one workload of one Python system
in a subprocess of its own, its result printed as one ``RESULT {json}`` line."""

from __future__ import annotations

import asyncio
import json
import math
import os
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from _support import Resp, text

from comparison.adapter import Adapter
from comparison.bullmq_python_adapter import BullmqPythonAdapter
from comparison.chasquimq_adapter import ChasquimqAdapter
from comparison.floors import round_trip_us
from comparison.lanemq_adapter import LanemqAdapter
from comparison.saq_adapter import SaqAdapter
from comparison.server_stats import StatsProbe
from comparison.specs import QUEUE, RESULT_PREFIX, WARMUP
from comparison.streaq_adapter import StreaqAdapter
from comparison.taskiq_adapter import TaskiqAdapter

ADAPTERS: dict[str, type[Adapter]] = {
    "lanemq": LanemqAdapter,
    "bullmq-python": BullmqPythonAdapter,
    "saq": SaqAdapter,
    "streaq": StreaqAdapter,
    "taskiq": TaskiqAdapter,
    "chasquimq": ChasquimqAdapter,
}


def expect(actual: dict[str, int], **expected: int) -> list[str]:
    return [
        f"{state}: {actual.get(state)} (expected {want})"
        for state, want in expected.items()
        if state in actual and actual[state] != want
    ]


def expected_after_process(system: str, n: int) -> dict[str, int]:
    if system == "saq":  # saq has no finished counts; incomplete = queued + active + scheduled
        return {"waiting": 0, "active": 0, "incomplete": 0}
    # `expect` checks only the states an adapter's counts() reports (streaq, taskiq and
    # ChasquiMQ report fewer).
    return {"completed": n, "waiting": 0, "active": 0, "failed": 0}


def used_memory(client: Resp) -> int:
    """INFO memory's used_memory, in bytes."""
    for line in text(client.call("INFO", "memory")).splitlines():
        if line.startswith("used_memory:"):
            return int(line.split(":", 1)[1])
    raise RuntimeError("INFO memory has no used_memory")


def percentile(sorted_values: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile (the same rule as bullmq_bench.mjs)."""
    if not sorted_values:
        return None
    rank = min(len(sorted_values) - 1, max(0, math.ceil(q * len(sorted_values)) - 1))
    return sorted_values[rank]


async def run_add_single(adapter: Adapter, spec: dict[str, Any]) -> dict[str, Any]:
    n = spec["n"]
    probe = StatsProbe(spec, adapter)
    probe.start()
    t0 = time.perf_counter()
    for i in range(n):
        await adapter.add(i)
    seconds = time.perf_counter() - t0
    stats = probe.stop()
    problems = expect(await adapter.counts(), waiting=n, active=0)
    return {
        "value": n / seconds,
        "unit": "jobs/s",
        "seconds": seconds,
        "problems": problems,
        "stats": stats,
    }


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
    """Fills the queue with ``fill`` jobs (default ``n``), then times one worker until ``n``
    of them finished: all of them in the process rows, the head of the backlog in the
    backlog rows (the worker is stopped then, with the rest still waiting)."""
    n, batch, concurrency = spec["n"], spec["batch"], spec["concurrency"]
    fill = max(n, spec.get("fill") or n)
    fill_batch = batch if fill == n else max(batch, 5_000)  # a deep backlog: bigger bulks
    filled_at = time.perf_counter()
    for start in range(0, fill, fill_batch):
        await adapter.add_bulk(start, min(start + fill_batch, fill))
    fill_seconds = time.perf_counter() - filled_at
    all_done = asyncio.Event()
    completed = failed = 0
    last_done = 0.0

    def hook(ok: bool) -> None:
        nonlocal completed, failed, last_done
        if ok:
            completed += 1
        else:
            failed += 1
        if completed + failed <= n:
            last_done = time.perf_counter()
        if completed + failed == n:
            all_done.set()

    probe = StatsProbe(spec, adapter)
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

    done_in_time = min(completed, n)
    problems: list[str] = []
    if not finished:
        problems.append(f"only {completed} of {n} completed ({failed} failed) in time")
    elif failed:
        problems.append(f"{failed} jobs failed")
    await adapter.stop_worker()
    if fill == n:
        problems += expect(await adapter.counts(), **expected_after_process(adapter.system, n))
    return {
        "value": done_in_time / seconds,
        "unit": "jobs/s",
        "seconds": seconds,
        "problems": problems,
        "stats": stats,
        "fill": fill,
        "fill_seconds": fill_seconds,
    }


async def run_memory(adapter: Adapter, spec: dict[str, Any]) -> dict[str, Any]:
    """Bytes of Redis memory per waiting job: used_memory before and after ``n`` no-op jobs
    are bulk-added (the server was FLUSHALL'd before the runner started)."""
    n, batch = spec["n"], spec["batch"]
    client = Resp(spec["host"], spec["port"])
    try:
        before = used_memory(client)
        t0 = time.perf_counter()
        for start in range(0, n, batch):
            await adapter.add_bulk(start, min(start + batch, n))
        seconds = time.perf_counter() - t0
        after = used_memory(client)
    finally:
        client.close()
    problems = expect(await adapter.counts(), waiting=n, active=0)
    return {
        "value": (after - before) / n,
        "bytes_per_job": (after - before) / n,
        "unit": "bytes",
        "used_memory_before": before,
        "used_memory_after": after,
        "seconds": seconds,
        "problems": problems,
        "note": adapter.bulk_note,
    }


async def run_rtt(adapter: Adapter, spec: dict[str, Any]) -> dict[str, Any]:
    """The round-trip floor: microseconds per awaited loop-socket PING."""
    us = await round_trip_us(spec["host"], spec["port"], spec["n"])
    return {"value": us, "unit": "us", "calls": spec["n"], "problems": []}


async def run_memory_process(adapter: Adapter, spec: dict[str, Any]) -> dict[str, Any]:
    """lanemq's in-memory backend, process phase of benches/jobs.py at the same job count
    and concurrency: the ceiling a Redis worker is held against at high concurrency."""
    import jobs  # benches/jobs.py (lanemq runner only: it imports lanemq)

    outcome = await jobs.process_run(
        jobs.memory_queue, spec["n"], spec["concurrency"], spec["batch"]
    )
    return {"value": outcome.rate, "unit": "jobs/s", "problems": outcome.problems}


async def run_smoke(adapter: Adapter, spec: dict[str, Any]) -> dict[str, Any]:
    """Can this system run here at all: add 3 jobs, bulk-add 3, process all 6."""
    for i in range(3):
        await adapter.add(i)
    await adapter.add_bulk(3, 6)
    done = asyncio.Event()
    finished = 0

    def hook(ok: bool) -> None:
        nonlocal finished
        finished += 1
        if finished == 6:
            done.set()

    await adapter.start_worker(2, hook)
    try:
        await asyncio.wait_for(done.wait(), 20)
    except asyncio.TimeoutError:
        return {"error": f"smoke test: {finished} of 6 jobs finished in 20 s"}
    finally:
        await adapter.stop_worker()
    return {"value": finished, "unit": "jobs", "problems": []}


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
    probe = StatsProbe(spec, adapter)
    probe.start()
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
    stats = probe.stop()
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
        "stats": stats,
    }


WORKLOAD_RUNNERS: dict[str, Callable[[Adapter, dict[str, Any]], Awaitable[dict[str, Any]]]] = {
    "add_single": run_add_single,
    "add_bulk": run_add_bulk,
    "process": run_process,
    "latency": run_latency,
    "memory": run_memory,
    "backlog": run_process,
    "rtt": run_rtt,
    "memory_process": run_memory_process,
    "smoke": run_smoke,
}


async def runner_main(system: str, spec: dict[str, Any]) -> dict[str, Any]:
    url = f"redis://{spec['host']}:{spec['port']}/0"
    result: dict[str, Any] = {"system": system, "workload": spec["workload"]}
    adapter = ADAPTERS[system](url)
    result["version"] = adapter.version()
    if spec["workload"] in ("rtt", "memory_process"):  # no queue on Redis needed
        result.update(await WORKLOAD_RUNNERS[spec["workload"]](adapter, spec))
        return result
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
