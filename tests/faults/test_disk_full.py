"""Disk faults of the local backend: the queue's directory runs out of room (a 2 MiB tmpfs
filled to the last byte where this machine lets the test mount one, which needs root;
RLIMIT_FSIZE at the files' current sizes in a child process, which works anywhere). A write
that cannot commit raises, nothing acknowledged is lost, and the queue works again, the same
object and after reopening, once there is room."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from .execlog import report

SCRIPT = Path(__file__).parent / "disk_child.py"


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A 2 MiB tmpfs in tmp_path, unmounted at teardown; where mounting is not permitted,
    a plain directory and the file-size limit instead (said in the test's output)."""
    directory = tmp_path / "disk"
    directory.mkdir()
    mount = ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(directory)]
    mounted = subprocess.run(mount, capture_output=True, text=True, check=False)
    if mounted.returncode != 0:
        print(f"\nno tmpfs ({mounted.stderr.strip()}): RLIMIT_FSIZE instead")
        yield "fsize", directory
        return
    try:
        yield "tmpfs", directory
    finally:
        subprocess.run(["umount", str(directory)], check=True)


def _run(mode: str, directory: Path) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), mode, str(directory)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    figures: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    return figures


def _check(figures: dict[str, object]) -> None:
    errors = figures["errors"]
    assert isinstance(errors, list)
    report(
        f"disk full ({figures['mode']}, local)",
        acknowledged=figures["acknowledged"],
        acknowledged_while_filling=figures["acknowledged_while_full"],
        writes_refused=len(errors),
        complete_while_full=figures["complete_while_full"],
        lost=len(figures["lost"]),  # type: ignore[arg-type]
        first_error=repr(errors[0]) if errors else None,
    )
    assert len(errors) >= 4, "the full disk refused no write"  # the add, then 3 more
    assert figures["lost"] == []
    assert figures["not_completed"] == []


def test_a_full_tmpfs_refuses_writes_loses_nothing_and_recovers(
    small_disk: tuple[str, Path],
) -> None:
    _check(_run(*small_disk))


def test_a_file_size_limit_refuses_writes_loses_nothing_and_recovers(tmp_path: Path) -> None:
    directory = tmp_path / "limited"
    directory.mkdir()
    _check(_run("fsize", directory))
