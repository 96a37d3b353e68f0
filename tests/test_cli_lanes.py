"""``lanemq lanes worker``, run as a real subprocess with an application module the test writes
in its directory: its help, a bad target and in-process lanes asked for by several processes
exit 2 naming the problem; with a local backend, N=2 children start, a command the test
process submits runs in one of them and its result comes back, a child killed by SIGKILL is
replaced and work still runs, and SIGTERM to the supervisor exits 0 with no child left."""

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
from lanemq import LaneConfig, QueueManager
from support import CHILD_WAIT, Child, kill_all

APP = """
import os

from lanemq import LaneConfig, QueueManager

LANES = [LaneConfig("work", priority=0, max_concurrency=4)]


def make() -> QueueManager:
    manager = QueueManager(LANES, backend="local:./lanes", name="agents", lease=2.0)

    async def whoami(payload: dict) -> dict:
        return {"pid": os.getpid(), "n": payload["n"]}

    manager.register("whoami", whoami)
    return manager


def in_process() -> QueueManager:
    return QueueManager(LANES)


not_a_manager = 3


def needs_a_name(name: str) -> QueueManager:
    return QueueManager(LANES)
"""


@pytest.fixture(name="app_dir")
def app_dir_fixture(tmp_path: Path) -> Path:
    (tmp_path / "app.py").write_text(APP)
    return tmp_path


async def test_help_names_the_options(app_dir: Path) -> None:
    result = await lanemq("lanes", "worker", "--help", cwd=app_dir)
    assert result.code == 0, result.err
    for option in ("MODULE:ATTR", "--processes", "--grace", "backend="):
        assert option in result.out
    assert "--child" not in result.out  # the children's own flag is not for people


@pytest.mark.parametrize(
    ("target", "problem"),
    [
        ("app:missing", "'app' has no attribute 'missing'"),
        ("nowhere:make", "no module named 'nowhere'"),
        ("app:not_a_manager", "is 3 (type int); expected a QueueManager"),
        ("app:needs_a_name", "is a function that takes arguments"),
        ("app", "expected 'module.path:attribute'"),
    ],
)
async def test_a_bad_target_exits_2_naming_it(app_dir: Path, target: str, problem: str) -> None:
    result = await lanemq("lanes", "worker", target, "--processes", "1", cwd=app_dir)
    assert result.code == 2, result.err
    assert f"target {target!r}" in result.err
    assert problem in result.err
    assert "started" not in result.out  # no process was started


async def test_several_processes_without_a_backend_exit_2(app_dir: Path) -> None:
    result = await lanemq("lanes", "worker", "app:in_process", "--processes", "2", cwd=app_dir)
    assert result.code == 2, result.err
    assert "cannot be shared by 2 processes" in result.err
    assert "pass backend=" in result.err
    assert "started" not in result.out


# ------------------------------------------------------------ processes on a local backend

STARTED = re.compile(r"^lanes worker: process (\d+)/(\d+) started \(pid (\d+)\)$")


class Supervised:
    """A ``python -m lanemq lanes worker`` supervisor and the child PIDs it printed."""

    def __init__(self, child: Child) -> None:
        self.child = child
        self.pids: dict[int, int] = {}  # process number -> its current child's PID

    async def started(self) -> tuple[int, int]:
        """Reads the supervisor's lines up to the next child start: (number, pid)."""
        while True:
            line = await self.child.line()
            found = STARTED.match(line)
            if found is not None:
                number, pid = int(found[1]), int(found[3])
                self.pids[number] = pid
                return number, pid


Supervise = Callable[..., Awaitable[Supervised]]


@pytest.fixture
async def supervise(app_dir: Path) -> AsyncIterator[Supervise]:
    """Starts ``python -m lanemq lanes worker args...`` in the app's directory; at teardown
    the supervisor and every child PID it printed are killed if still there."""
    started: list[Supervised] = []

    async def run(*args: str) -> Supervised:
        stderr = app_dir / f"supervisor-{len(started) + 1}.stderr"
        with stderr.open("wb") as err:
            proc = await asyncio.create_subprocess_exec(
                *(sys.executable, "-m", "lanemq", "lanes", "worker", *args),
                cwd=app_dir,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=err,
            )
        supervised = Supervised(Child(proc, stderr))
        started.append(supervised)
        return supervised

    try:
        yield run
    finally:
        await kill_all(s.child for s in started)
        for supervised in started:
            for pid in supervised.pids.values():
                if alive(pid):
                    os.kill(pid, signal.SIGKILL)


def alive(pid: int) -> bool:
    """Whether a process ``pid`` exists (the supervisor reaps its children: a child that
    ended is gone, not a zombie, once the supervisor waited for it or exited)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture
async def submitter(app_dir: Path) -> AsyncIterator[QueueManager]:
    """A manager of the test process on the app's backend and name that registers nothing:
    what it submits runs in the worker processes."""
    manager = QueueManager(
        [LaneConfig("work", priority=0, max_concurrency=4)],
        backend=f"local:{app_dir / 'lanes'}",
        name="agents",
        # (short: a killed child's lease runs out, and its turn passes, well within a wait)
        lease=2.0,
    )
    async with manager:
        yield manager


async def run_in_children(submitter: QueueManager, count: int) -> set[int]:
    """Submits ``count`` commands at once; returns the PIDs that ran them."""

    async def one(n: int) -> dict[str, int]:
        handle = await submitter.submit_named("work", "whoami", {"n": n})
        result: dict[str, int] = await handle
        return result

    results = await asyncio.wait_for(asyncio.gather(*map(one, range(count))), CHILD_WAIT)
    assert [result["n"] for result in results] == list(range(count))
    return {result["pid"] for result in results}


async def test_two_processes_run_submitted_commands_and_sigterm_exits_0(
    supervise: Supervise, submitter: QueueManager
) -> None:
    supervised = await supervise("app:make", "--processes", "2")
    assert sorted([await supervised.started(), await supervised.started()]) == [
        (1, supervised.pids[1]),
        (2, supervised.pids[2]),
    ]
    children = set(supervised.pids.values())
    assert len(children) == 2 and supervised.child.pid not in children

    ran_in = await run_in_children(submitter, 1)
    assert ran_in <= children and os.getpid() not in ran_in

    supervised.child.proc.send_signal(signal.SIGTERM)
    assert await supervised.child.wait(CHILD_WAIT * 3) == 0, supervised.child.stderr()
    assert not [pid for pid in children if alive(pid)]


async def test_a_killed_child_is_replaced_and_work_still_runs(
    supervise: Supervise, submitter: QueueManager
) -> None:
    supervised = await supervise("app:make", "--processes", "2")
    await supervised.started()
    await supervised.started()
    killed = supervised.pids[1]
    os.kill(killed, signal.SIGKILL)

    number, replacement = await supervised.started()
    assert number == 1 and replacement != killed
    assert not alive(killed)
    ran_in = await run_in_children(submitter, 8)
    assert ran_in <= set(supervised.pids.values()) and killed not in ran_in

    supervised.child.proc.send_signal(signal.SIGTERM)
    assert await supervised.child.wait(CHILD_WAIT * 3) == 0, supervised.child.stderr()
    assert not [pid for pid in supervised.pids.values() if alive(pid)]
