"""``worker.run(install_signal_handlers=True, grace=...)``: SIGTERM or SIGINT closes the worker
gracefully (a second one forces), run() returns and the process exits 0; the handlers that
were there before come back. Signals go to real child processes these tests start."""

from __future__ import annotations

import asyncio
import signal
import threading
from pathlib import Path

import pytest
from lanemq import ConfigError, InMemoryJobQueue, Job, JobWorker, LocalJobQueue
from support import CHILD_WAIT, Child, Spawn

WORKER = """
import asyncio, logging, sys
from pathlib import Path
from lanemq import JobWorker, LocalJobQueue

logging.basicConfig(stream=sys.stdout, level=logging.INFO, format="%(message)s")

async def main() -> None:
    queue = LocalJobQueue("signals", sys.argv[1])
    marker = Path(sys.argv[2])

    async def work(job):
        print("started", job.id, flush=True)
        await asyncio.sleep(float(job.data))
        with marker.open("a") as out:
            out.write(job.id + "\\n")
        return "done"

    worker = JobWorker(queue, work)
    if len(sys.argv) > 3:
        await worker.run(install_signal_handlers=True, grace=float(sys.argv[3]))
    else:
        await worker.run(install_signal_handlers=True)  # the default grace, 8 s
    print("run returned", flush=True)

asyncio.run(main())
"""


async def lines_until(child: Child, wanted: str) -> list[str]:
    """Lines of the child's stdout up to the first that contains ``wanted``."""
    seen: list[str] = []
    while not seen or wanted not in seen[-1]:
        seen.append(await child.line(timeout=30))
    return seen


async def signalled_mid_job(
    spawn: Spawn, script: str, job_id: str, args: list[str], signum: int, until: str
) -> list[str]:
    """Starts ``script`` (a worker process) with ``args``, sends ``signum`` once it has
    started job ``job_id``, and returns its output up to the line holding ``until``; the
    process must then exit 0."""
    child = await spawn(script, *args)
    assert (await lines_until(child, "started"))[-1] == f"started {job_id}", child.stderr()
    child.proc.send_signal(signum)
    output = await lines_until(child, until)
    assert await child.wait(timeout=30) == 0, child.stderr()
    return output


async def test_sigterm_mid_job_lets_it_finish_and_exits_0(spawn: Spawn, tmp_path: Path) -> None:
    queue = LocalJobQueue("signals", tmp_path)
    job = await queue.add("sleep", 1.0)
    marker = tmp_path / "ran"
    args = [str(tmp_path), str(marker)]
    output = await signalled_mid_job(spawn, WORKER, job.id, args, signal.SIGTERM, "run returned")

    assert any("SIGTERM received: closing (grace 8.0s" in line for line in output), output
    assert marker.read_text().split() == [job.id]  # ran exactly once
    stored = await queue.get_job(job.id)
    assert stored is not None
    assert (stored.state, stored.attempts_made, stored.return_value) == ("completed", 1, "done")


async def test_sigint_past_the_grace_releases_the_job_and_exits_0(
    spawn: Spawn, tmp_path: Path
) -> None:
    queue = LocalJobQueue("signals", tmp_path)
    job = await queue.add("sleep", 60.0)
    marker = tmp_path / "ran"
    args = [str(tmp_path), str(marker), "0.2"]
    output = await signalled_mid_job(spawn, WORKER, job.id, args, signal.SIGINT, "run returned")

    assert any("still running" in line and "releasing" in line for line in output), output
    assert not marker.exists()
    stored = await queue.get_job(job.id)
    assert stored is not None
    assert (stored.state, stored.attempts_made, stored.lock_token) == ("waiting", 0, None)

    async def quick(job: Job) -> str:
        return "rescued"

    assert await asyncio.wait_for(JobWorker(queue, quick).run_until_idle(), 30) == 1
    assert (await queue.finished_result(job.id)).value == "rescued"


async def test_a_second_signal_forces(spawn: Spawn, tmp_path: Path) -> None:
    queue = LocalJobQueue("signals", tmp_path)
    job = await queue.add("sleep", 60.0)
    child = await spawn(WORKER, str(tmp_path), str(tmp_path / "ran"), "60")
    assert (await lines_until(child, "started"))[-1] == f"started {job.id}", child.stderr()
    child.proc.send_signal(signal.SIGTERM)
    await lines_until(child, "SIGTERM received")
    child.proc.send_signal(signal.SIGTERM)
    output = await lines_until(child, "run returned")
    assert await child.wait(timeout=30) == 0, child.stderr()

    assert any("received again: forcing close" in line for line in output), output
    stored = await queue.get_job(job.id)
    assert stored is not None
    assert stored.state == "active"  # forced: left to stalled recovery, as close(force=True)


