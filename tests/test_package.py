"""What the package says of itself: its version is the crates' (one source, Cargo.toml), and
the binary says which build it is (the benches print it)."""

from __future__ import annotations

import importlib
import json
import re
import subprocess
import sys
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


# Every module path the README, the examples, the tests or the benches name, with a name
# each one gives: a module that moves into a package leaves its old path working.
DOCUMENTED_PATHS = {
    "lanemq.cli": "main",
    "lanemq.dashboard": "app",
    "lanemq.events": "Subscription",
    "lanemq.lanes": "QueueManager",
    "lanemq.metrics_sink": "LaneMetricsSink",
    "lanemq.monitor": "LaneMonitor",
    "lanemq.observe": "MetricsTime",
    "lanemq.otel": "instrument",
    "lanemq.otel_metrics_sink": "OTelMetricsSink",
    "lanemq.prometheus": "LanemqCollector",
    "lanemq.queue": "LocalSync",
    "lanemq.sync": "LocalJobQueue",
    "lanemq.urls": "local_queue_file",
    "lanemq.wiring": "build_service",
    "lanemq.worker": "JobWorker",
}


def test_every_documented_module_path_imports_and_gives_its_names() -> None:
    # In a fresh interpreter, so that no earlier import has made a path work by accident.
    script = (
        "import importlib, json, sys\n"
        "paths = json.loads(sys.argv[1])\n"
        "for path, name in paths.items():\n"
        "    module = importlib.import_module(path)\n"
        "    assert hasattr(module, name), (path, name)\n"
        "print('ok', len(paths))\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", script, json.dumps(DOCUMENTED_PATHS)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["ok", str(len(DOCUMENTED_PATHS))]


def test_the_public_names_are_the_ones_the_package_root_gives() -> None:
    # (lanemq.sync's queues are the blocking twins of the root's, not the same objects)
    for path, name in DOCUMENTED_PATHS.items():
        module = importlib.import_module(path)
        if name in lanemq.__all__ and path != "lanemq.sync":
            assert getattr(module, name) is getattr(lanemq, name), (path, name)


# The modules that moved into lanemq.observability: their old paths give the same objects.
MOVED_TO_OBSERVABILITY = (
    "metrics_sink",
    "monitor",
    "observe",
    "otel",
    "otel_metrics_sink",
    "prometheus",
)


def test_the_observability_modules_old_paths_give_the_same_objects() -> None:
    for name in MOVED_TO_OBSERVABILITY:
        old = importlib.import_module(f"lanemq.{name}")
        new = importlib.import_module(f"lanemq.observability.{name}")
        assert old.__all__ == new.__all__, name
        for public in new.__all__:
            assert getattr(old, public) is getattr(new, public), (name, public)


def test_the_dashboard_does_not_import_the_cli_or_click() -> None:
    # The dashboard shares the CLI's formatting (lanemq._format), not the CLI itself.
    script = (
        "import sys\n"
        "import lanemq.dashboard\n"
        "print(sorted(m for m in sys.modules if m == 'click' or m.startswith('click.')"
        " or m.startswith('lanemq.cli')))\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]"
