"""The comparison harness's pure parts (benches/comparison): the floors, the target rules and
the per-job server time. No timing is asserted: the figures are made up."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCHES = Path(__file__).resolve().parent.parent / "benches"
sys.path.insert(0, str(BENCHES))

from comparison.report import Floors, compute_floors, targets  # noqa: E402
from comparison.specs import Counts, rows_for, scaled_for  # noqa: E402
from comparison.targets import (  # noqa: E402
    at_most_target,
    backlog_target,
    cpu_us_per_job,
    floor_rate,
    latency_floor_ms,
    latency_target,
    paired_ratio,
    rate_target,
    script_commands_in,
    script_usec_per_call,
    server_us_per_job,
)


def test_floor_rate_pays_round_trips_and_server_time() -> None:
    assert floor_rate(50.0, 50.0) == pytest.approx(10_000)
    assert floor_rate(50.0, 0.0, round_trips=2) == pytest.approx(10_000)
    assert floor_rate(None, 10.0) is None
    assert floor_rate(50.0, None) is None


def test_latency_floor_counts_two_round_trips_by_default() -> None:
    assert latency_floor_ms(100.0, 50.0) == pytest.approx(0.25)


def test_rate_target_passes_on_the_ratio_first() -> None:
    check = rate_target("t", 300.0, 100.0, 2, floor=1_000.0)
    assert check.verdict == "PASS (ratio)"
    assert "3.00x" in check.detail


def test_rate_target_passes_within_the_floor_tolerance() -> None:
    check = rate_target("t", 910.0, 1_000.0, 2, floor=1_000.0)
    assert check.verdict == "PASS (floor)"
    assert "91% of the floor" in check.detail


def test_rate_target_fails_below_both() -> None:
    assert rate_target("t", 890.0, 1_000.0, 2, floor=1_000.0).verdict == "FAIL"
    assert rate_target("t", 150.0, 100.0, 2).verdict == "FAIL"
    assert rate_target("t", 250.0, 100.0, 2).verdict == "PASS"


def test_rate_target_without_results_is_not_applicable() -> None:
    assert rate_target("t", None, 100.0, 2).verdict == "N/A"
    assert rate_target("t", 100.0, None, 2).verdict == "N/A"
    assert rate_target("t", 100.0, None, 2, floor=105.0).verdict == "PASS (floor)"


def test_process_floor_uses_its_own_tolerance() -> None:
    assert rate_target("t", 86.0, 100.0, 6, floor=100.0, tolerance=0.15).verdict == "PASS (floor)"
    assert rate_target("t", 84.0, 100.0, 6, floor=100.0, tolerance=0.15).verdict == "FAIL"


def test_a_floor_only_target_ignores_the_ratio_but_shows_it() -> None:
    # add_single >= 90% of its floor: 3x BullMQ does not pass it, 91% of the floor does.
    check = rate_target("t", 300.0, 100.0, None, floor=1_000.0)
    assert check.verdict == "FAIL"
    assert "3.00x" in check.detail and "30% of the floor" in check.detail
    check = rate_target("t", 910.0, 100.0, None, floor=1_000.0)
    assert check.verdict == "PASS"
    assert rate_target("t", 910.0, 100.0, None).verdict == "N/A"
    # latency p50 <= 1.1x its floor: 0.5x BullMQ's does not pass it, 1.09x the floor does.
    assert latency_target("t", 0.7, 1.4, None, floor=0.5).verdict == "FAIL"
    assert latency_target("t", 0.545, 0.5, None, floor=0.5).verdict == "PASS"
    assert latency_target("t", 0.5, 1.0, None).verdict == "N/A"


def test_a_ratio_only_latency_target_has_no_floor() -> None:
    assert latency_target("t", 0.29, 1.0, 0.3).verdict == "PASS"
    assert latency_target("t", 0.31, 1.0, 0.3).verdict == "FAIL"


def test_cpu_per_job_is_main_thread_seconds_over_jobs() -> None:
    assert cpu_us_per_job(0.12, 20_000) == pytest.approx(6.0)
    assert cpu_us_per_job(None, 20_000) is None
    assert cpu_us_per_job(0.12, 0) is None


def test_latency_target_is_lower_is_better() -> None:
    assert latency_target("t", 0.5, 1.0, 0.6).verdict == "PASS"
    assert latency_target("t", 0.7, 1.0, 0.6, floor=0.5).verdict == "FAIL"
    assert latency_target("t", 0.54, 1.0, 0.5, floor=0.5).verdict == "PASS (floor)"
    assert latency_target("t", None, 1.0, 0.6).verdict == "N/A"


def test_at_most_and_backlog_targets() -> None:
    assert at_most_target("t", 200.0, 214.0, "bytes/job").verdict == "PASS"
    assert at_most_target("t", 437.0, 214.0, "bytes/job").verdict == "FAIL"
    assert at_most_target("t", 4.0, None, "us").verdict == "N/A"
    assert backlog_target("t", 86.0, 100.0, 0.15).verdict == "PASS"
    assert backlog_target("t", 84.0, 100.0, 0.15).verdict == "FAIL"
    assert backlog_target("t", 120.0, 100.0, 0.15).verdict == "PASS"


def test_script_commands_are_read_from_the_lua_sources(tmp_path: Path) -> None:
    (tmp_path / "includes").mkdir()
    (tmp_path / "a.lua").write_text("redis.call('HSET', k, f, v)\nredis.pcall(\"zadd\", k, 1, m)")
    (tmp_path / "includes" / "b.lua").write_text("redis.call( 'XADD', s, '*', 'f', v)")
    assert script_commands_in(tmp_path) == frozenset({"hset", "zadd", "xadd"})


def test_server_time_per_job_leaves_out_what_scripts_ran_and_the_probe() -> None:
    commands = [
        {"command": "fcall", "calls": 10, "usec": 400, "usec_per_call": 40.0},
        {"command": "hset", "calls": 100, "usec": 300, "usec_per_call": 3.0},
        {"command": "bzpopmin", "calls": 1, "usec": 20, "usec_per_call": 20.0},
        {"command": "config|resetstat", "calls": 1, "usec": 150, "usec_per_call": 150.0},
    ]
    assert server_us_per_job(commands, 100, frozenset({"hset"})) == pytest.approx(4.2)
    assert script_usec_per_call(commands) == (40.0, 10)
    assert server_us_per_job(commands, 0, frozenset()) is None


def test_floors_come_from_the_measured_runs() -> None:
    def stats(calls: int, usec: int) -> dict[str, object]:
        line = f"cmdstat_fcall:calls={calls},usec={usec},usec_per_call={usec / calls:.2f}"
        return {"commandstats": f"# Commandstats\r\n{line}\r\n"}

    results: dict[str, dict[str, dict[str, object]]] = {
        "round trip": {"lanemq": {"value": 50.0}},
        "memory backend@100": {"lanemq": {"value": 90_000.0}},
        "add_single": {"lanemq": {"value": 1.0, "stats": stats(100, 5_000)}},
        "process@1": {"lanemq": {"value": 1.0, "stats": stats(100, 15_000)}},
        "latency p50": {"lanemq": {"value": 1.0, "samples": 100, "stats": stats(300, 30_000)}},
    }
    floors = compute_floors(results)  # type: ignore[arg-type]
    assert floors.add_single == pytest.approx(10_000)
    assert floors.process_1 == pytest.approx(5_000)
    assert floors.latency_ms == pytest.approx(0.4)
    assert floors.process_100 == 90_000.0


def test_rows_and_peer_scaling() -> None:
    counts = Counts(10, 50, 10, 20, [1, 100], 10, 2.0, backlog=500, backlog_small=10)
    rows = rows_for(counts)
    keys = [row.key for row in rows]
    assert "backlog 500" in keys and "backlog 10" in keys and "memory/job" in keys
    backlog = next(row for row in rows if row.key == "backlog 500")
    assert backlog.runs_on("lanemq") and not backlog.runs_on("saq")
    spec = {"workload": "process", "n": 20_000}
    assert scaled_for(spec, "saq", 4)["n"] == 5_000
    assert scaled_for(spec, "bullmq-node", 4)["n"] == 20_000
    assert scaled_for({"workload": "latency", "n": 1_000}, "saq", 4)["n"] == 1_000


def test_paired_ratio_is_the_median_of_the_rounds_ratios() -> None:
    assert paired_ratio([10.0, 40.0, 90.0], [5.0, 10.0, 45.0]) == pytest.approx(2.0)
    assert paired_ratio([10.0, 40.0], [5.0, 10.0]) == pytest.approx(3.0)
    assert paired_ratio([10.0], [5.0]) is None
    assert paired_ratio([10.0, None], [5.0, 5.0]) is None
    assert paired_ratio(None, [5.0, 5.0]) is None
    check = rate_target("t", 100.0, 80.0, 2, paired=2.5)
    assert check.verdict == "PASS"
    assert "2.50x (median of the rounds' ratios)" in check.detail


def test_the_report_checks_exactly_issue_32s_targets() -> None:
    counts = Counts(10, 50, 10, 20, [1, 10, 100], 10, 2.0, backlog=500, backlog_small=10)

    def pair(own: float, node: float, field: str = "value") -> dict[str, dict[str, object]]:
        return {"lanemq": {field: own}, "bullmq-node": {field: node}}

    results: dict[str, dict[str, dict[str, object]]] = {
        "add_single": pair(9_500.0, 7_000.0),
        "process@1": pair(8_000.0, 6_000.0),
        "process@10": pair(80_000.0, 19_000.0),
        "process@100": pair(80_000.0, 22_000.0),
        "add_bulk": pair(180_000.0, 35_000.0),
        "latency p50": pair(0.36, 0.5, "p50"),
        "latency p99": pair(0.9, 3.6, "p99"),
        "memory/job": pair(190.0, 210.0, "bytes_per_job"),
        "backlog 500": {"lanemq": {"value": 70_000.0}},
        "backlog 10": {"lanemq": {"value": 75_000.0}},
    }
    floors = Floors(add_single=10_000.0, process_1=10_000.0, latency_ms=0.34, process_100=1e5)
    checks = targets(rows_for(counts), results, floors, 5.5)  # type: ignore[arg-type]
    assert [(check.text, check.verdict) for check in checks] == [
        ("add_single >= 90% of its floor", "PASS"),
        ("process@1 >= 90% of its floor", "FAIL"),
        ("latency p50 <= 1.1x its floor", "PASS"),
        ("process@10 >= 4x BullMQ Node", "PASS"),
        ("process@100 >= 6x BullMQ Node, or >= 85% of the memory backend's rate", "FAIL"),
        ("add_bulk >= 5x BullMQ Node", "PASS"),
        ("latency p99 <= 0.3x BullMQ Node's", "PASS"),
        (
            "Redis CPU per job at process@100 <= 6 us (INFO cpu: the server's main-thread CPU "
            "per job)",
            "PASS",
        ),
        ("memory per waiting job <= BullMQ Node's", "PASS"),
        ("backlog 500 within 15% of backlog 10 (lanemq, claim+complete at 100)", "PASS"),
    ]
