"""``lanemq queue URL NAME <command>``: look at and manage one queue through the public
`JobQueue` API. Text tables by default, one JSON document with ``--json`` (shapes in
`queue_views` and the README). A queue that is not there, an unknown job id or scheduler
key, or an operation the job's state refuses, prints the reason on stderr and exits 1; bad
arguments exit 2."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import click

from .._redis_url import CLUSTER_SCHEMES, SENTINEL_SCHEMES
from .._retry_failed import retry_failed
from ..exceptions import ConfigError, JobNotFoundError, JobStateError, LaneError
from ..job import LogEntry
from ..queue import STATES, JobQueue, RedisJobQueue
from ..urls import from_url, local_queue_file, redact_url
from .output import emit_json
from .queue_views import (
    job_detail,
    job_summary,
    job_text,
    jobs_text,
    scheduler_view,
    schedulers_text,
    stats_text,
)

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])

_PLAIN_REDIS = ("redis", "rediss", "valkey", "valkeys", "unix", "redis+unix", "valkey+unix")
REDIS_SCHEMES: tuple[str, ...] = (*_PLAIN_REDIS, *CLUSTER_SCHEMES, *SENTINEL_SCHEMES)


@dataclass(frozen=True)
class QueueRef:
    url: str
    name: str
    prefix: str | None
    json: bool

    @property
    def shown(self) -> str:
        """The URL without its password."""
        return redact_url(self.url)


def json_flag(function: F) -> F:
    """``--json``, accepted before the command (``queue --json URL NAME stats``, or ``queue
    URL NAME --json stats``: see `_QueueGroup`) and after it (``queue URL NAME stats --json``)."""
    return click.option(
        "--json", "as_json", is_flag=True, help="Print one JSON document (for scripts)."
    )(function)


def open_queue(ref: QueueRef) -> JobQueue:
    """The queue ``ref`` names (``lanemq dashboard`` opens its queues here too). A
    ``memory://`` URL, ``--prefix`` off Redis and a local queue whose file does not exist are
    refused: each would show an empty queue where the user expects theirs."""
    scheme = ref.url.partition(":")[0].lower()
    if scheme == "memory":
        raise click.UsageError(
            "a memory:// queue lives inside one process: there is nothing to reach from here"
        )
    options: dict[str, Any] = {}
    if ref.prefix is not None:
        if scheme not in REDIS_SCHEMES:
            raise click.UsageError("--prefix applies to Redis URLs only")
        options["prefix"] = ref.prefix
    file = local_queue_file(ref.url, ref.name)
    if file is not None and not file.exists():
        # Opening would create an empty queue: a typo would look like an empty queue.
        raise click.ClickException(f"no queue {ref.name!r} at {ref.shown}: {file} does not exist")
    return from_url(ref.url, ref.name, **options)


def _run(ref: QueueRef, action: Callable[[JobQueue], Awaitable[T]]) -> T:
    """Opens the queue, runs ``action`` on it, closes it; lanemq errors become messages."""

    async def run() -> T:
        queue = open_queue(ref)
        try:
            await _check_listed(queue, ref)
            return await action(queue)
        finally:
            await queue.close()

    try:
        return asyncio.run(run())
    except ConfigError as error:
        raise click.UsageError(str(error)) from None
    except JobNotFoundError as error:
        raise click.ClickException(f"{error} in queue {ref.name!r}") from None
    except LaneError as error:
        raise click.ClickException(str(error)) from None


async def _check_listed(queue: JobQueue, ref: QueueRef) -> None:
    """Refuses a Redis queue that `list_queue_names` does not list (one that holds nothing):
    a typo in NAME or --prefix would otherwise look like an empty queue, and an action
    would create it. (A local queue's missing file is refused by `open_queue`.)"""
    if isinstance(queue, RedisJobQueue) and ref.name not in await queue.list_queues():
        raise click.ClickException(f"no queue {ref.name!r} at {ref.shown}")


def _ref(ctx: click.Context) -> QueueRef:
    ref = ctx.find_object(QueueRef)
    assert ref is not None  # (set by the queue group)
    return ref


def queue_command(name: str, **settings: Any) -> Callable[[F], click.Command]:
    """A subcommand of ``queue`` taking ``--json``; the function gets the `QueueRef` (its
    ``json`` set from either place) as its first argument."""

    def decorate(function: F) -> click.Command:
        @functools.wraps(function)
        def command(*args: Any, as_json: bool, **kwargs: Any) -> Any:
            ref = _ref(click.get_current_context())
            if as_json and not ref.json:
                ref = QueueRef(ref.url, ref.name, ref.prefix, True)
            return function(ref, *args, **kwargs)

        return queue_group.command(name, **settings)(json_flag(command))

    return decorate


#: Where options of ``lanemq queue`` may stand, for the refusals of misplaced ones.
_WHERE_OPTIONS = (
    "put options before URL (lanemq queue --prefix P URL NAME stats) or after the command "
    "(lanemq queue URL NAME stats --json); only --json may also follow NAME"
)


class _QueueGroup(click.Group):
    """click reads an option written between NAME and the command as the command's name:
    ``--json`` there is taken as the group's own; another one is refused saying where
    options go, rather than "No such command '--prefix'"."""

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        while args and args[0] == "--json":
            ctx.params["as_json"] = True
            args = args[1:]
        if not args:
            ctx.fail("Missing command.")
        if args[0].startswith("-"):
            raise click.UsageError(f"{args[0]!r} is not a command: {_WHERE_OPTIONS}", ctx)
        return super().resolve_command(ctx, args)


@click.group("queue", cls=_QueueGroup)
@click.argument("url")
@click.argument("name")
@click.option("--prefix", help="Key prefix of a Redis queue (default: lanemq).")
@json_flag
@click.pass_context
def queue_group(ctx: click.Context, url: str, name: str, prefix: str | None, as_json: bool) -> None:
    """Look at and manage the queue NAME at URL.

    URL is redis://[:password@]host[:port][/db], unix:///path.sock[?db=N&pass=...], or
    local:DIR (local:///abs/dir, local:./dir). A queue that is not there (no local file; on
    Redis, not listed by `lanemq queues`) is refused, not created. Times are shown in UTC;
    --json (before URL, after NAME, or after the command) prints epoch milliseconds.
    Examples:

    \b
        lanemq queue local:./lanemq-data email stats
        lanemq queue redis://localhost:6379/0 email jobs --state failed --json"""
    for value, what in ((url, "URL"), (name, "NAME")):
        # click takes an option written between URL, NAME and the command for an argument:
        # say where options go rather than open a queue called "--json".
        if value.startswith("-"):
            raise click.UsageError(f"{value!r} is not a queue {what}: {_WHERE_OPTIONS}")
        if not value:
            raise click.UsageError(f"the queue {what} is empty")
    ctx.obj = QueueRef(url, name, prefix, as_json)


@queue_command("stats")
def stats(ref: QueueRef) -> None:
    """Job counts per state, paused or not, schedulers."""

    async def read(queue: JobQueue) -> dict[str, Any]:
        return {
            "queue": queue.name,
            "counts": await queue.get_job_counts(),
            "paused": await queue.is_paused(),
            "schedulers": await queue.count_schedulers(),
        }

    found = _run(ref, read)
    if ref.json:
        emit_json(found)
    else:
        click.echo(
            stats_text(found["queue"], found["counts"], found["paused"], found["schedulers"])
        )


@queue_command("jobs")
@click.option(
    "--state",
    "states",
    type=click.Choice(STATES),
    multiple=True,
    help="Only jobs in this state (repeatable; default: every state).",
)
@click.option(
    "--limit", type=click.IntRange(min=1), default=50, show_default=True, help="At most N jobs."
)
@click.option(
    "--desc", is_flag=True, help="Last first (default: next to run first, oldest finished first)."
)
def jobs(ref: QueueRef, states: tuple[str, ...], limit: int, desc: bool) -> None:
    """List jobs, by state in the queue's order."""

    async def read(queue: JobQueue) -> list[Any]:
        return await queue.list_jobs(list(states) or None, 0, limit - 1, ascending=not desc)

    found = _run(ref, read)
    if ref.json:
        emit_json({"jobs": [job_summary(job) for job in found]})
    else:
        click.echo(jobs_text(found))


@queue_command("show")
@click.argument("job_id", metavar="ID")
@click.option(
    "--logs",
    "log_lines",
    type=click.IntRange(min=0),
    default=20,
    show_default=True,
    help="Show the newest N log lines (0: all).",
)
@click.option(
    "--full",
    is_flag=True,
    help="Print the data and result whole (else a large one is cut; --json is always whole).",
)
def show(ref: QueueRef, job_id: str, log_lines: int, full: bool) -> None:
    """One job: its fields, data, result or failure, and logs."""

    async def read(queue: JobQueue) -> tuple[Any, list[LogEntry], int]:
        job = await queue.get_job(job_id)
        if job is None:
            raise JobNotFoundError(f'job "{job_id}" not found')  # (as the queue says it)
        logs, count = await queue.get_log_entries(job_id, -log_lines if log_lines else 0, -1)
        return job, logs, count

    job, logs, count = _run(ref, read)
    if ref.json:
        emit_json(job_detail(job, logs, count))
    else:
        click.echo(job_text(job, logs, count, full=full))


@queue_command("retry")
@click.argument("job_id", metavar="[ID]", required=False)
@click.option("--failed", "all_failed", is_flag=True, help="Retry every failed job.")
@click.option("--reset-attempts", is_flag=True, help="Give the job its full set of attempts again.")
def retry(ref: QueueRef, job_id: str | None, all_failed: bool, reset_attempts: bool) -> None:
    """Move a failed job back to waiting.

    Its attempts made stay, as in BullMQ (a job that used them all gets one more run), unless
    --reset-attempts. A completed job can be retried too. With --failed, every failed job
    is."""
    if (job_id is None) == (not all_failed):
        raise click.UsageError("give a job ID or --failed (not both)")

    async def act(queue: JobQueue) -> list[str]:
        if job_id is not None:
            await queue.retry_job(job_id, reset_attempts=reset_attempts)
            return [job_id]
        return await _retry_failed(queue, reset_attempts)

    retried = _run(ref, act)
    if ref.json:
        emit_json({"retried": retried})
    elif job_id is not None:
        click.echo(f"job {job_id} is waiting again")
    else:
        click.echo(f"{len(retried)} failed job(s) waiting again")


async def _retry_failed(queue: JobQueue, reset_attempts: bool) -> list[str]:
    """Retries every job that is failed now; one that changed meanwhile is skipped."""
    retried, skipped = await retry_failed(queue, reset_attempts=reset_attempts)
    for failed_id, reason in skipped:
        click.echo(f"skipped job {failed_id}: {reason}", err=True)
    return retried


@queue_command("remove")
@click.argument("job_id", metavar="ID")
def remove(ref: QueueRef, job_id: str) -> None:
    """Remove a job (refused while a worker holds it)."""
    _run(ref, lambda queue: queue.remove(job_id))
    _done(ref, {"removed": [job_id]}, f"job {job_id} removed")


@queue_command("promote")
@click.argument("job_id", metavar="ID")
def promote(ref: QueueRef, job_id: str) -> None:
    """Make a delayed job waiting now."""
    _run(ref, lambda queue: queue.promote(job_id))
    _done(ref, {"promoted": [job_id]}, f"job {job_id} is waiting")


@queue_command("clean")
@click.option("--state", required=True, type=click.Choice(STATES), help="Jobs in this state.")
@click.option(
    "--grace",
    required=True,
    type=click.FloatRange(min=0),
    help="Only jobs older than this many seconds (finished ones: since they finished).",
)
@click.option(
    "--limit", type=click.IntRange(min=0), default=0, show_default=True, help="At most N (0: all)."
)
def clean(ref: QueueRef, state: str, grace: float, limit: int) -> None:
    """Remove the jobs in a state older than --grace seconds."""
    removed = _run(ref, lambda queue: queue.clean(grace, limit, state))
    _done(ref, {"removed": removed}, f"{len(removed)} {state} job(s) removed")


@queue_command("pause")
def pause(ref: QueueRef) -> None:
    """Stop handing out jobs.

    Adds are still accepted, and running jobs go on."""
    _run(ref, lambda queue: queue.pause())
    _done(ref, {"paused": True}, f"queue {ref.name} paused")


@queue_command("resume")
def resume(ref: QueueRef) -> None:
    """Hand out jobs again after a pause."""
    _run(ref, lambda queue: queue.resume())
    _done(ref, {"paused": False}, f"queue {ref.name} resumed")


@queue_command("drain")
@click.option("--delayed", is_flag=True, help="Delayed jobs too (not schedulers' occurrences).")
def drain(ref: QueueRef, delayed: bool) -> None:
    """Remove every waiting job (and delayed ones with --delayed)."""
    count = _run(ref, lambda queue: queue.drain(delayed))
    _done(ref, {"drained": count}, f"{count} job(s) removed")


@queue_command("obliterate")
@click.option("--force", is_flag=True, help="Even with active jobs (their workers lose them).")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
def obliterate(ref: QueueRef, force: bool, yes: bool) -> None:
    """Delete the queue's jobs, schedulers, events and settings. With active jobs it is
    refused, and the queue is left paused, unless --force."""
    if not yes:
        click.confirm(
            f"Delete every job, scheduler, event and setting of queue {ref.name!r} at {ref.shown}?",
            abort=True,
            err=True,
        )

    async def act(queue: JobQueue) -> None:
        try:
            await queue.obliterate(force)
        except JobStateError as error:
            said = str(error).replace(" (use force=True)", "")
            raise JobStateError(
                f"{said}: the queue is left paused (--force deletes active jobs too)"
            ) from None

    _run(ref, act)
    _done(ref, {"obliterated": True}, f"queue {ref.name} obliterated")


@queue_command("schedulers")
def schedulers(ref: QueueRef) -> None:
    """The job schedulers, by next run."""
    found = _run(ref, lambda queue: queue.list_schedulers())
    if ref.json:
        emit_json({"schedulers": [scheduler_view(s) for s in found]})
    else:
        click.echo(schedulers_text(found))


@queue_command("remove-scheduler")
@click.argument("key")
def remove_scheduler(ref: QueueRef, key: str) -> None:
    """Remove the job scheduler KEY, and its next occurrence unless that already started."""

    async def act(queue: JobQueue) -> None:
        if not await queue.remove_scheduler(key):
            raise click.ClickException(f"no scheduler {key!r} in queue {ref.name!r}")

    _run(ref, act)
    _done(ref, {"removed_scheduler": key}, f"scheduler {key} removed")


def _done(ref: QueueRef, document: dict[str, Any], text: str) -> None:
    if ref.json:
        emit_json(document)
    else:
        click.echo(text)
