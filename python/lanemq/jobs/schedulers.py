"""Job schedulers: repeating jobs by interval or cron."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from .. import _checks, _json
from ..job import Job
from ..schedulers import JobScheduler, every_ms, instant, limit_value
from ._base import QueueBase, new_job
from ._common import _options


class QueueSchedulers(QueueBase):
    """The part of `JobQueue` for job schedulers."""

    async def upsert_scheduler(
        self,
        key: str,
        *,
        every: float | None = None,
        cron: str | None = None,
        template: Sequence[Any],
        limit: int | None = None,
        start: datetime | int | None = None,
        end: datetime | int | None = None,
        tz: str = "UTC",
        immediately: bool = False,
        now: int | None = None,
    ) -> Job:
        """Creates or updates the job scheduler ``key`` and returns its pending occurrence.

        The schedule is ``every`` seconds, or the ``cron`` pattern (5 fields, 6 with seconds
        first, or 7 with seconds first and a year last: once its years have passed, the
        schedule ends) read in the IANA zone ``tz``; exactly one of them. ``template`` is
        ``(name, data)`` or ``(name, data, options)`` (`JobOptions` or a dict, without
        ``job_id``, ``dedup`` or ``delay``): every occurrence is a job made from it, delayed
        until its run time, with the id ``repeat:<key>:<run time ms>``. ``limit`` caps the
        number of occurrences (the first included); ``start`` and ``end`` (aware `datetime`
        or epoch milliseconds) bound the run times; ``immediately`` makes a cron schedule run
        once at once (an ``every`` schedule always does), and cannot be combined with
        ``start`` (as in BullMQ).

        One occurrence is pending at a time, and it belongs to the scheduler: `remove`
        refuses it (`JobStateError`; `remove_scheduler` removes both), and `drain` and
        `clean` leave it, as in BullMQ. The next one is produced when a worker claims
        the pending one, at the schedule's next time (missed times are skipped, not
        replayed); when there is none (``limit``, ``end``) the scheduler is removed.
        Upserting again with the same schedule and template changes nothing. Otherwise the
        pending occurrence, if it has not started, is replaced (a ``removed`` event): at its
        own run time if the ``every`` value or cron pattern and zone are unchanged, else at
        the new schedule's first run; the iteration count carries on, so a ``limit`` below it
        is refused. Invalid input raises `ConfigError` (a `ValueError`) naming the value, and
        writes nothing."""
        every_value = every_ms(every, cron)
        if isinstance(template, str | bytes) or not isinstance(template, Sequence):
            raise TypeError(f"template must be (name, data[, options]), got {template!r}")
        if not 2 <= len(template) <= 3:
            raise TypeError(f"template must be (name, data[, options]), got {template!r}")
        name, data = template[0], template[1]
        _checks.job_name(name, f"job name of the template of scheduler {key!r}")
        opts = _options(template[2] if len(template) == 3 else None, {})
        body = _json.dumps(data, f"data of the template of scheduler {key!r}")
        record = await self._core.upsert_scheduler(
            key,
            every_value,
            cron,
            tz,
            limit_value(limit),
            instant("start", start),
            instant("end", end),
            immediately,
            name,
            body,
            opts,
            now,
        )
        return new_job(self, record)

    async def get_scheduler(self, key: str) -> JobScheduler | None:
        record = await self._core.get_scheduler(key)
        return None if record is None else JobScheduler._from_record(record)

    async def list_schedulers(
        self, start: int = 0, end: int = -1, ascending: bool = True
    ) -> list[JobScheduler]:
        """Schedulers ordered by next run time (then key), from index ``start`` to ``end``
        inclusive (negative indexes count from the end)."""
        records = await self._core.list_schedulers(start, end, ascending)
        return [JobScheduler._from_record(record) for record in records]

    async def count_schedulers(self) -> int:
        return await self._core.count_schedulers()

    async def remove_scheduler(self, key: str, *, now: int | None = None) -> bool:
        """Removes the scheduler ``key`` and its pending occurrence if that has not started
        (a running one finishes normally). True if the scheduler existed."""
        return await self._core.remove_scheduler(key, now)
