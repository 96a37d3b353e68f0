"""Plain-text formatting that the ``lanemq`` command and the dashboard share: times, cells,
aligned tables, clipped text. It imports no CLI or web library, so either side can use it
without pulling in the other's dependencies."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import datetime, timezone
from typing import Any


def when(ms: int | None) -> str:
    """Epoch milliseconds as UTC ``YYYY-MM-DD HH:MM:SS``; ``-`` for none."""
    if ms is None:
        return "-"
    moment = datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
    return moment.strftime("%Y-%m-%d %H:%M:%S")


def when_ms(ms: int) -> str:
    """Epoch milliseconds as UTC ``YYYY-MM-DD HH:MM:SS.mmm``: a log line's time, so lines
    written in one burst stay apart."""
    # The seconds and the milliseconds from the integer apart: a float of ms / 1000 may land a
    # hair under the millisecond it names.
    seconds, millis = divmod(ms, 1000)
    moment = datetime.fromtimestamp(seconds, tz=timezone.utc)
    return f"{moment:%Y-%m-%d %H:%M:%S}.{millis:03d}"


def cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def table(
    headers: Sequence[str], rows: Iterable[Sequence[Any]], numeric: Sequence[str] = ()
) -> str:
    """Columns padded to their widest cell, two spaces apart; the ``numeric`` ones aligned
    right. Cells are one line each (a newline shows as ``\\n``)."""
    body = [[cell(value).replace("\n", "\\n") for value in row] for row in rows]
    widths = [len(header) for header in headers]
    for row in body:
        for i, text in enumerate(row):
            widths[i] = max(widths[i], len(text))
    right = [header in numeric for header in headers]
    lines = []
    for row in [list(headers), *body]:
        parts = [
            text.rjust(widths[i]) if right[i] else text.ljust(widths[i])
            for i, text in enumerate(row)
        ]
        lines.append("  ".join(parts).rstrip())
    return "\n".join(lines)


def pairs(items: Iterable[tuple[str, Any]]) -> str:
    """``key  value`` lines with the values in one column."""
    listed = [(key, cell(value)) for key, value in items]
    width = max((len(key) for key, _ in listed), default=0)
    return "\n".join(f"{key.ljust(width)}  {value}".rstrip() for key, value in listed)


def indented(text: str, by: str = "  ") -> str:
    return "\n".join(by + line if line else line for line in text.splitlines())


def pretty(value: Any) -> str:
    """A JSON value for people: indented JSON (a plain string is shown as JSON too, so
    ``"1"`` and ``1`` differ)."""
    return json.dumps(value, indent=2, ensure_ascii=False)


#: How much of a job's data or result ``show`` prints without ``--full``: a screenful.
CLIP_LINES = 40
CLIP_CHARS = 4000


def clipped(text: str, full: bool = False) -> str:
    """``text``, or its first `CLIP_LINES` lines and `CLIP_CHARS` characters and a line
    saying how much was left out (unless ``full``)."""
    lines = text.splitlines()
    if full or (len(lines) <= CLIP_LINES and len(text) <= CLIP_CHARS):
        return text
    kept = "\n".join(lines[:CLIP_LINES])[:CLIP_CHARS]
    left = len(text) - len(kept)
    return f"{kept}\n... ({left} more characters of {len(text)}: --full shows all)"
