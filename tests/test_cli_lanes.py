"""``lanemq lanes worker``, run as a real subprocess with an application module the test writes
in its directory: its help, a bad target and in-process lanes asked for by several processes
exit 2 naming the problem."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_support import lanemq

APP = """
from lanemq import LaneConfig, QueueManager

LANES = [LaneConfig("work", priority=0, max_concurrency=4)]


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
