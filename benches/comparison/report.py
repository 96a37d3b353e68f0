"""What a comparison prints and writes: each run's line, the median run of several rounds,
the table with its ratios, the notes, the target checks (PASS / FAIL / N/A), the server's
statistics, and the JSON document."""

from __future__ import annotations

import os
import platform
import time
from dataclasses import dataclass
from typing import Any

from comparison.install import System
from comparison.server_stats import parse_commandstats, server_cpu
from comparison.specs import LABELS, RATIO_LABELS, SYSTEMS, Counts, Row
from comparison.targets import (
    Target,
    at_most_target,
    backlog_target,
    cpu_us_per_job,
    floor_rate,
    latency_floor_ms,
    latency_target,
    paired_ratio,
    rate_target,
    script_usec_per_call,
    server_us_per_job,
)

Results = dict[str, dict[str, dict[str, Any]]]  # row key -> system -> result


def format_value(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    if unit == "ms":
        return f"{value:,.3f}"
    return f"{value:,.1f}" if unit == "us" else f"{value:,.0f}"


def print_run(name: str, row: Row, result: dict[str, Any]) -> None:
    if result.get("error"):
        print(f"{LABELS[name]:<14} {row.key:<12} error: {result['error'][:300]}", flush=True)
        return
    wall = f"({result.get('wall_s', 0):.1f} s)"
    problems = f" problems: {result['problems']}" if result.get("problems") else ""
    if row.unit == "ms":
        p50, p99 = (format_value(result.get(k), "ms") for k in ("p50", "p99"))
        shown = f"p50 {p50} ms, p99 {p99} ms"
    else:
        shown = f"{format_value(result.get(row.field), row.unit)} {row.unit}"
    print(f"{LABELS[name]:<14} {row.key:<12} {shown} {wall}{problems}", flush=True)


def median_run(measured: list[dict[str, Any]], field: str) -> dict[str, Any]:
    """The run of median ``field`` (a row's value: jobs/s, p50 or p99) among those that gave
    one (an error if none did), with every run's value of it listed under ``rounds``."""
    valued = [r for r in measured if not r.get("error") and r.get(field) is not None]
    if not valued:
        return measured[-1]
    valued.sort(key=lambda r: float(r[field]))
    chosen = dict(valued[(len(valued) - 1) // 2])
    if len(measured) > 1:
        chosen["rounds"] = [r.get(field) for r in measured]
    return chosen


def cell(result: dict[str, Any] | None, row: Row, system: System) -> str:
    if not row.runs_on(system.name):
        return ""
    if not system.ok:
        return "n/a"
    if result is None:
        return "-"
    if result.get("error"):
        return "error"
    value = format_value(result.get(row.field), row.unit)
    return value + ("*" if result.get("problems") else "")


def number(result: dict[str, Any] | None, row: Row) -> float | None:
    if not result or result.get("error"):
        return None
    value = result.get(row.field)
    return float(value) if isinstance(value, (int, float)) else None


def shown_systems(systems: dict[str, System]) -> list[str]:
    """The table's columns: every system that was selected (available or not)."""
    return [name for name in SYSTEMS if "not selected" not in systems[name].status]


def print_columns(header: list[str], table: list[list[str]]) -> None:
    widths = [max(len(line[i]) for line in [header, *table]) for i in range(len(header))]

    def joined(cells: list[str]) -> str:
        return " | ".join(
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        )

    print(joined(header))
    print("-" * len(joined(header)))
    for cells in table:
        print(joined(cells))


def print_table(
    rows: list[Row], systems: dict[str, System], results: Results
) -> list[dict[str, Any]]:
    """The values, one column per system; then lanemq / other, one column per other system
    (on the rows both measured)."""
    names = shown_systems(systems)
    others = [name for name in names if name != "lanemq"]
    table: list[list[str]] = []
    ratios: list[list[str]] = []
    json_rows: list[dict[str, Any]] = []
    for row in rows:
        own = number(results[row.key].get("lanemq"), row)
        cells = [f"{row.key} ({row.unit})"]
        ratio_cells = [f"{row.key} ({row.unit})"]
        json_row: dict[str, Any] = {"workload": row.key, "unit": row.unit}
        for name in names:
            result = results[row.key].get(name)
            cells.append(cell(result, row, systems[name]))
            if row.runs_on(name):
                json_row[name] = (
                    number(result, row) if systems[name].ok else systems[name].status
                ) or (f"error: {result['error']}" if result and result.get("error") else None)
        has_ratio = False
        for name in others:
            other = number(results[row.key].get(name), row)
            ratio = own / other if own is not None and other else None
            ratio_cells.append(f"{ratio:.2f}x" if ratio is not None else "")
            json_row[RATIO_LABELS[name]] = ratio
            has_ratio = has_ratio or ratio is not None
        table.append(cells)
        if has_ratio:
            ratios.append(ratio_cells)
        json_rows.append(json_row)
    print_columns(["workload", *(LABELS[name] for name in names)], table)
    if ratios and others:
        print()
        print_columns(["lanemq / other", *(RATIO_LABELS[name] for name in others)], ratios)
    return json_rows


@dataclass
class Floors:
    """lanemq's floors, from what the run measured (None where a part is missing)."""

    rtt_us: float | None = None
    add_server_us: float | None = None
    process1_server_us: float | None = None
    latency_server_us: float | None = None
    latency_calls_per_job: float | None = None
    add_single: float | None = None
    process_1: float | None = None
    latency_ms: float | None = None
    process_100: float | None = None


def lanemq_commands(results: Results, key: str) -> list[dict[str, Any]] | None:
    stats = (results.get(key, {}).get("lanemq") or {}).get("stats") or {}
    raw = stats.get("commandstats")
    return parse_commandstats(raw) if raw else None


def compute_floors(results: Results) -> Floors:
    def value(key: str) -> float | None:
        result = results.get(key, {}).get("lanemq")
        if not result or result.get("error") or result.get("value") is None:
            return None
        return float(result["value"])

    floors = Floors(rtt_us=value("round trip"), process_100=value("memory backend@100"))
    for key, attribute in (("add_single", "add_server_us"), ("process@1", "process1_server_us")):
        commands = lanemq_commands(results, key)
        per_call = script_usec_per_call(commands) if commands else None
        setattr(floors, attribute, per_call[0] if per_call else None)
    commands = lanemq_commands(results, "latency p50")
    samples = (results.get("latency p50", {}).get("lanemq") or {}).get("samples") or 0
    per_call = script_usec_per_call(commands) if commands else None
    if per_call and samples:
        floors.latency_server_us = per_call[0] * per_call[1] / samples
        floors.latency_calls_per_job = per_call[1] / samples
    floors.add_single = floor_rate(floors.rtt_us, floors.add_server_us)
    floors.process_1 = floor_rate(floors.rtt_us, floors.process1_server_us)
    floors.latency_ms = latency_floor_ms(floors.rtt_us, floors.latency_server_us)
    return floors


FLOOR_ROWS = (
    Row("floor add_single", "floor", "jobs/s", systems=("lanemq",)),
    Row("floor process@1", "floor", "jobs/s", systems=("lanemq",)),
    Row("floor latency", "floor", "ms", systems=("lanemq",)),
)


def add_floor_rows(rows: list[Row], results: Results, floors: Floors) -> list[Row]:
    """The computed floors as rows of the table (lanemq's column only)."""
    values = {
        "floor add_single": floors.add_single,
        "floor process@1": floors.process_1,
        "floor latency": floors.latency_ms,
    }
    for key, floor in values.items():
        results[key] = {"lanemq": {"value": floor}} if floor is not None else {}
    return [*rows, *FLOOR_ROWS]


def print_floors(floors: Floors) -> None:
    def us(value: float | None) -> str:
        return f"{value:.1f} us" if value is not None else "?"

    print("floors (lanemq; every part measured in this run):")
    print(f"  round trip: one awaited PING on a socket the event loop watches, {us(floors.rtt_us)}")
    print(
        "  add_single: 1 round trip + the add function's usec_per_call in Redis during "
        f"add_single ({us(floors.add_server_us)}) = {format_value(floors.add_single, 'jobs/s')} "
        "jobs/s"
    )
    print(
        "  process@1: 1 round trip per job (one call that completes a job and claims the next) "
        f"+ the functions' usec_per_call during process@1 ({us(floors.process1_server_us)}) = "
        f"{format_value(floors.process_1, 'jobs/s')} jobs/s"
    )
    print(
        "  latency: 2 round trips (the add crossing to Redis and the job crossing to the blocked "
        "worker make one; the complete call and its reply the other) + every function's time "
        f"per job during the latency run ({us(floors.latency_server_us)} in "
        f"{floors.latency_calls_per_job or 0:.1f} calls) = "
        f"{format_value(floors.latency_ms, 'ms')} ms"
    )
    print(
        "  process@100: lanemq's in-memory backend (InMemoryJobQueue + JobWorker, the process "
        "phase of benches/jobs.py) at the same jobs and concurrency, "
        f"{format_value(floors.process_100, 'jobs/s')} jobs/s"
    )


def row_number(results: Results, key: str, system: str, field: str = "value") -> float | None:
    result = results.get(key, {}).get(system)
    if not result or result.get("error"):
        return None
    value = result.get(field)
    return float(value) if isinstance(value, (int, float)) else None


def targets(
    rows: list[Row], results: Results, floors: Floors, cpu_per_job: float | None
) -> list[Target]:
    """Issue 32's targets, each ratio from this run. `cpu_per_job`: the server's main-thread
    CPU per job at process@100 (INFO cpu)."""
    node = "bullmq-node"

    def both(key: str, field: str = "value") -> tuple[float | None, float | None]:
        return row_number(results, key, "lanemq", field), row_number(results, key, node, field)

    def paired(key: str) -> float | None:
        own = (results.get(key, {}).get("lanemq") or {}).get("rounds")
        theirs = (results.get(key, {}).get(node) or {}).get("rounds")
        return paired_ratio(own, theirs)

    checks = [
        rate_target(
            "add_single >= 90% of its floor",
            *both("add_single"),
            None,
            floors.add_single,
            paired=paired("add_single"),
        ),
        rate_target(
            "process@1 >= 90% of its floor",
            *both("process@1"),
            None,
            floors.process_1,
            paired=paired("process@1"),
        ),
        latency_target(
            "latency p50 <= 1.1x its floor",
            *both("latency p50", "p50"),
            None,
            floors.latency_ms,
            paired=paired("latency p50"),
        ),
        rate_target(
            "process@10 >= 4x BullMQ Node", *both("process@10"), 4, paired=paired("process@10")
        ),
        rate_target(
            "process@100 >= 6x BullMQ Node, or >= 85% of the memory backend's rate",
            *both("process@100"),
            6,
            floors.process_100,
            tolerance=0.15,
            floor_name="memory backend's",
            paired=paired("process@100"),
        ),
        rate_target("add_bulk >= 5x BullMQ Node", *both("add_bulk"), 5, paired=paired("add_bulk")),
        latency_target(
            "latency p99 <= 0.3x BullMQ Node's",
            *both("latency p99", "p99"),
            0.3,
            paired=paired("latency p99"),
        ),
        at_most_target(
            "Redis CPU per job at process@100 <= 6 us (INFO cpu: the server's main-thread CPU "
            "per job)",
            cpu_per_job,
            6.0,
            "us/job",
        ),
        at_most_target(
            "memory per waiting job <= BullMQ Node's",
            *both("memory/job", "bytes_per_job"),
            "bytes/job",
        ),
    ]
    backlog_rows = [row for row in rows if row.workload == "backlog"]
    if len(backlog_rows) >= 2:
        shallow, deep = backlog_rows[0], backlog_rows[-1]
        checks.append(
            backlog_target(
                f"{deep.key} within 15% of {shallow.key} (lanemq, claim+complete at 100)",
                row_number(results, deep.key, "lanemq"),
                row_number(results, shallow.key, "lanemq"),
                0.15,
                paired_ratio(
                    (results.get(deep.key, {}).get("lanemq") or {}).get("rounds"),
                    (results.get(shallow.key, {}).get("lanemq") or {}).get("rounds"),
                ),
            )
        )
    return checks


def print_stats(
    title: str,
    per_command: list[dict[str, Any]],
    jobs: int,
    seconds: float | None,
    cpu: float | None,
    limit: int = 14,
) -> None:
    """A per-command table: calls, calls per job, usec per call, usec per job."""
    print(title)
    print(f"  {'command':<36} {'calls':>9} {'per job':>8} {'usec/call':>10} {'usec/job':>9}")
    for entry in per_command[:limit]:
        print(
            f"  {entry['command'][:36]:<36} {entry['calls']:>9,} {entry['calls'] / jobs:>8.3f} "
            f"{entry['usec_per_call']:>10.2f} {entry['usec'] / jobs:>9.2f}"
        )
    if cpu is not None and seconds:
        print(
            f"  server main thread CPU {cpu:.3f} s in {seconds:.3f} s of run "
            f"({cpu / seconds:.0%} busy), {cpu * 1e6 / jobs:.1f} usec per job"
        )


def report_notes(rows: list[Row], systems: dict[str, System], results: Results) -> list[str]:
    notes: list[str] = []
    for name in SYSTEMS:
        if not systems[name].ok and "not selected" not in systems[name].status:
            notes.append(f"{LABELS[name]}: {systems[name].status}")
    seen: set[str] = set()
    for row in rows:
        for name in SYSTEMS:
            result = results[row.key].get(name)
            if not result:
                continue
            note = result.get("note")
            if note and note not in seen:
                seen.add(note)
                notes.append(f"{LABELS[name]} {row.workload}: {note}")
            if result.get("error"):
                notes.append(f"{LABELS[name]} {row.key}: error: {result['error']}")
            for problem in result.get("problems") or []:
                notes.append(f"{LABELS[name]} {row.key}: {problem}")
    return notes


@dataclass
class Summary:
    """What the printed report found, for the JSON document."""

    table: list[dict[str, Any]]
    notes: list[str]
    checks: list[Target]
    commandstats: dict[str, Any]


def print_report(
    rows: list[Row],
    counts: Counts,
    systems: dict[str, System],
    results: Results,
    profiles: dict[str, dict[str, Any]],
    elapsed: float,
    inside_scripts: frozenset[str] = frozenset(),
) -> Summary:
    """Everything printed after the runs: versions, table, floors, notes, targets, server
    statistics. `inside_scripts`: the commands lanemq's Lua runs (see `server_us_per_job`)."""
    print()
    print(f"(measured in {elapsed:.0f} s)")
    for name in SYSTEMS:
        system = systems[name]
        version = system.version or ""
        print(f"  {LABELS[name]:<14} {system.status if not system.ok else version}")
    print()
    floors = compute_floors(results)
    rows = add_floor_rows(rows, results, floors)
    json_rows = print_table(rows, systems, results)
    print()
    print(
        "jobs/s (higher is better), ms and bytes (lower is better); ratio = lanemq / other, so "
        "for the latency and memory rows a ratio below 1 means lanemq is better. * = the run "
        "reported problems; empty = not run for that system."
    )
    print()
    print_floors(floors)
    commands_per_job = None
    top_commands = lanemq_commands(results, "process@100")
    if top_commands:
        commands_per_job = server_us_per_job(top_commands, counts.process, inside_scripts)
    top_stats = (results.get("process@100", {}).get("lanemq") or {}).get("stats")
    cpu_per_job = cpu_us_per_job(server_cpu(top_stats) if top_stats else None, counts.process)
    notes = report_notes(rows, systems, results)
    for note in notes:
        print(f"  {note}")
    print()
    checks = targets(rows, results, floors, cpu_per_job)
    print("targets (issue 32):")
    for check in checks:
        print(f"  {check.verdict:<12} {check.text}: {check.detail}")

    stats_report: dict[str, Any] = {}
    top = next((row for row in rows if row.key == "process@100"), None)
    if top is not None:
        for name in SYSTEMS:
            result = results[top.key].get(name) or {}
            stats = result.get("stats")
            if stats and stats.get("commandstats"):
                parsed = parse_commandstats(stats["commandstats"])
                cpu = server_cpu(stats)
                stats_report[name] = {
                    "server_cpu_s": cpu,
                    "seconds": result.get("seconds"),
                    "commands": parsed,
                }
                print()
                print_stats(
                    f"Redis INFO commandstats, {LABELS[name]} process@100 (commands run by "
                    "scripts are listed on their own AND inside evalsha's or fcall's time):",
                    parsed,
                    counts.process,
                    result.get("seconds"),
                    cpu,
                )
                if name == "lanemq" and commands_per_job is not None:
                    print(
                        f"  Redis time per job (commandstats: the fcall time, plus the commands "
                        f"lanemq's Lua does not run itself): {commands_per_job:.2f} usec"
                    )
                    stats_report[name]["usec_per_job"] = commands_per_job
                    stats_report[name]["cpu_usec_per_job"] = cpu_per_job
    for name, profile in profiles.items():
        print()
        if profile.get("error"):
            print(f"SLOWLOG profile, {LABELS[name]}: error: {profile['error']}")
            continue
        print_stats(
            f"SLOWLOG profile, {LABELS[name]} process@100 ({profile.get('value', 0):,.0f} jobs/s "
            "with every command logged; commands run by scripts are logged too, and counted "
            "inside their script's time):",
            profile["per_command"],
            counts.process,
            profile.get("seconds"),
            None,
        )
    stats_report["floors"] = floors.__dict__
    return Summary(json_rows, notes, checks, stats_report)


def strip_raw(result: dict[str, Any]) -> dict[str, Any]:
    """A result without the raw server statistics (they are summarised elsewhere)."""
    return {key: value for key, value in result.items() if key != "stats"}


def json_document(
    summary: Summary,
    counts: Counts,
    quick: bool,
    redis_version: str,
    systems: dict[str, System],
    results: Results,
    profiles: dict[str, dict[str, Any]],
) -> dict[str, Any]:
    """The table, every result and the statistics, as ``--json`` writes them."""
    return {
        "generated": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "redis": redis_version,
        "counts": counts.__dict__,
        "quick": quick,
        "systems": {
            name: {"status": s.status, "version": s.version, "install": s.install_log}
            for name, s in systems.items()
        },
        "table": summary.table,
        "notes": summary.notes,
        "targets": [check.__dict__ for check in summary.checks],
        "results": {
            key: {name: strip_raw(result) for name, result in by_system.items()}
            for key, by_system in results.items()
        },
        "commandstats_process_100": summary.commandstats,
        "profile": {
            name: {k: v for k, v in profile.items() if k != "stats"}
            for name, profile in profiles.items()
        },
    }
