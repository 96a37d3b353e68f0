"""What the commands print: aligned plain-text tables for people, one JSON document for
scripts. Plain text needs no dependency and reads the same in a terminal, a log or a pipe.
The formatting itself lives in `lanemq._format`, shared with the dashboard; only printing
(through click) is the CLI's own."""

from __future__ import annotations

import json
from typing import Any

import click

from .._format import (
    CLIP_CHARS,
    CLIP_LINES,
    cell,
    clipped,
    indented,
    pairs,
    pretty,
    table,
    when,
)

__all__ = [
    "CLIP_CHARS",
    "CLIP_LINES",
    "cell",
    "clipped",
    "emit_json",
    "indented",
    "pairs",
    "pretty",
    "table",
    "when",
]


def emit_json(document: Any) -> None:
    """Prints ``document`` as indented JSON (UTF-8 kept as is), followed by a newline."""
    click.echo(json.dumps(document, indent=2, ensure_ascii=False))
