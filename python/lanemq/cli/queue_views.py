"""The JSON shapes of ``lanemq queue`` (documented in the README; keep them stable: add keys,
never rename or remove one) and their plain-text forms. Timestamps are epoch milliseconds
in JSON and UTC times in text."""

from __future__ import annotations

from typing import Any

from .._format import when_ms
from ..job import Job, LogEntry
from ..schedulers import JobScheduler
from .output import clipped, indented, pairs, pretty, table, when


def job_summary(job: Job) -> dict[str, Any]:
    """One row of ``jobs``."""
    return {
        "id": job.id,
        "name": job.name,
        "state": job.state,
        "priority": job.priority,
        "attempts_made": job.attempts_made,
        "created_at": job.created_at,
        "processed_on": job.processed_on,
        "finished_on": job.finished_on,
        "failed_reason": job.failed_reason,
        "group": job.group,
    }


def jobs_text(jobs: list[Job]) -> str:
    if not jobs:
        return "(no jobs)"
    rows: list[tuple[Any, ...]] = [
        (
            job.id,
            job.name,
            job.state,
            job.priority,
            f"{job.attempts_made}/{job.options.attempts}",
            when(job.created_at),
            when(job.finished_on),
        )
        for job in jobs
    ]
    headers: tuple[str, ...] = (
        "ID",
        "NAME",
        "STATE",
        "PRIORITY",
        "ATTEMPTS",
        "CREATED (UTC)",
        "FINISHED (UTC)",
    )
    if any(job.group is not None for job in jobs):
        # (a GROUP column only where groups are used: other tables stay as they were)
        headers = (*headers[:2], "GROUP", *headers[2:])
        rows = [(*row[:2], job.group or "", *row[2:]) for row, job in zip(rows, jobs, strict=True)]
    if any(job.failed_reason for job in jobs):
        # (last, so a long reason cannot push the other columns out of a terminal's width)
        headers = (*headers, "FAILURE")
        rows = [(*row, _reason_cell(job)) for row, job in zip(rows, jobs, strict=True)]
    return table(headers, rows, numeric=("PRIORITY",))


#: How much of a failure reason a ``jobs`` row shows; ``show ID`` prints all of it.
FAILURE_WIDTH = 60


def _reason_cell(job: Job) -> str:
    """The reason's first line, cut to `FAILURE_WIDTH` with ``...`` (a traceback-like
    reason would otherwise make every row as wide as its longest line)."""
    reason = (job.failed_reason or "").strip().splitlines()
    first = reason[0] if reason else ""
    if len(first) > FAILURE_WIDTH or len(reason) > 1:
        return first[: FAILURE_WIDTH - 3] + "..."  # (ASCII: any terminal's encoding prints it)
    return first


def job_detail(job: Job, logs: list[LogEntry], log_count: int) -> dict[str, Any]:
    """What ``show`` prints: the summary's keys and the rest of the job; ``logs`` are the
    newest lines (oldest first; their texts, and in ``log_times`` when each was written, ms
    since the epoch or None for a line an older version stored), ``log_count`` how many the
    job has in all."""
    return {
        **job_summary(job),
        "attempts": job.options.attempts,
        "stalled_count": job.stalled_count,
        "delay_until": job.delay_until,
        "timeout": job.options.timeout,
        "progress": job.progress,
        "data": job.data,
        "return_value": job.return_value,
        "stacktrace": job.stacktrace,
        "parent_key": job.parent_key,
        "scheduler_key": job.scheduler_key,
        "dedup_id": job.dedup_id,
        "logs": [entry.text for entry in logs],
        "log_times": [entry.time for entry in logs],
        "log_count": log_count,
    }


def job_text(job: Job, logs: list[LogEntry], log_count: int, *, full: bool = False) -> str:
    """What ``show`` prints for people; a large data or result is cut unless ``full``."""
    fields: list[tuple[str, Any]] = [
        ("id", job.id),
        ("name", job.name),
        ("state", job.state),
        ("priority", job.priority),
        *([("group", job.group)] if job.group is not None else []),
        ("attempts", f"{job.attempts_made} of {job.options.attempts}"),
        ("created", when(job.created_at) + " UTC"),
    ]
    if job.state == "delayed":
        fields.append(("delayed until", when(job.delay_until) + " UTC"))
    if job.processed_on is not None:
        fields.append(("started", when(job.processed_on) + " UTC"))
    if job.finished_on is not None:
        fields.append(("finished", when(job.finished_on) + " UTC"))
    if job.options.timeout is not None:
        fields.append(("timeout", f"{job.options.timeout}s"))
    if job.stalled_count:
        fields.append(("stalled", f"{job.stalled_count} time(s)"))
    for label, value in (
        ("parent", job.parent_key),
        ("scheduler", job.scheduler_key),
        ("dedup id", job.dedup_id),
    ):
        if value is not None:
            fields.append((label, value))
    if job.progress not in (None, 0):
        fields.append(("progress", pretty(job.progress)))
    parts = [pairs(fields), "data:", indented(clipped(pretty(job.data), full))]
    if job.state == "completed":
        parts += ["result:", indented(clipped(pretty(job.return_value), full))]
    if job.failed_reason is not None:
        parts += ["failure:", indented(job.failed_reason)]
    if job.stacktrace:
        parts += ["stacktrace (newest last):", indented("\n".join(job.stacktrace))]
    if log_count:
        shown = f"newest {len(logs)} of {log_count}" if len(logs) < log_count else str(log_count)
        lines = [
            entry.text if entry.time is None else f"{when_ms(entry.time)}  {entry.text}"
            for entry in logs
        ]
        parts += [f"logs ({shown}, UTC):", indented("\n".join(lines))]
    return "\n".join(parts)


def scheduler_view(scheduler: JobScheduler) -> dict[str, Any]:
    """One entry of ``schedulers``: ``every`` (seconds) or ``cron`` with ``tz``; ``start``,
    ``end`` and ``next_run`` are epoch milliseconds; ``job_id`` is the pending occurrence."""
    return {
        "key": scheduler.key,
        "name": scheduler.name,
        "data": scheduler.data,
        "every": scheduler.every,
        "cron": scheduler.cron,
        "tz": scheduler.tz,
        "limit": scheduler.limit,
        "start": scheduler.start,
        "end": scheduler.end,
        "iteration_count": scheduler.iteration_count,
        "next_run": scheduler.next_run,
        "job_id": scheduler.job_id,
    }


def schedulers_text(schedulers: list[JobScheduler]) -> str:
    if not schedulers:
        return "(no schedulers)"
    rows = []
    for scheduler in schedulers:
        if scheduler.cron is not None:
            schedule = f"cron {scheduler.cron} ({scheduler.tz or 'UTC'})"
        else:
            schedule = f"every {scheduler.every:g}s"
        runs = str(scheduler.iteration_count)
        if scheduler.limit is not None:
            runs += f"/{scheduler.limit}"
        rows.append(
            (
                scheduler.key,
                scheduler.name,
                schedule,
                when(scheduler.next_run),
                runs,
                scheduler.job_id,
            )
        )
    return table(("KEY", "NAME", "SCHEDULE", "NEXT RUN (UTC)", "RUNS", "PENDING JOB"), rows)


def stats_text(name: str, counts: dict[str, int], paused: bool, schedulers: int) -> str:
    head = pairs([("queue", name), ("paused", paused), ("schedulers", schedulers)])
    return head + "\n\n" + table(("STATE", "JOBS"), list(counts.items()), numeric=("JOBS",))
