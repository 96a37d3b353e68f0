"""What the orchestrator and the runners agree on: the systems, the table's rows, and the spec
of one (system, workload) run, passed to a runner as JSON."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

SYSTEMS: tuple[str, ...] = (
    "lanemq",
    "bullmq-node",
    "bullmq-python",
    "saq",
    "streaq",
    "taskiq",
    "chasquimq",
)
LABELS: dict[str, str] = {
    "lanemq": "lanemq",
    "bullmq-node": "BullMQ Node",
    "bullmq-python": "BullMQ Python",
    "saq": "saq",
    "streaq": "streaq",
    "taskiq": "taskiq",
    "chasquimq": "ChasquiMQ",
}
RATIO_LABELS: dict[str, str] = {name: f"/{LABELS[name]}" for name in SYSTEMS if name != "lanemq"}
# Rows only lanemq's runner measures (the floors), and rows only some systems run.
LANEMQ_ONLY = ("lanemq",)
BACKLOG_SYSTEMS = ("lanemq", "bullmq-node")
# Filling BullMQ's 500,000-job backlog takes most of a minute: in the first round only.
BACKLOG_FIRST_ROUND_ONLY = ("bullmq-node",)
# The peers the targets do not compare with run 1/--peer-scale of the jobs of these workloads
# (a rate hardly depends on the count; their slow runs would otherwise take most of a full
# run's time). The memory row keeps its count: fixed overheads would weigh more per job.
SCALED_PEERS = ("bullmq-python", "saq", "streaq", "taskiq", "chasquimq")
SCALED_WORKLOADS = ("add_single", "add_bulk", "process")
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
    memory: int = 100_000  # no-op jobs bulk-added for the bytes-per-job row
    backlog: int = 500_000  # the deep backlog of the backlog rows
    backlog_small: int = 10_000  # the shallow one
    backlog_take: int = 10_000  # jobs claimed and completed from the head in each
    rtt_calls: int = 5_000  # loop-socket PINGs for the round-trip floor


@dataclass
class Row:
    """A table row: a workload (and for process, a concurrency); `field` picks the value."""

    key: str
    workload: str
    unit: str
    concurrency: int | None = None
    field: str = "value"
    systems: tuple[str, ...] | None = None  # None: every system
    fill: int | None = None  # backlog rows: jobs in the queue before the worker starts
    once: bool = False  # measured in the first round only (not a timing)
    first_round_only: tuple[str, ...] = ()  # systems that run this row in round 1 only

    def runs_on(self, system: str) -> bool:
        return self.systems is None or system in self.systems

    @property
    def run_key(self) -> str:
        """Rows with the same run_key come from one run (latency p50 and p99)."""
        return f"{self.workload}@{self.concurrency}@{self.fill}"


def short_count(n: int) -> str:
    return f"{n // 1000}k" if n >= 1000 and n % 1000 == 0 else str(n)


def rows_for(counts: Counts) -> list[Row]:
    rows = [Row("add_single", "add_single", "jobs/s"), Row("add_bulk", "add_bulk", "jobs/s")]
    rows += [Row(f"process@{c}", "process", "jobs/s", c) for c in counts.concurrency]
    rows += [
        Row("latency p50", "latency", "ms", field="p50"),
        Row("latency p99", "latency", "ms", field="p99"),
        Row("memory/job", "memory", "bytes", field="bytes_per_job", once=True),
    ]
    for fill in (counts.backlog_small, counts.backlog):
        rows.append(
            Row(
                f"backlog {short_count(fill)}",
                "backlog",
                "jobs/s",
                100,
                systems=BACKLOG_SYSTEMS,
                fill=fill,
                first_round_only=BACKLOG_FIRST_ROUND_ONLY,
            )
        )
    rows += [
        Row("round trip", "rtt", "us", systems=LANEMQ_ONLY),
        Row("memory backend@100", "memory_process", "jobs/s", 100, systems=LANEMQ_ONLY),
    ]
    return rows


def scaled_for(spec: dict[str, Any], system: str, peer_scale: int) -> dict[str, Any]:
    """`spec` with 1/peer_scale of the jobs for a peer in `SCALED_PEERS` on a scaled
    workload; unchanged otherwise."""
    if peer_scale <= 1 or system not in SCALED_PEERS or spec["workload"] not in SCALED_WORKLOADS:
        return spec
    return {**spec, "n": max(1, spec["n"] // peer_scale)}


def workload_spec(
    row_workload: str,
    concurrency: int | None,
    counts: Counts,
    port: int,
    timeout: float,
    fill: int | None = None,
) -> dict[str, Any]:
    n = {
        "add_single": counts.single,
        "add_bulk": counts.bulk,
        "process": counts.process,
        "latency": counts.latency,
        "memory": counts.memory,
        "backlog": counts.backlog_take,
        "rtt": counts.rtt_calls,
        "memory_process": counts.process,
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
        "fill": fill or 0,
        # INFO commandstats around the timed part: the table's process@100 statistics, and
        # the lanemq script's server time per call for the floors.
        "stats": row_workload in ("add_single", "process", "latency"),
        "slowlog": False,
    }
