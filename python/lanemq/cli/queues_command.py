"""``lanemq queues URL``: the names of the queues a backend holds (`list_queue_names`): the
queue files of a local directory, the queues under a Redis prefix. One name a line, or one
JSON list with ``--json``. A bad URL exits 2; a server that cannot answer, 1."""

from __future__ import annotations

import asyncio
from typing import Any

import click

from ..exceptions import ConfigError, LanemqError
from ..urls import list_queue_names
from .output import emit_json
from .queue_commands import REDIS_SCHEMES


@click.command("queues")
@click.argument("url")
@click.option("--prefix", help="Key prefix of the Redis queues (default: lanemq).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON list (for scripts).")
def queues_command(url: str, prefix: str | None, as_json: bool) -> None:
    """List the queues at URL (local:DIR or a Redis URL), sorted by name.

    \b
        lanemq queues local:./lanemq-data
        lanemq queues redis://localhost:6379/0 --prefix myapp"""
    options: dict[str, Any] = {}
    if prefix is not None:
        if url.partition(":")[0].lower() not in REDIS_SCHEMES:
            raise click.UsageError("--prefix applies to Redis URLs only")
        options["prefix"] = prefix
    try:
        names = asyncio.run(list_queue_names(url, **options))
    except ConfigError as error:
        raise click.UsageError(str(error)) from None
    except LanemqError as error:  # (an unreachable server: its message names no password)
        raise click.ClickException(str(error)) from None
    if as_json:
        emit_json(names)
    else:
        for name in names:
            click.echo(name)
