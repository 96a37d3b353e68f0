"""Job schedulers: repeating jobs by interval or cron."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from .. import _checks, _json
from .._core import JobOptions
from ..exceptions import ConfigError
from ..job import Job
from ..schedulers import JobScheduler, Repeat, every_ms, instant, limit_value
from ._base import QueueBase, new_job
from ._common import _options

#: What `upsert` repeats: every (ms), cron, tz, limit and start (ms), all checked.
_Spec = tuple[int | None, str | None, str, int | None, int | None]


async def upsert(
    queue: QueueBase,
    key: str,
    spec: _Spec,
    end: int | None,
    immediately: bool,
    name: str,
    body: str,
    options: JobOptions | None,
    now: int | None,
) -> Job:
    """The backend's upsert of scheduler ``key`` (its arguments checked): its pending
    occurrence. Shared by `upsert_scheduler` and the ``repeat=`` option of `add`."""
    every, cron, tz, limit, start = spec
    record = await queue._core.upsert_scheduler(
        key, every, cron, tz, limit, start, end, immediately, name, body, options, now
    )
    return new_job(queue, record)


async def add_repeating(
    queue: QueueBase,
    name: str,
    data: Any,
    options: JobOptions | dict[str, Any] | None,
    given: dict[str, Any],
    repeat: Repeat | dict[str, Any] | None,
    now: int | None,
) -> Job:
    """``add(name, data, options, **given, repeat=repeat)`` (BullMQ's legacy repeat): upserts
    the scheduler of `Repeat.scheduler_key` (name, repeat and ``job_id``), whose template is
    this add's name, data and options without ``job_id``; returns its pending occurrence.
    ``repeat`` may come in a dict ``options`` instead of the keyword."""
    if isinstance(options, dict) and "repeat" in options:
        if repeat is not None:
            raise TypeError("pass repeat either as a keyword or in options, not both")
        options = dict(options)
        repeat = options.pop("repeat")
    if repeat is None:
        raise TypeError("repeat must be a Repeat or a dict, got None")
    spec = Repeat.of(repeat)
    given = dict(given)
    job_id = given.pop("job_id", None)
    if isinstance(options, dict) and "job_id" in options:
        options = dict(options)
        job_id = options.pop("job_id")
    elif isinstance(options, JobOptions) and options.job_id is not None:
        raise ConfigError(
            f"invalid job_id {options.job_id!r} in JobOptions with repeat= (a repeat's job_id "
            "names its scheduler: pass it as the job_id= keyword)"
        )
    if job_id is not None and not isinstance(job_id, str):
        raise TypeError(f"job_id must be a str, got {job_id!r}")
    opts = _options(options, given)
    if opts is not None and opts.delay:
        raise ConfigError(
            f"invalid delay: {opts.delay} s with repeat= (the schedule decides when its "
            "occurrences run)"
        )
    _checks.job_name(name)
    body = _json.dumps_data(data, name)
    every = every_ms(spec.every, spec.pattern)
    key = spec.scheduler_key(name, job_id or None)
    tz = "UTC" if spec.tz is None else spec.tz
    checked = (every, spec.pattern, tz, limit_value(spec.limit), instant("start", spec.start))
    end = instant("end", spec.end)
    return await upsert(queue, key, checked, end, spec.immediately, name, body, opts, now)


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
        ``job_id`` or ``delay``): every occurrence is a job made from it, delayed until its
        run time, with the id ``repeat:<key>:<run time ms>``. Its ``dedup`` may only be
        ``Dedup(id, keep_last=True)``: while the key's holder (a running occurrence) has not
        finished, the next occurrence waits on the key, and is added when it finishes (at its
        run time, at once if that passed), so a slow job never piles up occurrences; the
        other modes would turn an occurrence away, and the schedule with it. ``limit`` caps the
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
        spec = (every_value, cron, tz, limit_value(limit), instant("start", start))
        end_ms = instant("end", end)
        return await upsert(self, key, spec, end_ms, immediately, name, body, opts, now)

    async def get_scheduler(self, key: str) -> JobScheduler | None:
        """The job scheduler ``key``, or None if there is none."""
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
        """How many job schedulers the queue has."""
        return await self._core.count_schedulers()

    async def remove_scheduler(self, key: str, *, now: int | None = None) -> bool:
        """Removes the scheduler ``key`` and its pending occurrence if that has not started
        (a running one finishes normally). True if the scheduler existed."""
        return await self._core.remove_scheduler(key, now)
