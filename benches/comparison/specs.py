"""What the orchestrator and the runners agree on: the systems, the table's rows, and the spec
of one (system, workload) run, passed to a runner as JSON."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

SYSTEMS: tuple[str, ...] = ("lanemq", "bullmq-node", "bullmq-python", "saq")
LABELS: dict[str, str] = {
    "lanemq": "lanemq",
    "bullmq-node": "BullMQ Node",
    "bullmq-python": "BullMQ Python",
    "saq": "saq",
}
RATIO_LABELS: dict[str, str] = {
    "bullmq-node": "lanemq/BullMQ-Node",
    "bullmq-python": "lanemq/BullMQ-Python",
    "saq": "lanemq/saq",
}
QUEUE = "bench"
WARMUP = 200
RESULT_PREFIX = "RESULT "


@dataclass
class Counts:
    single: int
    bulk: int
    batch: int
    process: int
    concurrency: list[int]
    latency: int
    gap_ms: float


@dataclass
class Row:
    """A table row: a workload (and for process, a concurrency); `field` picks the value."""

    key: str
    workload: str
    unit: str
    concurrency: int | None = None
    field: str = "value"


def rows_for(counts: Counts) -> list[Row]:
    rows = [Row("add_single", "add_single", "jobs/s"), Row("add_bulk", "add_bulk", "jobs/s")]
    rows += [Row(f"process@{c}", "process", "jobs/s", c) for c in counts.concurrency]
    rows += [
        Row("latency p50", "latency", "ms", field="p50"),
        Row("latency p99", "latency", "ms", field="p99"),
    ]
    return rows


def workload_spec(
    row_workload: str, concurrency: int | None, counts: Counts, port: int, timeout: float
) -> dict[str, Any]:
    n = {
        "add_single": counts.single,
        "add_bulk": counts.bulk,
        "process": counts.process,
        "latency": counts.latency,
    }[row_workload]
    return {
        "workload": row_workload,
        "host": "127.0.0.1",
        "port": port,
        "n": n,
        "batch": counts.batch,
        "concurrency": concurrency or 1,
        "gap_ms": counts.gap_ms,
        "timeout_s": timeout,
        "stats": row_workload == "process",
        "slowlog": False,
    }
