"""What a queue keeps for observing it, beside its jobs, on every backend: per-minute metrics
of finished jobs (BullMQ's ``getMetrics``) and the registry of running workers.

A `JobWorker` made with ``metrics_max_data_points`` records its completed and failed-for-good
jobs per minute (`JobQueue.record_metrics`, from a chore at most once a second, never from the
calls that claim or finish jobs); every running worker heartbeats its `WorkerInfo`
(`JobQueue.heartbeat_worker`). Read them with `JobQueue.get_metrics` and
`JobQueue.get_workers`. `JobQueue.obliterate` deletes both; ``drain`` and ``clean`` do not."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from ..exceptions import ConfigError

if TYPE_CHECKING:
    from .._core import JobQueueCore

__all__ = ["MetricsTime", "QueueMetrics", "WorkerInfo"]

#: The kinds of metrics: jobs completed, and jobs failed for good.
METRICS_KINDS = ("completed", "failed")
#: A minute, in ms: metrics count per minute, each minute named by its start.
MINUTE_MS = 60_000
#: The most minutes a series keeps (the core's ``metrics::MAX_DATA_POINTS``, about 69 days).
MAX_DATA_POINTS = 100_000


class MetricsTime:
    """Usual values of ``JobWorker(metrics_max_data_points=...)``, in minutes (BullMQ's)."""

    ONE_HOUR = 60
    ONE_DAY = 60 * 24
    ONE_WEEK = 60 * 24 * 7
    TWO_WEEKS = 60 * 24 * 14


@dataclass(frozen=True, slots=True)
class QueueMetrics:
    """One kind of metrics (`JobQueue.get_metrics`): ``count``, the jobs ever recorded;
    ``data``, the per-minute counts asked for, newest first; ``data_points``, how many minutes
    the series holds in all (at most its ``max_data_points``; a minute without jobs between two
    recorded ones is a 0); ``newest_minute``, the start of the series' newest minute (ms since
    the epoch: ``data[0]`` of the whole series), None before anything was recorded."""

    count: int
    data: list[int]
    data_points: int
    newest_minute: int | None


@dataclass(frozen=True, slots=True)
class WorkerInfo:
    """A running worker as its last heartbeat described it (`JobQueue.get_workers`): its
    ``id``, ``queue`` name, ``host`` and ``pid``, ``concurrency``, lanemq ``version``, when it
    started (``started_at``) and last heartbeated (``last_heartbeat``; ms since the epoch),
    and its counts at that heartbeat: jobs ``processed`` (completed), ``failed`` (for good)
    and ``running``."""

    id: str
    queue: str
    host: str
    pid: int
    concurrency: int
    version: str
    started_at: int
    last_heartbeat: int
    processed: int
    failed: int
    running: int


#: What a heartbeat stores of a `WorkerInfo` (the id and the time are the registry's own).
_DESCRIBED = (
    "host",
    "pid",
    "concurrency",
    "version",
    "started_at",
    "processed",
    "failed",
    "running",
)


def check_kind(kind: object) -> str:
    if kind not in METRICS_KINDS:
        raise ConfigError(f"invalid metrics kind: {kind!r} (must be 'completed' or 'failed')")
    assert isinstance(kind, str)
    return kind


def minute_of(ms: int) -> int:
    """The start of the minute holding ``ms`` (ms since the epoch)."""
    return ms - ms % MINUTE_MS


async def record_metrics(
    core: JobQueueCore, kind: str, counts: Iterable[tuple[int, int]], max_data_points: int
) -> None:
    await core.record_metrics(check_kind(kind), list(counts), max_data_points)


async def get_metrics(core: JobQueueCore, kind: str, start: int, end: int) -> QueueMetrics:
    count, data, data_points, newest = await core.get_metrics(check_kind(kind), start, end)
    return QueueMetrics(count, data, data_points, newest)


async def heartbeat_worker(
    core: JobQueueCore, queue: str, info: WorkerInfo, ttl: float, now: int | None
) -> None:
    if not isinstance(info, WorkerInfo):
        raise ConfigError(f"invalid worker info: {info!r} (must be a WorkerInfo)")
    if info.queue != queue:
        raise ConfigError(f"invalid worker info: queue {info.queue!r} (this queue is {queue!r})")
    if isinstance(ttl, bool) or not isinstance(ttl, int | float) or not ttl > 0:
        raise ConfigError(f"invalid ttl: {ttl!r} (must be > 0 seconds)")
    fields = asdict(info)
    described = json.dumps({key: fields[key] for key in _DESCRIBED}, separators=(",", ":"))
    await core.heartbeat_worker(info.id, described, ttl, now)


def _worker(queue: str, worker_id: str, described: str, last_heartbeat: int) -> WorkerInfo:
    try:
        fields: Any = json.loads(described)
    except ValueError:
        fields = None
    if not isinstance(fields, dict):
        fields = {}  # (written by hand: the registry writes only what heartbeat_worker sends)

    def get(key: str, kind: type[Any], default: Any) -> Any:
        value = fields.get(key, default)
        return value if isinstance(value, kind) and not isinstance(value, bool) else default

    return WorkerInfo(
        id=worker_id,
        queue=queue,
        host=get("host", str, ""),
        pid=get("pid", int, 0),
        concurrency=get("concurrency", int, 0),
        version=get("version", str, ""),
        started_at=get("started_at", int, last_heartbeat),
        last_heartbeat=last_heartbeat,
        processed=get("processed", int, 0),
        failed=get("failed", int, 0),
        running=get("running", int, 0),
    )


async def get_workers(core: JobQueueCore, queue: str, now: int | None) -> list[WorkerInfo]:
    rows = await core.get_workers(now)
    workers = [_worker(queue, *row) for row in rows]
    workers.sort(key=lambda w: (w.started_at, w.id))
    return workers