DEF_WORKER = """
import logging, sys, time
from pathlib import Path
from lanemq import JobWorker, LocalJobQueue
import asyncio

logging.basicConfig(stream=sys.stdout, level=logging.INFO, format="%(message)s")

async def main() -> None:
    queue = LocalJobQueue("signals", sys.argv[1])
    marker = Path(sys.argv[2])

    def work(job):  # a plain def: it runs in a worker thread
        with marker.open("a") as out:
            out.write("started " + job.id + "\\n")
        print("started", job.id, flush=True)
        time.sleep(float(job.data))
        with marker.open("a") as out:
            out.write("finished " + job.id + "\\n")
        return "done"

    worker = JobWorker(queue, work)
    await worker.run(install_signal_handlers=True, grace=float(sys.argv[3]))
    print("run returned", flush=True)
    # Whatever the worker left waiting would run again here (a second worker, a restart).
    again = JobWorker(queue, work)
    await again.run_until_idle()
    print("second worker idle", flush=True)

asyncio.run(main())
"""


async def test_sigterm_mid_def_job_waits_for_its_thread_and_runs_it_once(
    spawn: Spawn, tmp_path: Path
) -> None:
    queue = LocalJobQueue("signals", tmp_path)
    job = await queue.add("sleep", 1.0)
    marker = tmp_path / "ran"
    args = [str(tmp_path), str(marker), "30"]
    output = await signalled_mid_job(
        spawn, DEF_WORKER, job.id, args, signal.SIGTERM, "second worker idle"
    )

    assert not any("releasing" in line for line in output), output
    # The thread ran to its end once, and its result is the job's: not released, not re-run.
    assert marker.read_text().split("\n")[:-1] == [f"started {job.id}", f"finished {job.id}"]
    stored = await queue.get_job(job.id)
    assert stored is not None
    assert (stored.state, stored.attempts_made, stored.return_value) == ("completed", 1, "done")


RESTORE = """
import asyncio, signal, sys
from lanemq import InMemoryJobQueue, JobWorker

async def main() -> None:
    loop = asyncio.get_running_loop()
    got: list[str] = []
    loop.add_signal_handler(signal.SIGTERM, lambda: got.append("app SIGTERM"))

    def python_handler(signum, frame):
        got.append("app SIGINT")

    signal.signal(signal.SIGINT, python_handler)
    queue = InMemoryJobQueue("restore")
    await queue.add("j", None)

    async def work(job):
        return "ok"

    worker = JobWorker(queue, work)

    async def stop(job, result):
        await worker.close()  # from a hook, inside run(): returns at once

    worker.on("completed", stop)
    await worker.run(install_signal_handlers=True)
    print("python handler back:", signal.getsignal(signal.SIGINT) is python_handler, flush=True)
    for expected in ("app SIGTERM", "app SIGINT"):
        while expected not in got:
            await asyncio.sleep(0.01)
        print(expected, flush=True)

asyncio.run(main())
"""


async def test_previous_handlers_are_restored_when_run_returns(spawn: Spawn) -> None:
    child = await spawn(RESTORE)
    assert await child.line(timeout=30) == "python handler back: True", child.stderr()
    child.proc.send_signal(signal.SIGTERM)
    assert await child.line(timeout=30) == "app SIGTERM", child.stderr()
    child.proc.send_signal(signal.SIGINT)
    assert await child.line(timeout=30) == "app SIGINT", child.stderr()
    assert await child.wait(timeout=CHILD_WAIT) == 0, child.stderr()


def test_outside_the_main_thread_is_a_clear_error() -> None:
    async def attempt() -> str:
        queue = InMemoryJobQueue("thread")
        worker = JobWorker(queue, lambda job: None)
        try:
            await worker.run(install_signal_handlers=True)
        except RuntimeError as error:
            message = str(error)
        else:
            return "no error"
        await queue.add("j", None)
        assert await worker.run_until_idle() == 1  # nothing was left half set up
        return message

    messages: list[str] = []
    thread = threading.Thread(target=lambda: messages.append(asyncio.run(attempt())))
    thread.start()
    thread.join(30)
    assert len(messages) == 1
    assert "main thread" in messages[0]


async def test_invalid_grace_is_refused_and_changes_nothing() -> None:
    before = (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT))
    queue = InMemoryJobQueue("grace")
    worker = JobWorker(queue, lambda job: None)
    for bad in (-1, float("nan"), "8"):
        with pytest.raises(ConfigError, match="grace"):
            await worker.run(install_signal_handlers=True, grace=bad)  # type: ignore[arg-type]
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == before
    await queue.add("j", None)
    assert await worker.run_until_idle() == 1  # not left marked as running
