"""``lanemq queue URL NAME`` subcommands that find jobs by criteria: ``search`` lists them a page
at a time (`JobQueue.search_jobs`), ``purge`` removes them (`JobQueue.remove_jobs`) after asking
unless ``--yes``. Registered on the ``queue`` group when this module is imported
(`lanemq.cli`)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

import click

from ..jobs import JobPage
from ..queue import STATES, JobQueue
from .output import emit_json
from .queue_commands import QueueRef, _done, _run, queue_command
from .queue_views import job_summary, jobs_text

F = TypeVar("F", bound=Callable[..., Any])


def data_criterion(text: str) -> tuple[str, Any]:
    """``--data PATH=VALUE``: VALUE is read as JSON when it is a JSON scalar (``7``, ``true``,
    ``null``, ``"7"``), else taken as text (``a@example.com``)."""
    path, sep, raw = text.partition("=")
    if not sep or not path:
        raise click.BadParameter(f"{text!r} is not PATH=VALUE (as user.id=7)", param_hint="--data")
    try:
        value = json.loads(raw)
    except ValueError:
        return path, raw
    return path, value if isinstance(value, str | int | float | bool | None) else raw


def criteria_options(function: F) -> F:
    """The options of the criteria, shared by ``search`` and ``purge``."""
    options = [
        click.option(
            "--state",
            "states",
            type=click.Choice(STATES),
            multiple=True,
            help="Only jobs in this state (repeatable; default: every state).",
        ),
        click.option("--name", help="The job's name, exactly."),
        click.option("--text", help="Text the job's id starts with or its name contains."),
        click.option(
            "--data",
            "data",
            multiple=True,
            metavar="PATH=VALUE",
            help="The value at a dotted path of the job's data (user.id=7; a JSON scalar, "
            "else text). Repeatable: every one must match.",
        ),
        click.option(
            "--older-than",
            type=click.FloatRange(min=0),
            help="Only jobs older than this many seconds (finished ones: since they finished).",
        ),
        click.option(
            "--newer-than",
            type=click.FloatRange(min=0),
            help="Only jobs younger than this many seconds.",
        ),
    ]
    for option in reversed(options):
        function = option(function)
    return function


def _criteria(
    name: str | None,
    text: str | None,
    data: tuple[str, ...],
    older_than: float | None,
    newer_than: float | None,
) -> dict[str, Any]:
    return {
        "name": name,
        "text": text,
        "data": dict(data_criterion(item) for item in data) or None,
        "older_than": older_than,
        "newer_than": newer_than,
    }


@queue_command("search")
@criteria_options
@click.option(
    "--cursor",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Where the page starts: the cursor the previous page printed.",
)
@click.option(
    "--count",
    type=click.IntRange(min=1, max=1000),
    default=50,
    show_default=True,
    help="At most N jobs.",
)
@click.option("--desc", is_flag=True, help="Each state's jobs last first.")
def search(
    ref: QueueRef,
    states: tuple[str, ...],
    name: str | None,
    text: str | None,
    data: tuple[str, ...],
    older_than: float | None,
    newer_than: float | None,
    cursor: int,
    count: int,
    desc: bool,
) -> None:
    """Find jobs by name, text, data and age, a page at a time.

    A page reads at most 1000 jobs: when it prints a cursor, run again with --cursor to go
    on (a page may find nothing and still have a next one). Examples:

    \b
        lanemq queue local:./data email search --name send --data user.id=7
        lanemq queue local:./data email search --state failed --older-than 86400 --json"""
    criteria = _criteria(name, text, data, older_than, newer_than)

    async def read(queue: JobQueue) -> JobPage:
        return await queue.search_jobs(
            *states, **criteria, cursor=cursor, count=count, ascending=not desc
        )

    page = _run(ref, read)
    if ref.json:
        emit_json({"jobs": [job_summary(job) for job in page.jobs], "cursor": page.cursor})
        return
    click.echo(jobs_text(page.jobs))
    if page.cursor is not None:
        click.echo(f"(more may follow: --cursor {page.cursor})")


@queue_command("purge")
@criteria_options
@click.option("--limit", type=click.IntRange(min=1), help="At most N jobs (default: all).")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
def purge(
    ref: QueueRef,
    states: tuple[str, ...],
    name: str | None,
    text: str | None,
    data: tuple[str, ...],
    older_than: float | None,
    newer_than: float | None,
    limit: int | None,
    yes: bool,
) -> None:
    """Remove the jobs that `search` finds with the same criteria.

    Each is removed as `remove` removes one: a job a worker holds stays, a job goes with its
    children. Asks first, unless --yes. At least a --state or a criterion is needed."""
    criteria = _criteria(name, text, data, older_than, newer_than)
    if not states and not any(value is not None for value in criteria.values()):
        raise click.UsageError("give a --state or a criterion (--name, --text, --data, ...)")
    if not yes:
        shown = ", ".join(f"{k}={v!r}" for k, v in criteria.items() if v is not None)
        where = f"in {'/'.join(states)} " if states else ""
        click.confirm(
            f"Remove the jobs {where}of queue {ref.name!r} at {ref.shown} matching "
            f"{shown or 'any criteria'}?",
            abort=True,
            err=True,
        )
    removed = _run(ref, lambda queue: queue.remove_jobs(*states, **criteria, limit=limit))
    _done(ref, {"removed": removed}, f"{removed} job(s) removed")
