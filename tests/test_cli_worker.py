"""``lanemq worker``, run as a real subprocess on LocalJobQueues in the test's directory, with
an application module the test writes there: SIGTERM lets a running job finish (exit 0, the
job completed exactly once), a job longer than ``--grace`` goes back to waiting with its
attempt given back, a second signal releases at once; targets as workers, lists and (async)
factories, ``--concurrency`` and ``--config`` concurrencies; bad targets exit 2 naming them."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sys
import textwrap
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
from cli_support import lanemq
from lanemq import LocalJobQueue
from support import CHILD_WAIT, eventually

EXIT_WAIT = 30.0  # upper bound for the command to exit after the signal; never reached

APP = '''
import asyncio
from pathlib import Path

import lanemq

queue = lanemq.LocalJobQueue("jobs", "./data")
worker = lanemq.JobWorker(queue, concurrency=1)


def note(line: str) -> None:
    with open("marker.txt", "a", encoding="utf-8") as out:
        out.write(line + "\\n")


async def together(job: lanemq.Job) -> None:
    """Waits until ``job.data`` jobs of this queue run at once (so it needs that concurrency)."""
    note(f"start {job.queue.name} {job.id}")
    while True:
        started = Path("marker.txt").read_text().count(f"start {job.queue.name} ")
        if started >= job.data:
            break
        await asyncio.sleep(0.01)
    note(f"done {job.queue.name} {job.id}")


@worker.processor()
async def run(job: lanemq.Job) -> dict:
    if job.name == "sleep":
        await asyncio.sleep(job.data)
    while job.name == "stubborn":  # ignores cancellation: close() cannot end it
        try:
            await asyncio.sleep(600)
        except asyncio.CancelledError:
            note("ignored a cancel")
    note(job.id)
    return {"slept": job.data}


def worker_on(name: str, concurrency: int = 1) -> lanemq.JobWorker:
    made = lanemq.JobWorker(lanemq.LocalJobQueue(name, "./data"), concurrency=concurrency)
    made.processor()(together)
    return made


pair = [worker_on("pair-a"), worker_on("pair-b")]


def make_pair() -> list:
    return pair


async def make_async() -> lanemq.JobWorker:
    await asyncio.sleep(0)
    return worker_on("async")


solo = worker_on("solo")
both = [worker, pair[0]]   # worker and pair[0] again: each still runs once

not_a_worker = 3


def returns_wrong() -> int:
    return 3


def raises() -> lanemq.JobWorker:
    raise RuntimeError("no database configured")


async def a_processor(job: lanemq.Job) -> None:
    pass
'''


APP_QUEUES = ("jobs", "pair-a", "pair-b", "async", "solo")


class WorkerProcess:
    """A ``python -m lanemq worker ...`` child; stderr goes to a file."""

    def __init__(self, proc: asyncio.subprocess.Process, stderr: Path) -> None:
        self.proc = proc
        self.stderr_path = stderr

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def signal(self, signum: int) -> None:
        os.kill(self.proc.pid, signum)

    async def exit_code(self) -> int:
        try:
            return await asyncio.wait_for(self.proc.wait(), EXIT_WAIT)
        except asyncio.TimeoutError:
            raise AssertionError(f"still running; stderr:\n{self.stderr()}") from None


Start = Callable[..., Awaitable[WorkerProcess]]


@pytest.fixture
async def start(tmp_path: Path) -> AsyncIterator[Start]:
    """Starts ``python -m lanemq worker args...`` in ``tmp_path`` (where ``app.py`` is);
    every child still running at teardown is killed, by PID."""
    (tmp_path / "app.py").write_text(APP)
    # The queue files exist before the command opens them (app.py opens them all), so the
    # test never creates a file while the child does: that race is the local backend's own
    # business (tests/test_local_files.py), not the command's.
    for name in APP_QUEUES:
        await LocalJobQueue(name, tmp_path / "data").close()
    children: list[WorkerProcess] = []

    async def run(*args: str, runner: list[str] | None = None) -> WorkerProcess:
        stderr = tmp_path / f"worker-{len(children) + 1}.stderr"
        with stderr.open("wb") as err:
            proc = await asyncio.create_subprocess_exec(
                *(runner or [sys.executable, "-m", "lanemq"]),
                "worker",
                *args,
                cwd=tmp_path,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=err,
            )
        child = WorkerProcess(proc, stderr)
        children.append(child)
        return child

    try:
        yield run
    finally:
        for child in children:
            if child.proc.returncode is None:
                child.signal(signal.SIGKILL)
                await child.proc.wait()


@pytest.fixture
async def jobs(tmp_path: Path) -> AsyncIterator[LocalJobQueue]:
    queue = LocalJobQueue("jobs", tmp_path / "data")
    try:
        yield queue
    finally:
        await queue.close()


def marker(tmp_path: Path) -> list[str]:
    path = tmp_path / "marker.txt"
    return path.read_text().splitlines() if path.exists() else []


async def until_active(queue: LocalJobQueue, job_id: str, child: WorkerProcess) -> None:
    async def active() -> bool:
        if child.proc.returncode is not None:
            raise AssertionError(f"the worker exited; stderr:\n{child.stderr()}")
        return await queue.get_state(job_id) == "active"

    await eventually(active, f"job {job_id} active")


async def until_logged(child: WorkerProcess, text: str) -> None:
    async def logged() -> bool:
        return text in child.stderr()

    await eventually(logged, f"{text!r} in the worker's log")


# ------------------------------------------------------------------------ stopping


async def test_sigterm_lets_the_running_job_finish_and_exits_0(
    tmp_path: Path, start: Start, jobs: LocalJobQueue
) -> None:
    job = await jobs.add("sleep", 1.0)
    child = await start("app:worker")
    await until_active(jobs, job.id, child)
    child.signal(signal.SIGTERM)
    assert await child.exit_code() == 0, child.stderr()
    assert marker(tmp_path) == [job.id]  # it ran to the end, exactly once
    finished = await jobs.get_job(job.id)
    assert finished is not None and finished.state == "completed"
    assert finished.return_value == {"slept": 1.0}
    log = child.stderr()
    # time, level, logger name, message
    assert re.search(
        r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} INFO lanemq\.cli: SIGTERM: ", log, re.M
    )
    assert "running on queue jobs (concurrency 1)" in log


async def test_a_job_longer_than_the_grace_goes_back_to_waiting(
    tmp_path: Path, start: Start, jobs: LocalJobQueue
) -> None:
    job = await jobs.add("sleep", 600.0)
    child = await start("app:worker", "--grace", "0.5")
    await until_active(jobs, job.id, child)
    child.signal(signal.SIGTERM)
    assert await child.exit_code() == 0, child.stderr()
    back = await jobs.get_job(job.id)
    assert back is not None
    assert (back.state, back.attempts_made, back.failed_reason) == ("waiting", 0, None)
    assert marker(tmp_path) == []


async def test_a_second_signal_releases_running_jobs_at_once(
    tmp_path: Path, start: Start, jobs: LocalJobQueue
) -> None:
    job = await jobs.add("sleep", 600.0)
    child = await start("app:worker", "--grace", "600")
    await until_active(jobs, job.id, child)
    child.signal(signal.SIGINT)
    await until_logged(child, "SIGINT: stopping")
    child.signal(signal.SIGINT)
    assert await child.exit_code() == 0, child.stderr()
    back = await jobs.get_job(job.id)
    assert back is not None and (back.state, back.attempts_made) == ("waiting", 0)
    assert "SIGINT again: releasing the running jobs now" in child.stderr()


async def test_a_third_signal_exits_at_once_when_a_job_will_not_stop(
    tmp_path: Path, start: Start, jobs: LocalJobQueue
) -> None:
    job = await jobs.add("stubborn", None)
    child = await start("app:worker")
    await until_active(jobs, job.id, child)
    child.signal(signal.SIGTERM)
    await until_logged(child, "SIGTERM: stopping")
    child.signal(signal.SIGTERM)

    async def cancelled() -> bool:
        return "ignored a cancel" in marker(tmp_path)

    await eventually(cancelled, "the release's cancellation")
    assert child.proc.returncode is None  # the job would not stop: still waiting for it
    child.signal(signal.SIGTERM)
    assert await child.exit_code() == 1, child.stderr()
    assert "SIGTERM a third time: exiting without waiting" in child.stderr()
    assert await jobs.get_state(job.id) == "active"  # left to stalled recovery


# ------------------------------------------------------------------------ targets


async def _run_until_done(tmp_path: Path, child: WorkerProcess, needs: dict[str, int]) -> None:
    """Adds ``needs[name]`` jobs to queue ``name``, each of which waits until that many run
    at once; waits until all completed; stops the command (exit 0)."""
    queues = {name: LocalJobQueue(name, tmp_path / "data") for name in needs}
    try:
        for name, count in needs.items():
            for _ in range(count):
                await queues[name].add("together", count)

        async def all_done() -> bool:
            if child.proc.returncode is not None:
                raise AssertionError(f"the worker exited; stderr:\n{child.stderr()}")
            for name, count in needs.items():
                if (await queues[name].get_job_counts("completed"))["completed"] < count:
                    return False
            return True

        await eventually(all_done, f"the jobs of {sorted(needs)} completed", CHILD_WAIT * 2)
        child.signal(signal.SIGTERM)
        assert await child.exit_code() == 0, child.stderr()
    finally:
        for queue in queues.values():
            await queue.close()


async def test_lists_async_factories_and_the_concurrency_override(
    tmp_path: Path, start: Start
) -> None:
    # Each job waits for a second one of its queue to start: concurrency 1 would never end.
    child = await start("app:make_pair", "app:make_async", "app:both", "--concurrency", "2")
    await _run_until_done(tmp_path, child, {"pair-a": 2, "pair-b": 2, "async": 2, "jobs": 0})
    log = child.stderr()
    assert log.count("(concurrency 2)") == 4  # pair-a, pair-b, async, jobs: each wired once


async def test_config_file_with_concurrency_per_target(tmp_path: Path, start: Start) -> None:
    (tmp_path / "workers.toml").write_text(
        textwrap.dedent(
            """
            [[workers]]
            target = "app:solo"
            concurrency = 3

            [[workers]]
            target = "app:make_async"
            """
        )
    )
    child = await start("--config", "workers.toml", "--concurrency", "2")
    await _run_until_done(tmp_path, child, {"solo": 3, "async": 2})


async def test_the_current_directory_is_importable_without_python_m(
    tmp_path: Path, start: Start
) -> None:
    # As the installed `lanemq` script runs: sys.path[0] is the script's directory.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "lanemq_script.py").write_text("from lanemq.cli import main\nmain()\n")
    child = await start(
        "app:make_async",
        "--concurrency",
        "2",
        runner=[sys.executable, str(bin_dir / "lanemq_script.py")],
    )
    await _run_until_done(tmp_path, child, {"async": 2})


# ------------------------------------------------------------------------ refusals


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["nowhere:worker"], "target 'nowhere:worker': no module named 'nowhere'"),
        (["app:missing"], "target 'app:missing': 'app' has no attribute 'missing'"),
        (["app"], "target 'app': expected 'module.path:attribute'"),
        (["app:not_a_worker"], "target 'app:not_a_worker': is 3 (type int); expected a JobWorker"),
        (["app:returns_wrong"], "target 'app:returns_wrong': returned 3 (type int)"),
        (["app:raises"], "calling it raised RuntimeError: no database configured"),
        (["app:a_processor"], "target 'app:a_processor': is a function that takes arguments"),
        (["broken:worker"], "target 'broken:worker': importing 'broken' raised ZeroDivisionError"),
        ([], "name at least one TARGET"),
        (["app:worker", "--concurrency", "0"], "Invalid value for '--concurrency'"),
        (["--config", "missing.toml"], "'missing.toml' does not exist"),
        (["--config", "bad.toml"], "cannot read config file 'bad.toml'"),
        (["--config", "typo.toml"], "unknown key 'concurency'"),
    ],
)
async def test_bad_targets_exit_2_naming_them(tmp_path: Path, args: list[str], says: str) -> None:
    (tmp_path / "app.py").write_text(APP)
    (tmp_path / "broken.py").write_text("1 / 0\n")
    (tmp_path / "bad.toml").write_text("[[workers]\n")
    (tmp_path / "typo.toml").write_text('[[workers]]\ntarget = "app:worker"\nconcurency = 2\n')
    result = await lanemq("worker", *args, cwd=tmp_path)
    assert result.code == 2, result
    assert says in result.err, result.err
