"""A job's log lines as the job page shows them: each with the moment it was written, in UTC to
the millisecond (``2026-12-06 16:04:05.123``), so lines written in one burst stay apart; a line
stored without a time (by an older version) is shown as its text alone."""

from __future__ import annotations

from dataclasses import dataclass

from .._format import when_ms
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
    stamp = when_ms(entry.time)
    return LogRow(stamp, stamp.replace(" ", "T") + "Z", entry.text)
