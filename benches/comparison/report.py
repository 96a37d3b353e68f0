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

Results = dict[str, dict[str, dict[str, Any]]]  # row key -> system -> result


def format_value(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    return f"{value:,.3f}" if unit == "ms" else f"{value:,.0f}"


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
        shown = f"{format_value(result.get('value'), 'jobs/s')} jobs/s"
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
    if not system.ok:
        reason = system.status
        return reason if len(reason) <= 34 else reason[:31] + "..."
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


def print_table(
    rows: list[Row], systems: dict[str, System], results: Results
) -> list[dict[str, Any]]:
    header = ["workload", *(LABELS[s] for s in SYSTEMS), *RATIO_LABELS.values()]
    table: list[list[str]] = []
    json_rows: list[dict[str, Any]] = []
    for row in rows:
        own = number(results[row.key].get("lanemq"), row)
        cells = [f"{row.key} ({row.unit})"]
        json_row: dict[str, Any] = {"workload": row.key, "unit": row.unit}
        for name in SYSTEMS:
            result = results[row.key].get(name)
            cells.append(cell(result, row, systems[name]))
            json_row[name] = (
                number(result, row) if systems[name].ok else systems[name].status
            ) or (f"error: {result['error']}" if result and result.get("error") else None)
        for name, label in RATIO_LABELS.items():
            other = number(results[row.key].get(name), row)
            ratio = own / other if own is not None and other else None
            cells.append(f"{ratio:.2f}x" if ratio is not None else "-")
            json_row[label] = ratio
        table.append(cells)
        json_rows.append(json_row)
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
    return json_rows


@dataclass
class Target:
    text: str
    verdict: str
    detail: str


def ratio_target(results: Results, row: Row, other: str, factor: float) -> Target:
    label = f"{row.key} >= {factor:g}x {LABELS[other]}"
    own = number(results.get(row.key, {}).get("lanemq"), row)
    theirs = number(results.get(row.key, {}).get(other), row)
    if own is None or not theirs:
        missing = "lanemq" if own is None else LABELS[other]
        return Target(label, "N/A", f"no {missing} result")
    ratio = own / theirs
    verdict = "PASS" if ratio >= factor else "FAIL"
    return Target(label, verdict, f"{ratio:.2f}x ({own:,.0f} vs {theirs:,.0f} jobs/s)")


def limit_target(results: Results, row: Row, limit_ms: float) -> Target:
    label = f"{row.key} < {limit_ms:g} ms"
    own = number(results.get(row.key, {}).get("lanemq"), row)
    if own is None:
        return Target(label, "N/A", "no lanemq result")
    return Target(label, "PASS" if own < limit_ms else "FAIL", f"{own:.3f} ms")


def targets(rows: list[Row], results: Results) -> list[Target]:
    by_key = {row.key: row for row in rows}
    top = by_key.get("process@100") or Row("process@100", "process", "jobs/s", 100)
    return [
        ratio_target(results, top, "bullmq-node", 3),
        ratio_target(results, top, "bullmq-python", 10),
        ratio_target(results, by_key["add_bulk"], "bullmq-node", 3),
        ratio_target(results, by_key["add_single"], "bullmq-node", 1.5),
        limit_target(results, by_key["latency p50"], 0.5),
        limit_target(results, by_key["latency p99"], 2.0),
    ]


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
) -> Summary:
    """Everything printed after the runs: versions, table, notes, targets, server statistics."""
    print()
    print(f"(measured in {elapsed:.0f} s)")
    for name in SYSTEMS:
        system = systems[name]
        version = system.version or ""
        print(f"  {LABELS[name]:<14} {system.status if not system.ok else version}")
    print()
    json_rows = print_table(rows, systems, results)
    print()
    print(
        "jobs/s (higher is better) or ms (lower is better); ratio = lanemq / other, so for the "
        "latency rows a ratio below 1 means lanemq is faster. * = the run reported problems."
    )
    notes = report_notes(rows, systems, results)
    for note in notes:
        print(f"  {note}")
    print()
    checks = targets(rows, results)
    print("targets:")
    for check in checks:
        print(f"  {check.verdict:<4} {check.text}: {check.detail}")

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
