"""What the package says of itself: its version is the crates' (one source, Cargo.toml), and
the binary says which build it is (the benches print it)."""

from __future__ import annotations

import re
from pathlib import Path

import lanemq
from lanemq import _core

ROOT = Path(__file__).resolve().parent.parent


def test_version_is_the_workspace_crates_version() -> None:
    # (a regex rather than tomllib, which Python 3.10 lacks)
    workspace = (ROOT / "Cargo.toml").read_text().split("[workspace.package]", 1)[1]
    found = re.search(r'^version = "([^"]+)"', workspace, re.MULTILINE)
    assert found is not None
    assert lanemq.__version__ == found.group(1)


def test_the_binary_names_its_build_profile() -> None:
    assert _core.BUILD_PROFILE in ("debug", "release")
