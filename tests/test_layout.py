"""The layout rules a reader relies on, checked by running the project's own scripts."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def jobs_imports(root: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """`scripts/jobs-imports` of the tree at `root`, run as anyone would run it."""
    return subprocess.run(
        [sys.executable, str(root / "scripts" / "jobs-imports")],
        capture_output=True,
        text=True,
        check=False,
    )


def test_the_job_contract_and_lifecycle_use_no_implementation() -> None:
    run = jobs_imports()
    assert run.returncode == 0, run.stdout + run.stderr
    assert "OK: no contract, shared or lifecycle file uses an implementation" in run.stdout
    # The listing names each group and the shared state machine's users.
    for heading in ("# contract", "# shared", "# lifecycle", "# implementation"):
        assert heading in run.stdout
    assert "memory::storage" in run.stdout and "local::storage" in run.stdout


def test_no_import_circle_in_the_redis_crate_or_the_shared_job_modules() -> None:
    run = jobs_imports()
    assert run.returncode == 0, run.stdout + run.stderr
    assert "OK: no import circle in jobs/ contract and shared modules" in run.stdout
    assert "OK: no import circle in crates/lanemq-core/src/jobs/" in run.stdout
    assert "OK: no import circle in crates/lanemq-redis/src/" in run.stdout
    # The Redis crate is listed by layer, its topology at the bottom.
    assert "## crates/lanemq-redis/src/ (by layer" in run.stdout


def test_a_circle_inside_an_implementation_folder_fails_the_check(tmp_path: Path) -> None:
    """A copy of the tree where the memory store's lowest file uses the store: the check
    names the circle and exits 1 (folders are layered, not only the shared modules)."""
    shutil.copytree(ROOT / "scripts", tmp_path / "scripts")
    for crate in ("lanemq-core", "lanemq-redis"):
        shutil.copytree(ROOT / "crates" / crate / "src", tmp_path / "crates" / crate / "src")
    lowest = tmp_path / "crates/lanemq-core/src/jobs/memory/job_id.rs"
    lowest.write_text(lowest.read_text() + "\nuse super::store::MemoryStore;\n")
    run = jobs_imports(tmp_path)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "FAIL: import circle in crates/lanemq-core/src/jobs/" in run.stdout
    assert "memory::job_id" in run.stdout and "memory::store" in run.stdout
