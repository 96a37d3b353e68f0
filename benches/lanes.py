"""Lane scheduler benchmark: lanemq's `QueueManager` against a pure-asyncio lane scheduler.

Run it (the package must be built and installed, e.g. with `pip install .` or
`maturin develop --release`)::

    python benches/lanes.py [--commands 100000] [--backlog 10000] [--repeat 3] [--tasks 100]

It is a report, not a test: it always exits 0.

Measurements
------------
1. Throughput. ``--commands`` no-op commands (``async def noop(): return None``) are submitted
   round-robin over the six default lanes (system P0 max 5, control P1 max 3, query P2 max 10,
   session P3 max 5, skill P4 max 3, prompt P5 max 2) with ``submit_nowait``, then
   ``await drain()``. The clock runs from the first submit to the end of ``drain()``; the
   scheduler is built before the clock starts and closed after it stops. Result: commands/s.
   Before any timing, one untimed run per system checks that every command completed exactly
   once with the right result, that every handle/future is done, and that no lane ever ran more
   commands at once than its ``max_concurrency``.
   The same N commands, awaiting their results, two ways: **gather**, one
   ``await asyncio.gather(*(submit_nowait(lane, noop) for ...))`` over all N handles (lanemq's
   are `CommandHandle` objects, the baseline's ``asyncio.Future`` objects; both sides pay
   gather's own cost per item); and **submit**, ``--tasks`` concurrent tasks that share the N
   commands, each doing ``await sched.submit(lane, noop)`` for its share, one after another
   (the baseline's ``submit`` awaits its future). The clock runs from the first submit (or task
   start) to the end of the gather. Each pattern is first checked untimed like the
   fire-and-forget run: every command ran once, each awaited result is its own command's, no
   lane ran more commands at once than its cap.
2. Latency. ``--backlog`` ``prompt`` commands (each awaits ``asyncio.sleep(0)`` once, so they
   stay briefly in flight) are submitted first; then ``--probes`` ``control`` commands are
   submitted one at a time, one every ``--probe-every`` event-loop iterations (the submitting
   task awaits ``asyncio.sleep(0)`` that many times between probes) while the prompt backlog
   drains. Each probe records ``time.perf_counter()`` at the first line of its body; the latency
   is that minus the ``perf_counter()`` taken just before its ``submit_nowait`` call. Reported:
   p50, p99 and max, plus how many prompt commands had not finished when the last probe was
   submitted (to show that the probes really ran behind a backlog).
3. Each measurement is run ``--repeat`` times, alternating the systems, each run with a fresh
   scheduler on a fresh event loop and ``gc.collect()`` between runs. Throughput reports the best
   and the median run; latency reports the run with the best p99, and the median p99.

The baseline: ``AsyncioLanes``
------------------------------
A lane scheduler written the way asyncio code (and a3s-lane-like schedulers) usually runs work:
a task per command. It has the same API shape as the manager (``submit_nowait(lane_id, fn,
*args)`` returning an awaitable, ``await drain()``) and the same dispatch rule: the lane with the
lowest priority number that has pending work and a free slot starts first, FIFO within a lane,
running commands are never preempted, dispatch is event-driven (no polling, no timer ticks).

How it works:

* Lanes are ``_Lane`` objects (``__slots__``: priority, max_concurrency, active count and a
  ``collections.deque`` of pending commands), kept in a list pre-sorted by priority once, at
  construction, so dispatch never sorts.
* ``submit_nowait`` creates one ``asyncio.Future`` for the command (the awaitable it returns).
  If the lane has a free slot and nothing queued ahead, the command starts at once; otherwise
  ``(future, fn, args)`` is appended to the lane's deque.
* Starting a command takes a slot and calls ``loop.create_task`` on a small wrapper coroutine
  that awaits ``fn(*args)``, copies the outcome into the future and releases the slot; then it
  dispatches. Without a global cap (the benchmark's case, and the manager's default) lanes are
  independent, so the completing lane is the only one that gained a slot: the wrapper starts that
  lane's next pending command, if any. With an optional global ``max_concurrency`` it instead
  walks the pre-sorted lanes and starts from the first ones with pending work and free capacity
  (a freed global slot may go to any lane).
* The started tasks are not kept in a set. The asyncio documentation recommends keeping a
  reference to fire-and-forget tasks; here each task stays reachable through the event loop
  while it is ready and through whatever it awaits, and the set (``add`` + ``discard``) made
  it measurably slower (README.md), so it is left out rather than tuning the baseline down.
* ``drain()`` awaits a future that the last completing command resolves when nothing is pending
  or running. No locks: everything runs on the event loop thread.

Why it is a fair peer: it does exactly the work the dispatch rule needs and nothing else: no
retries, timeouts, metrics, events, cancellation bookkeeping or dead letters, all of which
lanemq still carries on its hot path (in Rust or behind cheap flags). Per command it costs one
future, one task and one wrapper coroutine: that is what running a coroutine concurrently costs
in idiomatic asyncio, and what a3s-lane-style schedulers do. lanemq instead keeps one long-lived
runner task per slot, each awaiting commands in turn (no task per command), and makes the
queueing and dispatch decisions in Rust; this benchmark measures what that design buys.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import platform
import statistics
import sys
import time
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import lanemq
from _support import build_profile
from lanemq import DEFAULT_LANES, QueueManager

LANE_IDS: tuple[str, ...] = tuple(lane_id for lane_id, _, _ in DEFAULT_LANES)


# --------------------------------------------------------------------------- baseline


class _Lane:
    __slots__ = ("active", "lane_id", "max_concurrency", "pending", "priority")

    def __init__(self, lane_id: str, priority: int, max_concurrency: int) -> None:
        self.lane_id = lane_id
        self.priority = priority
        self.max_concurrency = max_concurrency
        self.active = 0
        self.pending: deque[
            tuple[asyncio.Future[Any], Callable[..., Awaitable[Any]], tuple[Any, ...]]
        ]
        self.pending = deque()


class AsyncioLanes:
    """Pure-asyncio lane scheduler: a future per command, a task per started command (see the
    module docstring)."""

    def __init__(
        self,
        lanes: Sequence[tuple[str, int, int]] = DEFAULT_LANES,
        max_concurrency: int | None = None,
    ) -> None:
        ordered = sorted(lanes, key=lambda lane: lane[1])  # sorted once, never at dispatch
        self._lanes = [_Lane(lane_id, prio, cap) for lane_id, prio, cap in ordered]
        self._by_id = {lane.lane_id: lane for lane in self._lanes}
        self._global_cap = max_concurrency
        self._running = 0  # only counted under a global cap
        self._in_flight = 0
        self._drained: list[asyncio.Future[None]] = []
        self._loop: asyncio.AbstractEventLoop | None = None

    @classmethod
    def with_default_lanes(cls, max_concurrency: int | None = None) -> AsyncioLanes:
        return cls(DEFAULT_LANES, max_concurrency)

    @property
    def in_flight(self) -> int:
        return self._in_flight

    def submit_nowait(
        self, lane_id: str, fn: Callable[..., Awaitable[Any]], /, *args: Any
    ) -> asyncio.Future[Any]:
        lane = self._by_id[lane_id]
        loop = self._loop
        if loop is None:
            loop = self._loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        self._in_flight += 1
        if lane.pending or lane.active >= lane.max_concurrency:
            lane.pending.append((future, fn, args))
        elif self._global_cap is None:
            lane.active += 1
            # No reference kept on purpose: see the module docstring.
            loop.create_task(self._execute(lane, future, fn, args))  # noqa: RUF006
        else:
            lane.pending.append((future, fn, args))
            self._dispatch()
        return future

    async def submit(self, lane_id: str, fn: Callable[..., Awaitable[Any]], /, *args: Any) -> Any:
        return await self.submit_nowait(lane_id, fn, *args)

    async def _execute(
        self,
        lane: _Lane,
        future: asyncio.Future[Any],
        fn: Callable[..., Awaitable[Any]],
        args: tuple[Any, ...],
    ) -> None:
        try:
            result = await fn(*args)
        except asyncio.CancelledError:
            future.cancel()
        except BaseException as error:  # handed to whoever awaits the future
            if not future.done():
                future.set_exception(error)
        else:
            if not future.done():
                future.set_result(result)
        lane.active -= 1
        self._in_flight -= 1
        if self._global_cap is None:
            # Lanes are independent without a global cap: only this lane gained a slot.
            pending = lane.pending
            if pending:
                lane.active += 1
                assert self._loop is not None
                self._loop.create_task(self._execute(lane, *pending.popleft()))
        else:
            self._running -= 1
            self._dispatch()
        if not self._in_flight and self._drained:
            for waiter in self._drained:
                if not waiter.done():
                    waiter.set_result(None)
            self._drained.clear()

    def _dispatch(self) -> None:
        """Under a global cap: starts pending commands, lowest priority number first."""
        cap = self._global_cap
        assert cap is not None and self._loop is not None
        for lane in self._lanes:  # pre-sorted by priority
            pending = lane.pending
            while pending and lane.active < lane.max_concurrency:
                if self._running >= cap:
                    return
                lane.active += 1
                self._running += 1
                self._loop.create_task(self._execute(lane, *pending.popleft()))

    async def drain(self) -> None:
        if not self._in_flight:
            return
        assert self._loop is not None
        waiter: asyncio.Future[None] = self._loop.create_future()
        self._drained.append(waiter)
        await waiter

    async def close(self) -> None:
        """Withdraws (cancels) the commands that have not started; running ones finish."""
        for lane in self._lanes:
            while lane.pending:
                lane.pending.popleft()[0].cancel()
                self._in_flight -= 1


# --------------------------------------------------------------------------- harness


class Scheduler(Protocol):
    def submit_nowait(
        self, lane_id: str, fn: Callable[..., Any], /, *args: Any
    ) -> Awaitable[Any]: ...

    async def submit(self, lane_id: str, fn: Callable[..., Any], /, *args: Any) -> Any: ...

    async def drain(self) -> None: ...

    async def close(self) -> None: ...


def make_lanemq() -> Scheduler:
    return QueueManager.with_default_lanes()


def make_baseline() -> Scheduler:
    return AsyncioLanes.with_default_lanes()


SYSTEMS: dict[str, Callable[[], Scheduler]] = {
    "lanemq": make_lanemq,
    "asyncio baseline": make_baseline,
}


async def noop() -> None:
    return None


def fresh_run(coro: Coroutine[Any, Any, Any]) -> Any:
    """Runs ``coro`` on a fresh event loop, after a full collection."""
    gc.collect()
    return asyncio.run(coro)


class Tally:
    """What a correctness run counts: how often each command ran, and the most commands of
    each lane running at once (`counted` is the command both verify runs submit)."""

    def __init__(self, n: int) -> None:
        self.caps = {lane_id: cap for lane_id, _, cap in DEFAULT_LANES}
        self.active = dict.fromkeys(LANE_IDS, 0)
        self.peak = dict.fromkeys(LANE_IDS, 0)
        self.runs = [0] * n

    async def counted(self, index: int, lane_id: str) -> int:
        self.active[lane_id] += 1
        self.peak[lane_id] = max(self.peak[lane_id], self.active[lane_id])
        self.runs[index] += 1
        await asyncio.sleep(0)
        self.active[lane_id] -= 1
        return index

    def over_caps(self, prefix: str = "") -> list[str]:
        """A problem per lane that ran more commands at once than its cap."""
        return [
            f"{prefix}lane {lane_id}: {self.peak[lane_id]} ran at once, max {self.caps[lane_id]}"
            for lane_id in LANE_IDS
            if self.peak[lane_id] > self.caps[lane_id]
        ]


async def verify(make: Callable[[], Scheduler], n: int) -> list[str]:
    """Untimed correctness run; returns a list of problems (empty when all is well)."""
    tally = Tally(n)
    runs, counted = tally.runs, tally.counted

    problems: list[str] = []
    sched = make()
    try:
        handles = [
            sched.submit_nowait(LANE_IDS[i % 6], counted, i, LANE_IDS[i % 6]) for i in range(n)
        ]
        try:
            await asyncio.wait_for(sched.drain(), timeout=120)
        except asyncio.TimeoutError:
            problems.append("drain() did not finish within 120 s")
        completed = sum(1 for r in runs if r == 1)
        if completed != n:
            problems.append(f"completed {completed} of {n} commands exactly once")
        extra = sum(1 for r in runs if r > 1)
        if extra:
            problems.append(f"{extra} commands ran more than once")
        wrong = 0
        not_done = 0
        for i, handle in enumerate(handles):
            if not handle.done():  # type: ignore[attr-defined]
                not_done += 1
            elif handle.result() != i:  # type: ignore[attr-defined]
                wrong += 1
        if not_done:
            problems.append(f"{not_done} handles not done after drain()")
        if wrong:
            problems.append(f"{wrong} handles hold a wrong result")
        problems += tally.over_caps()
        if isinstance(sched, QueueManager):
            metrics = sched.metrics()
            done = sum(m["completed"] for m in metrics.values())
            if done != n:
                problems.append(f"metrics() report {done} completed, expected {n}")
            if sched.in_flight:
                problems.append(f"in_flight is {sched.in_flight} after drain()")
    finally:
        await sched.close()
    return problems


async def throughput_run(make: Callable[[], Scheduler], n: int) -> float:
    sched = make()
    lanes = LANE_IDS
    submit = sched.submit_nowait
    start = time.perf_counter()
    for i in range(n):
        submit(lanes[i % 6], noop)
    await sched.drain()
    elapsed = time.perf_counter() - start
    await sched.close()
    return n / elapsed


# The awaited patterns: "gather" awaits every handle with one gather, "submit" runs `tasks`
# concurrent tasks that share the commands, each awaiting `submit()` for its share in turn.
AWAITED = ("gather", "submit")


async def gather_all(sched: Scheduler, n: int, call: Callable[[int], tuple[Any, ...]]) -> list[Any]:
    """``await gather`` over the ``submit_nowait`` handles of ``call(i)`` for i in range(n)."""
    submit = sched.submit_nowait
    return list(await asyncio.gather(*(submit(*call(i)) for i in range(n))))


async def submit_in_tasks(
    sched: Scheduler, n: int, tasks: int, call: Callable[[int], tuple[Any, ...]]
) -> list[Any]:
    """``tasks`` tasks, task k awaiting ``submit(*call(i))`` for i = k, k + tasks, ... in turn."""
    results: list[Any] = [None] * n
    submit = sched.submit

    async def share(first: int) -> None:
        for i in range(first, n, tasks):
            results[i] = await submit(*call(i))

    await asyncio.gather(*(share(k) for k in range(min(tasks, n))))
    return results


async def awaited_results(
    sched: Scheduler, n: int, pattern: str, tasks: int, call: Callable[[int], tuple[Any, ...]]
) -> list[Any]:
    if pattern == "gather":
        return await gather_all(sched, n, call)
    return await submit_in_tasks(sched, n, tasks, call)


async def verify_awaited(
    make: Callable[[], Scheduler], n: int, pattern: str, tasks: int
) -> list[str]:
    """Untimed correctness run of an awaited pattern; returns a list of problems."""
    tally = Tally(n)
    runs, counted = tally.runs, tally.counted

    def call(i: int) -> tuple[Any, ...]:
        return (LANE_IDS[i % 6], counted, i, LANE_IDS[i % 6])

    problems: list[str] = []
    sched = make()
    try:
        try:
            results = await asyncio.wait_for(awaited_results(sched, n, pattern, tasks, call), 120)
        except asyncio.TimeoutError:
            return [f"{pattern}: the results did not come within 120 s"]
        once = sum(1 for r in runs if r == 1)
        if once != n:
            problems.append(f"{pattern}: {once} of {n} commands ran exactly once")
        wrong = sum(1 for i, r in enumerate(results) if r != i)
        if wrong:
            problems.append(f"{pattern}: {wrong} awaited results are not their command's")
        problems += tally.over_caps(f"{pattern}: ")
    finally:
        await sched.close()
    return problems


async def awaited_run(make: Callable[[], Scheduler], n: int, pattern: str, tasks: int) -> float:
    """One timed run of an awaited pattern, written out as an application would (no helper
    call per command, which would dilute the ratio for both sides alike)."""
    sched = make()
    lanes = LANE_IDS
    start = time.perf_counter()
    if pattern == "gather":
        submit_nowait = sched.submit_nowait
        await asyncio.gather(*(submit_nowait(lanes[i % 6], noop) for i in range(n)))
    else:
        submit = sched.submit

        async def share(first: int) -> None:
            for i in range(first, n, tasks):
                await submit(lanes[i % 6], noop)

        await asyncio.gather(*(share(k) for k in range(min(tasks, n))))
    elapsed = time.perf_counter() - start
    await sched.close()
    return n / elapsed


@dataclass
class LatencyResult:
    p50: float
    p99: float
    max: float
    backlog_left: int  # prompt commands not yet finished when the last probe was submitted
    missing: int  # probes that never started


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile of an ascending sequence."""
    if not sorted_values:
        return float("nan")
    rank = max(1, min(len(sorted_values), int(-(-q * len(sorted_values) // 100))))
    return sorted_values[rank - 1]


async def latency_run(
    make: Callable[[], Scheduler], backlog: int, probes: int, every: int
) -> LatencyResult:
    sched = make()
    nan = float("nan")
    waits = [nan] * probes
    prompts_done = 0
    perf_counter = time.perf_counter

    async def prompt() -> None:
        nonlocal prompts_done
        await asyncio.sleep(0)
        prompts_done += 1

    async def probe(index: int, submitted: float) -> None:
        waits[index] = perf_counter() - submitted

    for _ in range(backlog):
        sched.submit_nowait("prompt", prompt)
    backlog_left = backlog
    for index in range(probes):
        for _ in range(every):
            await asyncio.sleep(0)
        sched.submit_nowait("control", probe, index, perf_counter())
        backlog_left = backlog - prompts_done
    await sched.drain()
    await sched.close()
    started = sorted(w for w in waits if w == w)
    return LatencyResult(
        p50=percentile(started, 50),
        p99=percentile(started, 99),
        max=started[-1] if started else nan,
        backlog_left=backlog_left,
        missing=probes - len(started),
    )


# --------------------------------------------------------------------------- report


def fmt_ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3f}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--commands", type=int, default=100_000, help="commands per throughput run")
    parser.add_argument("--backlog", type=int, default=10_000, help="prompt commands queued first")
    parser.add_argument("--probes", type=int, default=1_000, help="control commands timed")
    parser.add_argument(
        "--probe-every", type=int, default=4, help="event-loop iterations between probes"
    )
    parser.add_argument("--repeat", type=int, default=3, help="runs of each measurement")
    parser.add_argument(
        "--tasks", type=int, default=100, help="concurrent tasks of the awaited 'submit' pattern"
    )
    args = parser.parse_args(argv)

    print(
        f"Python {platform.python_version()} ({platform.python_implementation()}) on {sys.platform}"
    )
    print(f"lanemq {getattr(lanemq, '__version__', None) or _dist_version()}")
    print(f"CPUs: {os.cpu_count()}")
    print(f"lanemq._core: {build_profile()} build")
    print(
        f"commands={args.commands} backlog={args.backlog} probes={args.probes} "
        f"probe-every={args.probe_every} repeat={args.repeat} tasks={args.tasks}"
    )
    print()

    anomalies: list[str] = []
    for name, make in SYSTEMS.items():
        t = time.perf_counter()
        problems = fresh_run(verify(make, args.commands))
        status = "ok" if not problems else "; ".join(problems)
        print(f"check {name}: {status} ({time.perf_counter() - t:.2f} s)")
        anomalies += [f"{name}: {p}" for p in problems]
        for pattern in AWAITED:
            t = time.perf_counter()
            problems = fresh_run(verify_awaited(make, args.commands, pattern, args.tasks))
            status = "ok" if not problems else "; ".join(problems)
            print(f"check {name} awaited {pattern}: {status} ({time.perf_counter() - t:.2f} s)")
            anomalies += [f"{name}: {p}" for p in problems]

    rates: dict[str, list[float]] = {name: [] for name in SYSTEMS}
    latencies: dict[str, list[LatencyResult]] = {name: [] for name in SYSTEMS}
    awaited: dict[tuple[str, str], list[float]] = {
        (pattern, name): [] for pattern in AWAITED for name in SYSTEMS
    }
    names = list(SYSTEMS)
    for round_ in range(args.repeat):
        order = names if round_ % 2 == 0 else names[::-1]  # alternate who goes first
        for name in order:
            rates[name].append(fresh_run(throughput_run(SYSTEMS[name], args.commands)))
        for pattern in AWAITED:
            for name in order:
                rate = fresh_run(awaited_run(SYSTEMS[name], args.commands, pattern, args.tasks))
                awaited[pattern, name].append(rate)
        for name in order:
            result = fresh_run(
                latency_run(SYSTEMS[name], args.backlog, args.probes, args.probe_every)
            )
            latencies[name].append(result)
            if result.missing:
                anomalies.append(f"{name}: {result.missing} latency probes never started")
        print(
            f"round {round_ + 1}: "
            + ", ".join(
                f"{n} {rates[n][-1]:,.0f}/s (gather {awaited['gather', n][-1]:,.0f}/s, "
                f"submit {awaited['submit', n][-1]:,.0f}/s) p99 {fmt_ms(latencies[n][-1].p99)} ms"
                for n in order
            )
        )
    print()

    base = "asyncio baseline"
    base_best = max(rates[base])
    base_median = statistics.median(rates[base])
    header = (
        f"{'system':<17} | {'cmd/s best':>11} | {'cmd/s median':>12} | "
        f"{'ratio best (median)':>19} | {'p50 ms':>7} | {'p99 ms':>7} | {'max ms':>7} | "
        f"{'p99 med ms':>10} | {'backlog left':>12}"
    )
    print(header)
    print("-" * len(header))
    for name in SYSTEMS:
        best = max(rates[name])
        median = statistics.median(rates[name])
        ratios = f"{best / base_best:.2f}x ({median / base_median:.2f}x)"
        lat = min(latencies[name], key=lambda r: r.p99)
        p99_median = statistics.median(r.p99 for r in latencies[name])
        print(
            f"{name:<17} | {best:>11,.0f} | {median:>12,.0f} | {ratios:>19} | "
            f"{fmt_ms(lat.p50):>7} | {fmt_ms(lat.p99):>7} | {fmt_ms(lat.max):>7} | "
            f"{fmt_ms(p99_median):>10} | {lat.backlog_left:>12}"
        )
    print()
    print("latency: control submit -> start of body; best run by p99; 'backlog left' = prompt")
    print(
        "commands unfinished when the last probe was submitted (> 0: probes ran behind a backlog)"
    )
    print()

    header = (
        f"{'awaited results':<42} | {'cmd/s best':>11} | {'cmd/s median':>12} | "
        f"{'ratio best (median)':>19}"
    )
    print(header)
    print("-" * len(header))
    for pattern in AWAITED:
        label = {
            "gather": "gather(submit_nowait ...)",
            "submit": f"await submit, {args.tasks} tasks",
        }[pattern]
        pattern_best = max(awaited[pattern, base])
        pattern_median = statistics.median(awaited[pattern, base])
        for name in SYSTEMS:
            best = max(awaited[pattern, name])
            median = statistics.median(awaited[pattern, name])
            ratios = f"{best / pattern_best:.2f}x ({median / pattern_median:.2f}x)"
            row = f"{label} {name}"
            print(f"{row:<42} | {best:>11,.0f} | {median:>12,.0f} | {ratios:>19}")
    print()
    print("awaited results: submit N commands and await each one's result (benches/README.md)")
    print()

    ratio = max(rates["lanemq"]) / base_best
    print(
        f"fire-and-forget lanemq >= 2.5x baseline: {'PASS' if ratio >= 2.5 else 'FAIL'} "
        f"(ratio {ratio:.2f})"
    )
    for pattern in AWAITED:
        ratio = max(awaited[pattern, "lanemq"]) / max(awaited[pattern, base])
        print(
            f"awaited {pattern} lanemq >= 1.5x baseline: {'PASS' if ratio >= 1.5 else 'FAIL'} "
            f"(ratio {ratio:.2f})"
        )
    p99 = min(r.p99 for r in latencies["lanemq"])
    print(f"control p99 < 1 ms: {'PASS' if p99 < 1e-3 else 'FAIL'} (p99 {fmt_ms(p99)} ms)")
    if anomalies:
        print()
        print("anomalies:")
        for anomaly in anomalies:
            print(f"  {anomaly}")
    return 0


def _dist_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("lanemq")
    except PackageNotFoundError:
        return "unknown"


if __name__ == "__main__":
    sys.exit(main())
