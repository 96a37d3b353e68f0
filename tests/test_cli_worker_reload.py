"""``lanemq worker --reload``: a supervisor process that runs the worker in a child and
restarts it when a source file changes, run as a real subprocess on a module in a tmp dir;
the test edits the module and sees the new child (its PID) and the new code (a job's result);
SIGTERM ends the supervisor with 0 and leaves no child behind."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
from cli_support import lanemq
from lanemq import LocalJobQueue
from support import CHILD_WAIT, eventually

EXIT_WAIT = 30.0  # upper bound for the supervisor to exit after SIGTERM; never reached

APP = """
import lanemq

async def version(job: lanemq.Job) -> str:
    return {answer!r}

worker = lanemq.JobWorker(lanemq.LocalJobQueue("jobs", "./data"), {{"version": version}})
"""

STARTED = re.compile(r"worker process (\d+) started")


class Supervisor:
    def __init__(self, proc: asyncio.subprocess.Process, stderr: Path) -> None:
        self.proc = proc
        self.stderr_path = stderr

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def children(self) -> list[int]:
        return [int(pid) for pid in STARTED.findall(self.stderr())]

    async def until_children(self, count: int) -> list[int]:
        async def started() -> bool:
            if self.proc.returncode is not None:
                raise AssertionError(f"the supervisor exited; stderr:\n{self.stderr()}")
            return len(self.children()) >= count

        await eventually(started, f"worker process number {count}")
        return self.children()


Start = Callable[..., Awaitable[Supervisor]]


@pytest.fixture
async def start(tmp_path: Path) -> AsyncIterator[Start]:
    """Starts ``python -m lanemq worker args... --reload`` in ``tmp_path`` (where ``app.py``
    is); a supervisor or child still running at teardown is killed, by PID."""
    (tmp_path / "app.py").write_text(APP.format(answer="v1"))
    await LocalJobQueue("jobs", tmp_path / "data").close()
    started: list[Supervisor] = []

    async def run(*args: str) -> Supervisor:
        stderr = tmp_path / f"supervisor-{len(started) + 1}.stderr"
        with stderr.open("wb") as err:
            proc = await asyncio.create_subprocess_exec(
                *(sys.executable, "-m", "lanemq", "worker", *args, "--reload", "--grace", "5"),
                cwd=tmp_path,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=err,
            )
        started.append(Supervisor(proc, stderr))
        return started[-1]

    try:
        yield run
    finally:
        for running in started:
            if running.proc.returncode is None:
                for pid in running.children():  # (by PID: children have their own sessions)
                    if alive(pid):
                        os.kill(pid, signal.SIGKILL)
                running.proc.kill()
                await running.proc.wait()


@pytest.fixture
async def supervisor(start: Start) -> Supervisor:
    return await start("app:worker")


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def result_of(queue: LocalJobQueue) -> str:
    job = await queue.add("version", None)
    return str(await job.wait(timeout=CHILD_WAIT))


async def test_an_edited_module_restarts_the_worker_with_the_new_code(
    tmp_path: Path, supervisor: Supervisor
) -> None:
    queue = LocalJobQueue("jobs", tmp_path / "data")
    try:
        (first,) = await supervisor.until_children(1)
        assert await result_of(queue) == "v1"

        (tmp_path / "app.py").write_text(APP.format(answer="v2"))
        first_again, second = await supervisor.until_children(2)
        assert first_again == first and second != first
        assert await result_of(queue) == "v2"
        assert not alive(first)  # stopped before the new one started
        assert "changed: app.py" in supervisor.stderr()
        assert "waiting for a change" not in supervisor.stderr()  # (a restart, not a crash)

        # A file that is not Python source changes nothing.
        (tmp_path / "notes.txt").write_text("not code")
        assert await result_of(queue) == "v2"

        supervisor.proc.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(supervisor.proc.wait(), EXIT_WAIT)
        assert code == 0, supervisor.stderr()
        assert supervisor.children() == [first, second]
        assert not alive(second)
        assert f"worker process {second} exited with code 0" in supervisor.stderr()
    finally:
        await queue.close()


async def test_an_edited_config_file_restarts_the_worker_even_outside_the_reload_dirs(
    tmp_path: Path, start: Start
) -> None:
    config = tmp_path / "workers.toml"
    config.write_text('[[workers]]\ntarget = "app:worker"\n')
    (tmp_path / "src").mkdir()
    supervisor = await start("--config", "workers.toml", "--reload-dir", "src")
    (first,) = await supervisor.until_children(1)
    queue = LocalJobQueue("jobs", tmp_path / "data")
    try:
        assert await result_of(queue) == "v1"
        config.write_text('[[workers]]\ntarget = "app:worker"\nconcurrency = 2\n')
        _, second = await supervisor.until_children(2)
        assert second != first and "changed: workers.toml" in supervisor.stderr()
        assert await result_of(queue) == "v1"
        supervisor.proc.send_signal(signal.SIGINT)
        assert await asyncio.wait_for(supervisor.proc.wait(), EXIT_WAIT) == 0
        assert not alive(second)
    finally:
        await queue.close()


async def test_a_module_that_breaks_waits_for_the_fix(
    tmp_path: Path, supervisor: Supervisor
) -> None:
    queue = LocalJobQueue("jobs", tmp_path / "data")
    try:
        await supervisor.until_children(1)
        assert await result_of(queue) == "v1"
        (tmp_path / "app.py").write_text("this is not python\n")
        _, broken = await supervisor.until_children(2)

        async def reported() -> bool:
            return f"worker process {broken} exited with code 2" in supervisor.stderr()

        await eventually(reported, "the broken child's exit")
        assert supervisor.proc.returncode is None  # the supervisor waits for a change
        (tmp_path / "app.py").write_text(APP.format(answer="v3"))
        await supervisor.until_children(3)
        assert await result_of(queue) == "v3"
        supervisor.proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(supervisor.proc.wait(), EXIT_WAIT) == 0
    finally:
        await queue.close()


async def test_reload_without_watchfiles_is_a_usage_error_naming_the_extra(
    tmp_path: Path,
) -> None:
    # (the package is hidden from this one process: None in sys.modules fails its import)
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        "import sys; sys.modules['watchfiles'] = None; from lanemq.cli import main; main()",
        *("worker", "app:worker", "--reload"),
        cwd=tmp_path,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    _, err = await asyncio.wait_for(proc.communicate(), EXIT_WAIT)
    assert proc.returncode == 2
    assert "lanemq[reload]" in err.decode()


async def test_reload_dir_must_be_a_directory_and_goes_with_reload(tmp_path: Path) -> None:
    missing = await lanemq(
        "worker", "app:worker", "--reload", "--reload-dir", "nowhere", cwd=tmp_path
    )
    assert missing.code == 2 and "'nowhere' is not a directory" in missing.err
    alone = await lanemq("worker", "app:worker", "--reload-dir", ".", cwd=tmp_path)
    assert alone.code == 2 and "--reload-dir goes with --reload" in alone.err
