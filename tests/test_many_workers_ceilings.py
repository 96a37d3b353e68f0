"""benches/many_workers.py's pure parts: which queues each worker process is given, and the two
ceilings its PASS/FAIL line compares with. No timing is asserted: the figures are made up."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCHES = Path(__file__).resolve().parent.parent / "benches"
sys.path.insert(0, str(BENCHES))

from many_workers import Run, assignments, ceilings  # noqa: E402


def test_every_process_works_the_one_queue() -> None:
    assert assignments(["q"], 4) == [["q"], ["q"], ["q"], ["q"]]


def test_four_queues_are_dealt_round_robin() -> None:
    queues = ["a", "b", "c", "d"]
    assert assignments(queues, 1) == [queues]
    assert assignments(queues, 2) == [["a", "c"], ["b", "d"]]
    assert assignments(queues, 4) == [["a"], ["b"], ["c"], ["d"]]


def test_the_server_binds_while_its_cpu_per_job_is_above_the_workers() -> None:
    # 20 us of Redis and 10 us of worker CPU per job, 10,000 jobs, 2 cores.
    run = Run(rate=30_000.0, seconds=1.0, server_cpu=0.2, worker_cpu=0.1)
    server, worker, server_ceiling, client_ceiling = ceilings(run, 10_000, 2)
    assert (server, worker) == (pytest.approx(20e-6), pytest.approx(10e-6))
    assert server_ceiling == pytest.approx(50_000)
    assert client_ceiling == pytest.approx(2 / 30e-6)
    assert server_ceiling < client_ceiling


def test_the_client_binds_once_redis_costs_less_than_the_worker() -> None:
    run = Run(rate=80_000.0, seconds=1.0, server_cpu=0.06, worker_cpu=0.15)
    _, _, server_ceiling, client_ceiling = ceilings(run, 10_000, 2)
    assert client_ceiling == pytest.approx(2 / 21e-6)
    assert client_ceiling < server_ceiling
