"""A queue's event stream: reading, following, trimming, publishing."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from .. import _json
from ..exceptions import ConfigError
from ._base import QueueBase


@dataclass(frozen=True, slots=True)
class QueueEvent:
    """One entry of a queue's event stream. A custom event (`JobQueue.publish_event`) has
    ``custom`` set, its publisher's name as ``event`` and its payload, decoded, as ``data``;
    lanemq's own events have their values in ``fields``."""

    id: int
    timestamp: int
    event: str
    job_id: str | None
    fields: dict[str, str] = field(default_factory=dict)
    data: Any = None
    custom: bool = False


# The one name the backends store custom events under (lanemq_core's CUSTOM_EVENT); the
# publisher's name and payload are its fields.
_CUSTOM_EVENT = "custom"

_EventRow: TypeAlias = "tuple[int, int, str, str | None, list[tuple[str, str]]]"


def _event(row: _EventRow) -> QueueEvent:
    event_id, timestamp, event, job_id, fields = row
    if event == _CUSTOM_EVENT:
        named = dict(fields)
        data = json.loads(named["data"]) if "data" in named else None
        return QueueEvent(event_id, timestamp, named.get("name", ""), job_id, {}, data, True)
    return QueueEvent(event_id, timestamp, event, job_id, dict(fields))


class QueueEvents(QueueBase):
    """The part of `JobQueue` for its event stream."""

    async def read_events(
        self, start: int = 0, end: int | None = None, limit: int = 0
    ) -> list[QueueEvent]:
        """Events with ``start <= id <= end``, oldest first, at most ``limit`` (0: all)."""
        rows = await self._core.read_events(start, 2**63 - 1 if end is None else end, limit)
        return [_event(row) for row in rows]

    async def trim_events(self, max_len: int) -> int:
        """Keeps the newest ``max_len`` events; returns how many were dropped."""
        if max_len < 0:
            raise ConfigError(f"invalid max_len: {max_len} (must be >= 0)")
        return await self._core.trim_events(max_len)

    async def events(
        self,
        after: int | None = None,
        *,
        names: Iterable[str] | None = None,
        where: Callable[[QueueEvent], bool] | None = None,
    ) -> AsyncIterator[QueueEvent]:
        """Follows the event stream: the events after id ``after`` (default: from now on),
        then new ones as they come; only those whose ``event`` is in ``names`` (when given)
        and for which ``where(event)`` is true (when given: a predicate that raises ends
        the iteration with its exception)."""
        # (A single name is taken as one name, not as the characters of one.)
        wanted = None if names is None else frozenset([names] if isinstance(names, str) else names)
        last = await self._core.last_event_id() if after is None else after
        while True:
            rows = await self._core.read_events(last + 1, 2**63 - 1, 1000)
            if not rows:
                await self._core.wait_events(last)
                continue
            for row in rows:
                last = row[0]
                event = _event(row)
                if wanted is not None and event.event not in wanted:
                    continue
                if where is None or where(event):
                    yield event

    async def publish_event(
        self,
        event: str,
        data: dict[str, Any] | None = None,
        *,
        job_id: str | None = None,
        now: int | None = None,
    ) -> int:
        """Appends a custom event to the queue's event stream (BullMQ's
        ``QueueEventsProducer.publishEvent``) and returns its id: ``event`` is its name (1 to
        200 bytes, not one of the names lanemq writes, such as ``completed``), ``data`` a JSON
        object (a dict with string keys), ``job_id`` the job it is about, if any. Readers
        (`events`, `read_events`) see it as a `QueueEvent` with ``custom`` set. It is kept and
        trimmed as the queue's other events are (``max_events``)."""
        if not isinstance(event, str):
            raise TypeError(f"event must be a str, got {event!r}")
        if data is None:
            data = {}
        if not isinstance(data, dict) or not all(isinstance(key, str) for key in data):
            raise TypeError(f"data of event {event!r} must be a dict with str keys, got {data!r}")
        if job_id is not None and not isinstance(job_id, str):
            raise TypeError(f"job_id must be a str or None, got {job_id!r}")
        body = _json.dumps(data, f"data of event {event!r}")
        return await self._core.publish_event(event, job_id, body, now)
