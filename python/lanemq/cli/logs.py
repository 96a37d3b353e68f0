"""The CLI's logging: the ``lanemq`` logger (every lanemq module logs under it) to stderr,
with time, level and logger name. Other loggers are left as the application set them."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from typing import Any

import click

LEVELS = ("debug", "info", "warning", "error", "critical")


def log_level_option(help: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The ``--log-level`` option of the commands that run until stopped (default info)."""
    return click.option(
        "--log-level",
        type=click.Choice(LEVELS, case_sensitive=False),
        default="info",
        show_default=True,
        help=help,
    )


FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class _CliHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Marks the handler this module added, so configuring twice replaces it."""


def configure_logging(level: str) -> None:
    """Sends ``lanemq`` records at ``level`` and above to stderr. They do not propagate to
    the root logger as well, so an application that configured root logging does not print
    them twice."""
    logger = logging.getLogger("lanemq")
    for handler in list(logger.handlers):
        if isinstance(handler, _CliHandler):
            logger.removeHandler(handler)
    handler = _CliHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(FORMAT))
    logger.addHandler(handler)
    logger.setLevel(level.upper())
    logger.propagate = False
