"""``lanemq lanes worker``: runs a `QueueManager`'s lanes in N worker processes, kept alive by a
supervisor (`lanemq.lanes._supervisor`), until SIGTERM or SIGINT. Each child is this command
again with the hidden ``--child`` flag: it imports the target afresh and runs its manager."""

from __future__ import annotations

import asyncio
import os
import sys

import click

from ..lanes._supervisor import Supervisor
from .lanes_child import manager_of, run_child
from .logs import configure_logging, log_level_option
from .targets import Target, importable_cwd

#: Long enough for the commands a child is running to finish before it is killed (a manager
#: waits its own ``close_timeout`` for them, then gives them back).
DEFAULT_GRACE = 30.0


@click.group("lanes")
def lanes_group() -> None:
    """Run QueueManager lanes in worker processes."""


@lanes_group.command("worker")
@click.argument("target", metavar="MODULE:ATTR")
@click.option(
    "--processes",
    type=click.IntRange(min=1),
    help="Worker processes to run  [default: the machine's core count]",
)
@click.option(
    "--grace",
    type=click.FloatRange(min=0),
    default=DEFAULT_GRACE,
    show_default=True,
    help="Seconds the processes get to leave after SIGTERM/SIGINT before they are killed.",
)
@log_level_option("Level of the lanemq logger (to stderr), in every process.")
@click.option("--child", is_flag=True, hidden=True, help="Run as one worker process.")
def worker_command(
    target: str, processes: int | None, grace: float, log_level: str, child: bool
) -> None:
    """Run the lanes of the QueueManager that MODULE:ATTR names in worker processes, until
    SIGTERM or SIGINT.

    ATTR is a QueueManager or, better, a function without arguments (def or async def)
    returning one, so that each process builds its own. The current directory is importable.
    Each process enters the manager (`async with`) and runs the named commands
    (`manager.register`) that any process with the same backend and name submits. Example:

    \b
        lanemq lanes worker app.agents:make_manager --processes 4

    More than one process needs a manager with backend= ("local:DIR" or a Redis URL): lanes
    in one process's memory cannot be shared. The supervisor prints a line with each
    process's PID as it starts, replaces a process that dies, and on SIGTERM or SIGINT
    passes the signal on: each process leaves gracefully (its unfinished named commands go
    back to their lanes); what still runs after --grace seconds is killed. Exit code 0 when
    every process left by itself; 2 for a bad MODULE:ATTR or options."""
    configure_logging(log_level)
    importable_cwd()
    named = Target(target)
    if child:
        asyncio.run(run_child(named))
        return
    count = processes if processes is not None else os.cpu_count() or 1
    # The supervisor imports the target too (and calls a factory once), to refuse a bad
    # target or in-process lanes before starting any process.
    manager = asyncio.run(manager_of(named))
    if count > 1 and manager.backend is None:
        raise click.UsageError(
            f"target {target!r} gives a QueueManager without a backend: its lanes live in "
            f"one process's memory and cannot be shared by {count} processes; pass backend= "
            '(e.g. backend="local:./lanes" or a redis:// URL) to QueueManager, or run '
            "--processes 1"
        )
    child_command = [sys.executable, "-m", "lanemq", "lanes", "worker", target, "--child"]
    child_command += ["--log-level", log_level]
    supervisor = Supervisor(child_command, count, grace, _say)
    raise SystemExit(asyncio.run(supervisor.run()))


def _say(line: str) -> None:
    click.echo(f"lanes worker: {line}")
