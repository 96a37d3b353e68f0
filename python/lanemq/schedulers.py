"""Job schedulers (BullMQ's ``upsertJobScheduler``): `JobScheduler`, what a queue reports of
one, and the checks and conversions of `JobQueue.upsert_scheduler`'s arguments.

A scheduler produces *occurrences*: normal jobs made from its template, delayed until their
run time, with the id ``repeat:<key>:<run time ms>``. One occurrence is pending at a time; the
next is produced when a worker claims (starts) the pending one, so a slow job does not shift
the schedule."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from datetime import datetime, timedelta, timezone
from typing import Any

from . import _json
from ._core import JobOptions, SchedulerRecord
from .exceptions import ConfigError

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_MS = timedelta(milliseconds=1)
_MAX = 2**63 - 1


@dataclass(frozen=True, slots=True)
class JobScheduler:
    """One job scheduler as a queue read it. Exactly one of ``every`` (seconds) and ``cron``
    is set; ``tz`` is the cron pattern's zone. ``start`` and ``end`` are milliseconds since the
    Unix epoch; ``name``, ``data`` (decoded) and ``options`` are the template of every
    occurrence. ``iteration_count`` counts the occurrences produced so far (the pending one
    included), ``next_run`` is the run time of the latest, and ``job_id`` is the id of the
    pending occurrence while it exists and has not started, else None (`remove`, `drain` and
    `clean` leave a pending occurrence alone, as in BullMQ); None too while that occurrence
    waits on its template's keep_last dedup key, to be added when the key's holder finishes."""

    key: str
    name: str
    data: Any
    options: JobOptions
    every: float | None
    cron: str | None
    tz: str | None
    limit: int | None
    start: int | None
    end: int | None
    immediately: bool
    iteration_count: int
    next_run: int
    job_id: str | None

    @classmethod
    def _from_record(cls, record: SchedulerRecord) -> JobScheduler:
        every = record.every
        return cls(
            key=record.key,
            name=record.name,
            data=_json.loads(record.data),
            options=record.options,
            every=None if every is None else every / 1000,
            cron=record.cron,
            tz=record.tz,
            limit=record.limit,
            start=record.start,
            end=record.end,
            immediately=record.immediately,
            iteration_count=record.iteration_count,
            next_run=record.next_run,
            job_id=record.job_id,
        )


@dataclass(frozen=True, slots=True)
class Repeat:
    """BullMQ's legacy ``repeat`` option of `JobQueue.add`: ``add(name, data,
    repeat=Repeat(every=60))`` makes (or updates) a job scheduler rather than one job. Exactly
    one of ``every`` (seconds) and ``pattern`` (a cron pattern, read in the IANA zone ``tz``,
    UTC when None); ``limit``, ``start``, ``end`` and ``immediately`` are those of
    `JobQueue.upsert_scheduler`. A dict of these fields works too."""

    every: float | None = None
    pattern: str | None = None
    tz: str | None = None
    limit: int | None = None
    start: datetime | int | None = None
    end: datetime | int | None = None
    immediately: bool = False

    def scheduler_key(self, name: str, job_id: str | None = None) -> str:
        """The key of the scheduler that ``add(name, ..., job_id=job_id, repeat=self)``
        makes: BullMQ's repeat key, ``<name>:<job_id>:<end ms>:<tz>:<pattern or every
        ms>`` (empty parts for what is not given), so adding the same repeat again updates
        that scheduler rather than making a second one."""
        every = every_ms(self.every, self.pattern)
        end = instant("end", self.end)
        parts = (name, job_id, end, self.tz, self.pattern if every is None else every)
        return ":".join("" if part is None else str(part) for part in parts)

    @classmethod
    def of(cls, repeat: Repeat | dict[str, Any]) -> Repeat:
        """``repeat`` as a `Repeat`; a dict's keys must be its fields."""
        if isinstance(repeat, Repeat):
            return repeat
        if not isinstance(repeat, dict):
            raise TypeError(f"repeat must be a Repeat or a dict, got {repeat!r}")
        known = {f.name for f in fields(cls)}
        unknown = sorted(str(k) for k in repeat if k not in known)
        if unknown:
            raise ConfigError(
                f"invalid repeat option {unknown[0]!r} (known: {', '.join(sorted(known))})"
            )
        return cls(**repeat)


def every_ms(every: float | None, cron: str | None) -> int | None:
    """``every`` seconds as milliseconds; refuses both or neither of ``every`` and ``cron``."""
    if every is None and cron is None:
        raise ConfigError("invalid schedule: neither every nor cron (give exactly one)")
    if every is not None and cron is not None:
        raise ConfigError(f"invalid schedule: every={every!r} and cron={cron!r} (give exactly one)")
    if cron is not None and not isinstance(cron, str):
        raise TypeError(f"cron must be a str, got {cron!r}")
    if every is None:
        return None
    if isinstance(every, bool) or not isinstance(every, int | float):
        raise TypeError(f"every must be a number of seconds, got {every!r}")
    if not (every > 0 and math.isfinite(every)):
        raise ConfigError(f"invalid every: {every!r} (must be a finite number of seconds > 0)")
    ms = round(every * 1000)
    if ms < 1:
        raise ConfigError(f"invalid every: {every!r} (must be at least 0.001 seconds)")
    if ms > _MAX:
        raise ConfigError(f"invalid every: {every!r} (too large)")
    return ms


def instant(field: str, value: datetime | int | None) -> int | None:
    """An aware `datetime` or epoch milliseconds as milliseconds (None stays None)."""
    if value is None:
        return None
    if isinstance(value, datetime):
        if value.tzinfo is None or value.utcoffset() is None:
            raise ConfigError(f"invalid {field}: {value!r} (a datetime must be timezone-aware)")
        ms = (value - _EPOCH) // _MS
    elif isinstance(value, int) and not isinstance(value, bool):
        ms = value
    else:
        raise TypeError(
            f"{field} must be an aware datetime or epoch milliseconds (int), got {value!r}"
        )
    if not 0 <= ms <= _MAX:
        raise ConfigError(f"invalid {field}: {value!r} (must be at or after the Unix epoch)")
    return ms


def limit_value(limit: int | None) -> int | None:
    if limit is None:
        return None
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise TypeError(f"limit must be an int, got {limit!r}")
    if not 1 <= limit <= _MAX:
        raise ConfigError(f"invalid limit: {limit} (must be at least 1)")
    return limit


__all__ = ["JobScheduler", "Repeat"]
