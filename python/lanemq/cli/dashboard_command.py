"""``lanemq dashboard URL``: serves the web dashboard (`lanemq.dashboard.app`) of the queues
at URL with uvicorn, until SIGTERM or SIGINT (then it exits 0). It needs the ``dashboard``
extra."""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import re
import signal
import socket
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


def _check_listen_address(host: str) -> None:
    """Refuses (exit 2, before anything is opened) a ``--host`` this machine cannot listen
    on: a name that does not resolve, or no address of it that is this machine's. uvicorn
    would find out only after the app started, and exit 3."""
    if not host.strip():
        raise click.UsageError("--host is empty (0.0.0.0 listens on every interface)")
    try:
        found = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (OSError, UnicodeError) as error:
        reason = getattr(error, "strerror", None) or str(error)
        raise click.UsageError(f"--host {host!r}: cannot resolve it ({reason})") from None
    refused: OSError | None = None
    for family, kind, proto, _, address in found:
        # Port 0 (any free one): only the address is checked here. As asyncio does when it
        # listens, an address of a family the machine lacks is skipped if another works.
        with socket.socket(family, kind, proto) as probe:
            try:
                probe.bind((address[0], 0, *address[2:]))
                return
            except OSError as error:
                refused = refused or error
    reason = refused.strerror if refused is not None else "no address"
    raise click.UsageError(f"--host {host!r}: cannot listen on it ({reason})")


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
@click.option(
    "--allowed-host",
    "allowed_hosts",
    metavar="NAME",
    multiple=True,
    help="Another host name (or address) the dashboard answers to, as browsers write it in "
    "the URL (repeatable; always: 127.0.0.1, localhost, [::1] and --host).",
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
    allowed_hosts: Sequence[str],
    read_only: bool,
    token: str | None,
    log_level: str,
) -> None:
    """Serve the web dashboard of the queues at URL.

    URL is one of lanemq.from_url's: redis://[:password@]host[:port][/db],
    unix:///path.sock, local:DIR. It listens on 127.0.0.1 unless --host says otherwise;
    anyone who reaches the port can act on the queues unless --token is set. It answers
    only requests for 127.0.0.1, localhost, [::1], the --host value and each --allowed-host
    (others get 421), so a web page cannot reach it by rebinding its own name. Examples:

    \b
        lanemq dashboard local:./lanemq-data --queue email
        LANEMQ_DASHBOARD_TOKEN=s3cret lanemq dashboard redis://localhost:6379/0 \\
            --queue email --queue reports --host 0.0.0.0 --allowed-host queues.internal

    Stops on SIGTERM or SIGINT (exit code 0)."""
    try:
        import uvicorn

        from ..dashboard import app
        from ..dashboard._hosts import LOOPBACK, AllowedHosts
    except ImportError as error:
        package = (error.name or "?").partition(".")[0]
        raise click.ClickException(
            f"the dashboard needs the package {package!r}: pip install 'lanemq[dashboard]'"
        ) from None
    configure_logging(log_level)
    _check_listen_address(host)
    names = list(dict.fromkeys([*LOOPBACK, host, *allowed_hosts]))
    try:
        AllowedHosts(names)  # (app() checks them too, but only after the queues are opened)
    except ConfigError as error:
        raise click.UsageError(f"--allowed-host: {error}") from None
    queues = []
    try:
        if queue_names:
            for name in dict.fromkeys(queue_names):
                queues.append(open_queue(QueueRef(url, name, prefix, False)))
            application = app(queues, read_only=read_only, token=token, allowed_hosts=names)
        else:
            application = app(
                url=url, prefix=prefix, read_only=read_only, token=token, allowed_hosts=names
            )
    except ConfigError as error:
        raise click.UsageError(str(error)) from None
    log.info(
        "answering requests for the hosts %s (others get 421: --allowed-host NAME adds one)",
        ", ".join(names),
    )
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
