"""The metric families `LanemqCollector` yields at each scrape, built from the last snapshot
of the queues and lane managers it watches."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.metrics_core import Metric

from ..queue import QueueStats
from .metrics_sink import COUNTERS

#: The states of `JobQueue.get_job_counts`, in its order.
JOB_STATES = ("waiting", "delayed", "active", "waiting_children", "completed", "failed")
_LANE_GAUGES = ("pending", "active", "retrying")
_QUANTILES = (("0.5", "p50"), ("0.9", "p90"), ("0.95", "p95"), ("0.99", "p99"))


@dataclass(frozen=True, slots=True)
class _Snapshot:
    """What one refresh read; `collect` turns the latest one into metric families."""

    #: Per watched queue: its name and its stats (None: the read failed or timed out).
    queues: tuple[tuple[str, QueueStats | None], ...] = ()
    #: Per watched manager: its name, `stats()` and `metrics()`.
    lanes: tuple[tuple[str, dict[str, dict[str, int]], dict[str, dict[str, Any]]], ...] = ()


def _families(snapshot: _Snapshot) -> Iterator[Metric]:
    """The queue and lane metric families of ``snapshot``."""
    jobs = GaugeMetricFamily(
        "lanemq_queue_jobs", "Jobs in the queue, per state.", labels=["queue", "state"]
    )
    paused = GaugeMetricFamily(
        "lanemq_queue_paused", "1 while the queue is paused, else 0.", labels=["queue"]
    )
    up = GaugeMetricFamily(
        "lanemq_queue_up", "1 if the queue's last read succeeded, else 0.", labels=["queue"]
    )
    for name, stats in snapshot.queues:
        up.add_metric([name], 0 if stats is None else 1)
        if stats is None:
            continue
        paused.add_metric([name], 1 if stats.paused else 0)
        for state in JOB_STATES:
            jobs.add_metric([name, state], stats.counts.get(state, 0))
    yield from (jobs, paused, up)
    labels = ["manager", "lane"]
    gauges = {
        key: GaugeMetricFamily(f"lanemq_lane_{key}", f"Commands {key} in the lane.", labels=labels)
        for key in _LANE_GAUGES
    }
    counters = {
        key: CounterMetricFamily(
            f"lanemq_lane_{key}", f"Lane commands {key.replace('_', ' ')}.", labels=labels
        )
        for key in COUNTERS
    }
    quantiles = {
        kind: GaugeMetricFamily(
            f"lanemq_lane_{kind}_seconds",
            f"Lane command {what} percentiles over the latest 4096 samples.",
            labels=[*labels, "quantile"],
        )
        for kind, what in (("latency", "run time"), ("queue_wait", "queue wait"))
    }
    for manager, lane_stats, metrics in snapshot.lanes:
        for lane, entry in lane_stats.items():
            for key in _LANE_GAUGES:
                gauges[key].add_metric([manager, lane], entry[key])
        for lane, counts in metrics.items():
            for key in COUNTERS:
                counters[key].add_metric([manager, lane], counts[key])
            for kind, family in quantiles.items():
                percentiles = counts[kind]
                if percentiles["count"]:  # no samples: no quantile (0 would be a lie)
                    for quantile, field in _QUANTILES:
                        family.add_metric([manager, lane, quantile], percentiles[field])
    yield from gauges.values()
    yield from counters.values()
    yield from quantiles.values()
