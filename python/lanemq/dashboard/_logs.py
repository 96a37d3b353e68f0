"""A job's log lines as the job page shows them: each with the moment it was written, in UTC to
the millisecond (``2026-12-06 16:04:05.123``), so lines written in one burst stay apart; a line
stored without a time (by an older version) is shown as its text alone."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone

from ..job import LogEntry


@dataclass(frozen=True, slots=True)
class LogRow:
    """One line of the page's log: ``stamp`` shown, ``machine`` for ``<time datetime>``
    (both None for a line without a time), and the text (escaped by the template)."""

    stamp: str | None
    machine: str | None
    text: str


def log_rows(entries: list[LogEntry]) -> list[LogRow]:
    """The rows of ``entries``, in their order."""
    return [_row(entry) for entry in entries]


def _row(entry: LogEntry) -> LogRow:
    if entry.time is None:
        return LogRow(None, None, entry.text)
    # The seconds and the milliseconds from the integer apart: a float of ms / 1000 may land a
    # hair under the millisecond it names.
    seconds, millis = divmod(entry.time, 1000)
    moment = datetime.fromtimestamp(seconds, tz=timezone.utc)
    stamp = f"{moment:%Y-%m-%d %H:%M:%S}.{millis:03d}"
    return LogRow(stamp, f"{moment:%Y-%m-%dT%H:%M:%S}.{millis:03d}Z", entry.text)
