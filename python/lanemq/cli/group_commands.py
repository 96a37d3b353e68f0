"""``lanemq queue URL NAME`` subcommands for groups and cancellation: ``groups`` lists the
queue's groups with their counts, ``pause-group`` / ``resume-group`` / ``remove-group`` manage
one, ``cancel`` and ``cancel-group`` cancel jobs (a running one is stopped on whichever worker
runs it). Registered on the ``queue`` group when this module is imported (`lanemq.cli`)."""

from __future__ import annotations

from typing import Any

import click

from ..jobs import GroupInfo
from ..queue import JobQueue
from .output import emit_json, table
from .queue_commands import QueueRef, _done, _run, queue_command

#: The counts the ``groups`` table shows, in this order (JSON has every state).
_SHOWN_STATES = ("waiting", "delayed", "active", "completed", "failed")


def group_view(group: GroupInfo) -> dict[str, Any]:
    """One row of ``groups --json``."""
    return {"name": group.name, "paused": group.paused, "counts": group.counts}


def groups_text(groups: list[GroupInfo], total: int, start: int) -> str:
    if not groups:
        return "(no groups)"
    rows = [
        (g.name, "yes" if g.paused else "no", *(g.counts.get(s, 0) for s in _SHOWN_STATES))
        for g in groups
    ]
    headers = ("GROUP", "PAUSED", *(s.upper() for s in _SHOWN_STATES))
    shown = table(headers, rows, numeric=tuple(s.upper() for s in _SHOWN_STATES))
    if start + len(groups) < total or start:
        shown += f"\n({start + 1}-{start + len(groups)} of {total} groups)"
    return shown


@queue_command("groups")
@click.option("--start", type=click.IntRange(min=0), default=0, help="Skip the first N groups.")
@click.option(
    "--limit", type=click.IntRange(min=1), default=50, show_default=True, help="At most N groups."
)
def groups(ref: QueueRef, start: int, limit: int) -> None:
    """The queue's groups, by name: paused or not, and their jobs per state."""

    async def read(queue: JobQueue) -> tuple[list[GroupInfo], int]:
        return await queue.list_groups(start, limit), await queue.count_groups()

    found, total = _run(ref, read)
    if ref.json:
        emit_json({"groups": [group_view(g) for g in found], "total": total})
    else:
        click.echo(groups_text(found, total, start))


@queue_command("pause-group")
@click.argument("group")
def pause_group(ref: QueueRef, group: str) -> None:
    """Stop handing out GROUP's jobs (other groups go on; its running jobs finish)."""
    _run(ref, lambda queue: queue.pause_group(group))
    _done(ref, {"group": group, "paused": True}, f"group {group} paused")


@queue_command("resume-group")
@click.argument("group")
def resume_group(ref: QueueRef, group: str) -> None:
    """Hand out GROUP's jobs again."""
    _run(ref, lambda queue: queue.resume_group(group))
    _done(ref, {"group": group, "paused": False}, f"group {group} resumed")


@queue_command("remove-group")
@click.argument("group")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
def remove_group(ref: QueueRef, group: str, yes: bool) -> None:
    """Remove GROUP's waiting and delayed jobs (its running jobs finish)."""
    if not yes:
        click.confirm(
            f"Remove the waiting and delayed jobs of group {group!r}?", abort=True, err=True
        )
    count = _run(ref, lambda queue: queue.remove_group(group))
    _done(ref, {"group": group, "removed": count}, f"{count} job(s) of group {group} removed")


@queue_command("cancel")
@click.argument("job_id", metavar="ID")
@click.option("--reason", default="cancelled", show_default=True, help="The job's failed reason.")
def cancel(ref: QueueRef, job_id: str, reason: str) -> None:
    """Cancel job ID: a job that has not started fails now and never runs; a running one is
    stopped on whichever worker runs it and fails with the reason; a finished one stays."""
    outcome = _run(ref, lambda queue: queue.cancel(job_id, reason))
    said = {
        "failed": f"job {job_id} cancelled",
        "requested": f"job {job_id} is running: its worker was told to stop it",
        "finished": f"job {job_id} had already finished: nothing to cancel",
    }[outcome]
    _done(ref, {"id": job_id, "outcome": outcome}, said)


@queue_command("cancel-group")
@click.argument("group")
@click.option("--reason", default="cancelled", show_default=True, help="The jobs' failed reason.")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
def cancel_group(ref: QueueRef, group: str, reason: str, yes: bool) -> None:
    """Cancel every unfinished job of GROUP, running ones included."""
    if not yes:
        click.confirm(f"Cancel every unfinished job of group {group!r}?", abort=True, err=True)
    count = _run(ref, lambda queue: queue.cancel_group(group, reason))
    _done(ref, {"group": group, "cancelled": count}, f"{count} job(s) of group {group} cancelled")
