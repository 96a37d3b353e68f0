"""Finding jobs by criteria, a page at a time, and removing the jobs found."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..exceptions import ConfigError
from ..job import Job
from ._base import QueueBase, new_job

#: The most jobs a page of `JobQueue.search_jobs` holds; a page also stops after reading this
#: many jobs, matching or not (the Rust core's ``SEARCH_SCAN_LIMIT``).
MAX_SEARCH_COUNT = 1000


@dataclass(frozen=True, slots=True)
class JobPage:
    """A page of `JobQueue.search_jobs`: the ``jobs`` found, and ``cursor``, where the next
    page starts (pass it as ``cursor=``), or None when the search reached the end. A page may
    hold fewer jobs than asked, even none, and still have a next one: each page reads at most
    1000 jobs, so a search of a big queue never holds it long."""

    jobs: list[Job]
    cursor: int | None


#: The values a data criterion may compare with (a JSON scalar).
_SCALARS = (str, int, float, bool, type(None))


def _text(value: Any, field: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise ConfigError(f"invalid {field}: {value!r} (must be a str or None)")
    return value


def _seconds(value: Any, field: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
        raise ConfigError(f"invalid {field}: {value!r} (must be >= 0 seconds or None)")
    if math.isinf(value):
        raise ConfigError(f"invalid {field}: {value!r} (must be a finite number of seconds)")
    return float(value)


def _count(value: Any, field: str, low: int, high: int | None) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ConfigError(f"invalid {field}: {value!r} (must be an int >= {low})")
    if high is not None and value > high:
        raise ConfigError(f"invalid {field}: {value!r} (must be at most {high})")
    return value


def _data(data: Any) -> tuple[list[str], list[str]]:
    """The dotted paths of ``data`` and the JSON of the value each must equal."""
    if data is None:
        return [], []
    if not isinstance(data, Mapping):
        raise ConfigError(f"invalid data criteria: {data!r} (must be a dict of path: value)")
    paths, values = [], []
    for path, value in data.items():
        if not isinstance(path, str) or not all(path.split(".")):
            raise ConfigError(
                f"invalid data path: {path!r} (dotted keys, none of them empty, as 'a.b')"
            )
        bad_float = isinstance(value, float) and not math.isfinite(value)
        if not isinstance(value, _SCALARS) or bad_float:
            raise ConfigError(
                f"invalid data value for {path!r}: {value!r} (must be a str, a number, a "
                "bool or None: a JSON scalar)"
            )
        paths.append(path)
        values.append(json.dumps(value))
    return paths, values


class QueueSearch(QueueBase):
    """The part of `JobQueue` that searches jobs by criteria and removes what it finds."""

    def _criteria(
        self,
        name: Any,
        text: Any,
        data: Any,
        older_than: Any,
        newer_than: Any,
    ) -> tuple[str | None, str | None, list[str], list[str], float | None, float | None]:
        paths, values = _data(data)
        return (
            _text(name, "name"),
            _text(text, "text"),
            paths,
            values,
            _seconds(older_than, "older_than"),
            _seconds(newer_than, "newer_than"),
        )

    async def search_jobs(
        self,
        *states: str,
        name: str | None = None,
        text: str | None = None,
        data: Mapping[str, Any] | None = None,
        older_than: float | None = None,
        newer_than: float | None = None,
        cursor: int = 0,
        count: int = 100,
        ascending: bool = True,
        now: int | None = None,
    ) -> JobPage:
        """Jobs of ``states`` (all six when none; each state once) meeting every criterion
        given, in `list_jobs`'s order (each state in turn), a page at a time:

        - ``name``: the job's name, exactly;
        - ``text``: the id starts with it or the name contains it (the dashboard's search box);
        - ``data``: ``{"path": value}``, a dotted path into the job's data (``"user.id"``; a
          number indexes a list) and the JSON scalar (str, number, bool, None) found there;
          numbers compare by value (``1 == 1.0``), None only matches a null that is there;
        - ``older_than`` / ``newer_than``: the job's age in seconds, from its finish time when
          it has one (completed, failed), else its creation time, as `clean` measures it.

        ``cursor`` is a position in that order (0: the start): a page starts there, reads at
        most 1000 jobs, returns up to ``count`` (at most 1000) matches, and the cursor of the
        next page, None at the end. Like `list_jobs`' indexes, positions shift when jobs move
        between pages: a job may then be skipped or seen twice. Bad criteria raise
        `ConfigError` naming the value."""
        criteria = self._criteria(name, text, data, older_than, newer_than)
        start = _count(cursor, "cursor", 0, 2**63 - 1)
        size = _count(count, "count", 1, MAX_SEARCH_COUNT)
        if type(ascending) is not bool:
            raise ConfigError(f"invalid ascending: {ascending!r} (must be True or False)")
        records, next_cursor = await self._core.search_jobs(
            list(states), criteria, (start, size), ascending, now
        )
        return JobPage([new_job(self, record) for record in records], next_cursor)

    async def remove_jobs(
        self,
        *states: str,
        name: str | None = None,
        text: str | None = None,
        data: Mapping[str, Any] | None = None,
        older_than: float | None = None,
        newer_than: float | None = None,
        limit: int | None = None,
        now: int | None = None,
    ) -> int:
        """Removes the jobs `search_jobs` finds with these criteria (up to ``limit``, None: all)
        and returns how many. Each is removed as `remove` removes it: a job a worker holds, and
        a job scheduler's pending occurrence, stay (not counted); a job goes with its tree of
        children (not counted), a pending child leaves its parent; each emits ``removed``. The
        search goes a page at a time, each removal on its own, so a big purge never holds the
        queue. At least a state or a criterion must be given (`obliterate` empties a queue)."""
        criteria = self._criteria(name, text, data, older_than, newer_than)
        most = None if limit is None else _count(limit, "limit", 1, 2**63 - 1)
        if not states and criteria == (None, None, [], [], None, None):
            raise ConfigError(
                "remove_jobs needs a state or a criterion (name, text, data, older_than, "
                "newer_than); obliterate() removes every job"
            )
        return await self._core.remove_jobs(list(states), criteria, most, now)
