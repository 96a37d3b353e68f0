"""Reading the execution logs the fault tests' processes write (`worker_child.py`), the
figures each test prints, and what /proc says of a process the test started."""

from __future__ import annotations

import os
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass
class Runs:
    """What the execution logs say: per job, the pids that started it (in log order), the
    pids that finished a run, those whose run failed, those whose run was cancelled, and the
    error hook calls."""

    starts: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    finishes: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    failures: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    cancelled: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    errors: list[tuple[str, int, str]] = field(default_factory=list)

    @classmethod
    def read(cls, *logs: Path) -> Runs:
        runs = cls()
        for log in logs:
            if not log.exists():
                continue
            for line in log.read_text().splitlines():
                kind, job_id, pid, rest = line.split(" ", 3)
                if kind == "start":
                    runs.starts[job_id].append(int(pid))
                elif kind == "finish":
                    runs.finishes[job_id].append(int(pid))
                elif kind == "fail":
                    runs.failures[job_id].append(int(pid))
                elif kind == "cancelled":
                    runs.cancelled[job_id].append(int(pid))
                else:
                    runs.errors.append((job_id, int(pid), rest))
        return runs

    @property
    def duplicates(self) -> int:
        """Runs beyond the first, over every job."""
        return sum(len(pids) - 1 for pids in self.starts.values())

    def rerun(self) -> dict[str, list[int]]:
        return {job_id: pids for job_id, pids in self.starts.items() if len(pids) > 1}

    def error_kinds(self) -> Counter[str]:
        return Counter(kind for _, _, kind in self.errors)


def report(test: str, **figures: object) -> None:
    """One line of the fault table (shown with ``pytest -s``)."""
    shown = " ".join(f"{name}={_shown(value)}" for name, value in figures.items())
    print(f"\nFAULT {test}: {shown}", flush=True)


def _shown(value: object) -> str:
    return f"{value:.2f}" if isinstance(value, float) else str(value)


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of the process ``pid`` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS


def rss_bytes(pid: int) -> int:
    """The resident set size of the process ``pid``."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS for pid {pid}")
