"""``lanemq dashboard URL``: serves the web dashboard (`lanemq.dashboard.app`) of the queues
at URL with uvicorn, until SIGTERM or SIGINT (then it exits 0). It needs the ``dashboard``
extra."""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import re
import signal
from collections.abc import Sequence
from typing import Any

import click

from ..exceptions import ConfigError, LanemqError
from ..queue import JobQueue
from ..urls import list_queue_names, redact_url
from .logs import configure_logging, log_level_option
from .queue_commands import QueueRef, open_queue

log = logging.getLogger("lanemq.cli")

_TOKEN_IN_QUERY = re.compile(r"([?&]token=)[^&]*")


class _RedactToken(logging.Filter):
    """Hides the value of ``?token=`` in uvicorn's access log lines: the token is a secret."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(
                _TOKEN_IN_QUERY.sub(r"\1***", arg) if isinstance(arg, str) else arg
                for arg in record.args
            )
        return True


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@click.command("dashboard")
@click.argument("url")
@click.option(
    "--queue",
    "queue_names",
    metavar="NAME",
    multiple=True,
    help="A queue to show (repeat for several; default: every queue at URL, listed again "
    "on each page).",
)
@click.option("--prefix", help="Key prefix of Redis queues (default: lanemq).")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port", type=click.IntRange(0, 65535), default=8080, show_default=True, help="Port."
)
@click.option("--read-only", is_flag=True, help="Show, but offer and accept no actions.")
@click.option(
    "--token",
    envvar="LANEMQ_DASHBOARD_TOKEN",
    show_envvar=True,
    help="Access token a browser must give once (prefer the environment variable: a "
    "command line is visible to other users).",
)
@log_level_option("Level of the lanemq and uvicorn loggers (uvicorn's access log on stdout).")
def dashboard_command(
    url: str,
    queue_names: Sequence[str],
    prefix: str | None,
    host: str,
    port: int,
    read_only: bool,
    token: str | None,
    log_level: str,
) -> None:
    """Serve the web dashboard of the queues at URL.

    URL is one of lanemq.from_url's: redis://[:password@]host[:port][/db],
    unix:///path.sock, local:DIR. It listens on 127.0.0.1 unless --host says otherwise;
    anyone who reaches the port can act on the queues unless --token is set. Examples:

    \b
        lanemq dashboard local:./lanemq-data --queue email
        LANEMQ_DASHBOARD_TOKEN=s3cret lanemq dashboard redis://localhost:6379/0 \\
            --queue email --queue reports --host 0.0.0.0 --port 8080

    Stops on SIGTERM or SIGINT (exit code 0)."""
    try:
        import uvicorn

        from ..dashboard import app
    except ImportError as error:
        package = (error.name or "?").partition(".")[0]
        raise click.ClickException(
            f"the dashboard needs the package {package!r}: pip install 'lanemq[dashboard]'"
        ) from None
    configure_logging(log_level)
    queues = []
    try:
        if queue_names:
            for name in dict.fromkeys(queue_names):
                queues.append(open_queue(QueueRef(url, name, prefix, False)))
            application = app(queues, read_only=read_only, token=token)
        else:
            application = app(url=url, prefix=prefix, read_only=read_only, token=token)
    except ConfigError as error:
        raise click.UsageError(str(error)) from None
    if not _loopback(host) and token is None:
        log.warning(
            "listening on %s without --token: anyone who reaches port %d can retry, remove and "
            "clean jobs%s",
            host,
            port,
            "" if not read_only else " (read-only: see them)",
        )
    config = uvicorn.Config(application, host=host, port=port, log_level=log_level.lower())
    logging.getLogger("uvicorn.access").addFilter(_RedactToken())
    listing = None if queues else (url, {} if prefix is None else {"prefix": prefix})
    asyncio.run(_serve(uvicorn.Server(config), queues, listing))


async def _serve(
    server: Any, queues: list[JobQueue], listing: tuple[str, dict[str, Any]] | None
) -> None:
    """Checks that the backend answers (every queue, or the listing of the URL's), then
    serves until a signal; closes the queues."""
    # uvicorn handles SIGTERM/SIGINT while it serves, then raises the signal again for the
    # handler it found: make that one a no-op, so the command ends normally (exit 0).
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: None)
    try:
        try:
            for queue in queues:
                await queue.get_job_counts()
            if listing is not None:
                url, options = listing
                if not await list_queue_names(url, **options):
                    log.warning(
                        "no queues at %s yet: they show once they hold jobs", redact_url(url)
                    )
        except LanemqError as error:
            raise click.ClickException(str(error)) from None
        await server.serve()
    finally:
        for queue in queues:
            await queue.close()
