"""The ``lanemq`` command: ``lanemq worker`` runs job workers, ``lanemq queue`` looks at and
manages a queue, ``lanemq queues`` lists a backend's queues, ``lanemq dashboard`` serves the
web dashboard, ``lanemq lanes worker`` runs a QueueManager's lanes in worker processes. Also
``python -m lanemq``."""

from __future__ import annotations

import click

# (imported for their commands, which they register on ``queue``)
from . import group_commands, search_commands  # noqa: F401
from .dashboard_command import dashboard_command
from .lanes_command import lanes_group
from .queue_commands import queue_group
from .queues_command import queues_command
from .worker_command import worker_command


@click.group("lanemq")
@click.version_option(package_name="lanemq")
def main() -> None:
    """lanemq: run job workers, manage job queues, run lanes in worker processes.

    Run `lanemq COMMAND --help` for a command's options."""


main.add_command(worker_command)
main.add_command(queue_group)
main.add_command(queues_command)
main.add_command(dashboard_command)
main.add_command(lanes_group)

__all__ = ["main"]
