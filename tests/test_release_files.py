"""The release files: the workflow that publishes on a tag (.github/workflows/release.yml,
which cannot run here, so its shape is checked instead), the pinned toolchain it builds with,
and the test command's venv, kept apart from the one the README installs a release build into."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
WORKFLOW = ROOT / ".github" / "workflows" / "release.yml"


def load_workflow() -> dict[Any, Any]:
    loaded = yaml.safe_load(WORKFLOW.read_text())
    assert isinstance(loaded, dict)
    return loaded


def steps_using(job: dict[str, Any], action: str) -> list[dict[str, Any]]:
    return [step for step in job["steps"] if str(step.get("uses", "")).startswith(action + "@")]


def test_the_workflow_runs_on_a_version_tag() -> None:
    workflow = load_workflow()
    # YAML 1.1 reads the bare key `on` as the boolean true.
    triggers = workflow.get("on", workflow.get(True))
    assert triggers["push"]["tags"] == ["v*"]


def test_wheels_for_glibc_and_musl_on_x86_64_and_aarch64_built_by_maturin() -> None:
    job = load_workflow()["jobs"]["wheels"]
    platforms = {(row["manylinux"], row["target"]) for row in job["strategy"]["matrix"]["include"]}
    assert platforms == {
        ("manylinux2014", "x86_64"),
        ("manylinux2014", "aarch64"),
        ("musllinux_1_2", "x86_64"),
        ("musllinux_1_2", "aarch64"),
    }
    [build] = steps_using(job, "PyO3/maturin-action")
    assert build["with"]["target"] == "${{ matrix.target }}"
    assert build["with"]["manylinux"] == "${{ matrix.manylinux }}"
    assert "--release" in build["with"]["args"].split()
    assert "--strip" in build["with"]["args"].split()


def test_the_sdist_is_built_by_maturin() -> None:
    job = load_workflow()["jobs"]["sdist"]
    [build] = steps_using(job, "PyO3/maturin-action")
    assert build["with"]["command"] == "sdist"


def test_publishing_waits_for_every_build_and_uses_trusted_publishing() -> None:
    job = load_workflow()["jobs"]["publish"]
    assert set(job["needs"]) == {"wheels", "sdist"}
    assert "refs/tags/v" in job["if"]
    # Trusted publishing: an OIDC token, and no password or API token anywhere.
    assert job["permissions"] == {"id-token": "write"}
    [upload] = steps_using(job, "pypa/gh-action-pypi-publish")
    assert "password" not in upload.get("with", {})
    assert "secrets." not in WORKFLOW.read_text()


def test_the_wheels_are_built_with_the_pinned_toolchain() -> None:
    toolchain = (ROOT / "rust-toolchain.toml").read_text()
    pinned = re.search(r'^channel = "(\d+\.\d+\.\d+)"$', toolchain, re.MULTILINE)
    assert pinned is not None, "rust-toolchain.toml pins an exact version"
    job = load_workflow()["jobs"]["wheels"]
    [read_step] = [step for step in job["steps"] if step.get("id") == "rust"]
    # The workflow's own shell command, run here on the pinned file, finds that version.
    command = read_step["run"].split('echo "channel=$(', 1)[1].rsplit(')"', 1)[0]
    found = subprocess.run(
        ["sh", "-c", command], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()
    assert found == pinned.group(1)
    [build] = steps_using(job, "PyO3/maturin-action")
    assert build["with"]["rust-toolchain"] == "${{ steps.rust.outputs.channel }}"


def test_the_test_command_keeps_out_of_the_venv_the_readme_installs_into() -> None:
    # scripts/test's `maturin develop` replaces the lanemq of the venv it builds into with a
    # debug build: that must not be the venv the README's `pip install .` fills.
    readme = (ROOT / "README.md").read_text()
    readme_venv = re.search(r"python3 -m venv (\S+) && \. \1/bin/activate", readme)
    assert readme_venv is not None
    test_venv = re.search(
        r"^venv=\$\{LANEMQ_VENV:-\$root/(\S+)\}$", (ROOT / "scripts/test").read_text(), re.MULTILINE
    )
    assert test_venv is not None
    assert test_venv.group(1) != readme_venv.group(1)
