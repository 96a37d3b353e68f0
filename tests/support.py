"""Helpers shared by the test modules."""

from __future__ import annotations

import asyncio
import itertools
import os
import signal
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Sequence
from pathlib import Path

from lanemq import Event, Subscription

WAIT = 5.0  # upper bound for anything a test awaits; never reached when things work
CHILD_WAIT = 10.0  # the same for child processes, which start a Python interpreter first
# The fixed "now" (ms since the epoch, Tuesday 2023-11-14 22:13:20 UTC) that tests pass as
# ``now=``, so that due times, leases and retention never depend on the clock.
EPOCH_MS = 1_700_000_000_000


async def wait_until(
    predicate: Callable[[], bool], what: str = "a condition", timeout: float = WAIT
) -> None:
    """Waits for ``predicate`` to hold; fails the test after ``timeout`` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(0.002)


async def eventually(
    check: Callable[[], Awaitable[bool]], what: str, timeout: float = CHILD_WAIT
) -> None:
    """Awaits ``check`` until it is true; fails the test after ``timeout`` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not await check():
        if loop.time() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(0.02)


async def collect(sub: Subscription) -> list[Event]:
    """Closes ``sub`` and returns the events still buffered in it."""
    sub.close()
    return [event async for event in sub]


class Child:
    """A Python child process running a script; stdout is read line by line, stderr goes to a
    file (shown when something goes wrong)."""

    def __init__(self, proc: asyncio.subprocess.Process, stderr_path: Path) -> None:
        self.proc = proc
        self.pid = proc.pid
        self.stderr_path = stderr_path

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    async def line(self, timeout: float = CHILD_WAIT) -> str:
        assert self.proc.stdout is not None
        raw = await asyncio.wait_for(self.proc.stdout.readline(), timeout)
        if not raw.endswith(b"\n"):
            await asyncio.wait_for(self.proc.wait(), timeout)
            raise AssertionError(
                f"child {self.pid} ended (rc={self.proc.returncode}) before printing a line; "
                f"stderr:\n{self.stderr()}"
            )
        return raw.decode().rstrip("\n")

    def kill(self) -> None:
        """SIGKILL, by PID, unless it is already known to have exited."""
        if self.proc.returncode is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    async def wait(self, timeout: float = CHILD_WAIT) -> int:
        return await asyncio.wait_for(self.proc.wait(), timeout)


async def kill_all(children: Iterable[Child]) -> None:
    """Kills the children a test started (all first, so none waits on another) and reaps
    them; one still not gone after CHILD_WAIT is left to the system rather than fail the
    teardown."""
    children = list(children)
    for child in children:
        child.kill()
    for child in children:
        try:
            await child.wait()
        except asyncio.TimeoutError:
            pass


Spawn = Callable[..., Awaitable["Child"]]


def redis_prefix() -> str:
    """A key prefix of a test's own, so tests never meet on the shared redis-server."""
    return f"t{uuid.uuid4().hex[:8]}"


#: Python source for child scripts that must start together: `await wait_for_go()` prints
#: "ready", then waits (20 s at most) for the file named by the script's last argument, which
#: `start_together` creates once every child is ready.
WAIT_FOR_GO = """
import asyncio, sys, time
from pathlib import Path

async def wait_for_go() -> None:
    go = Path(sys.argv[-1])
    print("ready", flush=True)
    deadline = time.monotonic() + 20
    while not go.exists():
        if time.monotonic() > deadline:
            sys.exit("no go signal")
        await asyncio.sleep(0.005)
"""


async def start_together(
    spawn: Spawn, script: str, arguments: Iterable[Sequence[str]], go: Path
) -> list[Child]:
    """Starts one child per argument list (the path ``go`` appended), waits until each is
    ready, then lets them all go at once."""
    children = [await spawn(script, *args, str(go)) for args in arguments]
    for child in children:
        assert await child.line() == "ready", child.stderr()
    await asyncio.to_thread(go.touch)
    return children


def shared_worker(make_queue: str) -> str:
    """A child script running a JobWorker (concurrency 10) on the queue ``make_queue`` builds
    (Python source over ``sys.argv[2:-1]``; ``lanemq`` is imported): once let go, it writes the
    id of every job it runs to the file ``sys.argv[1]``, returns ``{"pid": its pid}``, stops
    when nothing is waiting or active, and prints ``processed N``."""
    return (
        WAIT_FOR_GO
        + f"""
import os
import lanemq

async def main() -> None:
    queue = {make_queue}
    out = open(sys.argv[1], "a", encoding="utf-8")
    await wait_for_go()
    deadline = time.monotonic() + 20

    async def process(job):
        out.write(job.id + "\\n")
        out.flush()
        await asyncio.sleep(0.02)
        return {{"pid": os.getpid()}}

    worker = lanemq.JobWorker(queue, process, concurrency=10)
    running = asyncio.create_task(worker.run())
    while True:
        await asyncio.sleep(0.05)
        if running.done():
            running.result()  # a worker that died shows its error
            sys.exit("the worker stopped by itself")
        counts = await queue.get_job_counts("waiting", "active")
        if counts["waiting"] == 0 and counts["active"] == 0:
            break
        if time.monotonic() > deadline:
            sys.exit(f"jobs left: {{counts}}")
    await asyncio.wait_for(worker.close(), 10)
    await asyncio.wait_for(running, 10)
    print("processed", worker.processed, flush=True)

asyncio.run(main())
"""
    )


async def race_shared_workers(
    spawn: Spawn, script: str, queue_arguments: Sequence[str], tmp_path: Path, job_ids: set[str]
) -> tuple[list[Child], list[list[str]]]:
    """Runs two `shared_worker` children on one queue holding ``job_ids`` until it is empty,
    and checks that every job ran exactly once and both did some of the work. Returns the
    children and the ids each one ran."""
    outputs = [tmp_path / "worker-1.out", tmp_path / "worker-2.out"]
    arguments = [(str(out), *queue_arguments) for out in outputs]
    children = await start_together(spawn, script, arguments, tmp_path / "go")
    processed = []
    for child in children:
        line = await child.line(timeout=20.0)
        assert line.startswith("processed "), child.stderr()
        processed.append(int(line.split()[1]))
        assert await child.wait() == 0, child.stderr()
    runs = [out.read_text().split() for out in outputs]
    seen = Counter(itertools.chain.from_iterable(runs))
    assert set(seen) == job_ids
    assert [job_id for job_id, n in seen.items() if n > 1] == [], "a job ran twice"
    assert processed == [len(run) for run in runs]
    assert all(n > 0 for n in processed), f"one process did all the work: {processed}"
    return children, runs
