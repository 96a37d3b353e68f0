"""Finding, or installing into the scratch directory, what each system needs; a `System` says
whether it is available and how to start its runner."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from _support import tail

NODE_SCRIPT = Path(__file__).resolve().parent.parent / "bullmq_bench.mjs"


@dataclass
class System:
    """A system's availability and how to start its runner."""

    name: str
    status: str = "ok"  # "ok" or "unavailable: <reason>"
    command: list[str] = field(default_factory=list)  # the runner; the spec JSON goes last
    version: str | None = None
    install_log: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def run_command(
    command: Sequence[str], timeout: float, cwd: Path | None = None
) -> tuple[bool, str]:
    """Runs a set-up command; (succeeded, last lines of its output)."""
    try:
        done = subprocess.run(
            list(command),
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
    except FileNotFoundError as error:
        return False, f"{command[0]} not found: {error}"
    except subprocess.TimeoutExpired:
        return False, f"timed out after {timeout:.0f} s"
    output = (done.stdout or "") + (done.stderr or "")
    if done.returncode != 0:
        return False, f"exit {done.returncode}: {tail(output)}"
    return True, tail(output, 1)


def npm_packages(
    system: System, prefix: Path, packages: Sequence[str], have: bool, install: bool
) -> bool:
    """Makes sure npm ``packages`` are under ``prefix`` (``have``: they are already), installing
    them unless ``install`` is off; otherwise ``system`` says why not and this returns False.
    Shared by the Node peers (BullMQ here, Bun and bunqueue in embedded.py)."""
    if have:
        return True
    modules = prefix / "node_modules"
    if not install:
        system.status = f"unavailable: {', '.join(packages)} not in {modules} (--no-install)"
        return False
    npm = shutil.which("npm")
    if npm is None:
        system.status = "unavailable: npm not found on PATH"
        return False
    prefix.mkdir(parents=True, exist_ok=True)
    print(f"installing {', '.join(packages)} into {prefix} ...", flush=True)
    npm_install = [npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund"]
    ok, detail = run_command([*npm_install, *packages], timeout=900)
    system.install_log.append(detail)
    if not ok:
        system.status = f"unavailable: npm install failed: {detail}"
    return ok


def setup_node(scratch: Path, install: bool) -> System:
    """BullMQ (Node): `bullmq_bench.mjs` under node, with bullmq and ioredis in the scratch
    npm prefix."""
    system = System("bullmq-node")
    node = shutil.which("node")
    if node is None:
        system.status = "unavailable: node not found on PATH"
        return system
    prefix = scratch / "node"
    modules = prefix / "node_modules"
    have = all((modules / name / "package.json").is_file() for name in ("bullmq", "ioredis"))
    if not npm_packages(system, prefix, ["bullmq", "ioredis"], have, install):
        return system
    if not NODE_SCRIPT.is_file():
        system.status = f"unavailable: {NODE_SCRIPT} missing"
        return system
    system.command = [node, str(NODE_SCRIPT), str(prefix)]
    return system


@dataclass(frozen=True)
class VenvPeer:
    """A Python peer in a scratch virtualenv: what to import, what to pip install."""

    module: str
    requirements: tuple[str, ...]
    venv: str  # the directory under <scratch>; peers whose pins conflict get their own


# saq's Redis support is its `redis` extra (redis-py < 8, which bullmq accepts too), and saq
# imports typing_extensions without declaring it. taskiq-redis needs redis-py >= 8 and
# ChasquiMQ redis-py < 7, so each has a virtualenv of its own; streaq uses coredis, and gets
# its own too, so that no peer's pins move another's.
VENV_PEERS: dict[str, VenvPeer] = {
    "bullmq-python": VenvPeer("bullmq", ("bullmq",), "venv"),
    "saq": VenvPeer("saq", ("saq[redis]", "typing_extensions"), "venv"),
    "streaq": VenvPeer("streaq", ("streaq",), "venv-streaq"),
    "taskiq": VenvPeer("taskiq_redis", ("taskiq", "taskiq-redis"), "venv-taskiq"),
    "chasquimq": VenvPeer("chasquimq", ("chasquimq",), "venv-chasquimq"),
}


def setup_venv(
    scratch: Path, install: bool, runner_script: Path, names: Sequence[str]
) -> dict[str, System]:
    """The scratch virtualenvs of the Python peers in `names` (see `VENV_PEERS`); one System
    for each (any may be missing), whose runner is `runner_script` in runner mode."""
    systems: dict[str, System] = {}
    by_venv: dict[str, list[str]] = {}
    for name in names:
        by_venv.setdefault(VENV_PEERS[name].venv, []).append(name)
    for venv_name, members in by_venv.items():
        systems.update(setup_one_venv(scratch / venv_name, install, runner_script, members))
    return systems


def setup_one_venv(
    venv: Path, install: bool, runner_script: Path, names: Sequence[str]
) -> dict[str, System]:
    systems = {name: System(name) for name in names}
    python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")

    def importable(module: str) -> bool:
        if not python.is_file():
            return False
        ok, _ = run_command([str(python), "-c", f"import {module}"], timeout=120)
        return ok

    missing = [name for name in names if not importable(VENV_PEERS[name].module)]
    if missing and install:
        if not python.is_file():
            print(f"creating the scratch virtualenv {venv} ...", flush=True)
            ok, detail = run_command([sys.executable, "-m", "venv", str(venv)], timeout=300)
            if not ok:
                for system in systems.values():
                    system.status = f"unavailable: python -m venv failed: {detail}"
                return systems
        packages = [package for name in missing for package in VENV_PEERS[name].requirements]
        print(f"installing {' '.join(packages)} into {venv} ...", flush=True)
        pip = [str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q"]
        ok, detail = run_command([*pip, *packages], timeout=900)
        details = dict.fromkeys(missing, detail)
        if not ok:  # one may install where both together do not
            for name in missing:
                details[name] = run_command([*pip, *VENV_PEERS[name].requirements], 900)[1]
        for name in missing:
            systems[name].install_log.append(details[name])
        missing = [name for name in missing if not importable(VENV_PEERS[name].module)]
        for name in missing:
            reason = details[name] if details[name] != "(no output)" else "not importable after"
            wanted = " ".join(VENV_PEERS[name].requirements)
            systems[name].status = f"unavailable: pip install {wanted}: {reason}"
    elif missing:
        for name in missing:
            module = VENV_PEERS[name].module
            systems[name].status = f"unavailable: {module} not in {venv} (--no-install)"
    for name, system in systems.items():
        if system.ok:
            system.command = [str(python), str(runner_script), "--runner", name, "--spec"]
    return systems


def setup_lanemq(python: str, runner_script: Path) -> System:
    """lanemq: `runner_script` in runner mode under `python`, if that imports lanemq."""
    system = System("lanemq")
    ok, detail = run_command([python, "-c", "import lanemq; lanemq.RedisJobQueue"], timeout=120)
    if not ok:
        system.status = f"unavailable: cannot import lanemq with {python}: {detail}"
    else:
        system.command = [python, str(runner_script), "--runner", "lanemq", "--spec"]
    return system
