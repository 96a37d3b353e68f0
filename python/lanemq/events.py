"""The manager's event stream: an in-process broadcast to any number of async subscribers.

Each subscriber has its own bounded buffer. A subscriber that falls behind does not slow the
manager down and does not lose events silently: the events that did not fit are counted, and it
receives a `queue.events.lagged` event carrying `missed` before the events that follow."""

from __future__ import annotations

import asyncio
import collections
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

LAGGED = "queue.events.lagged"


@dataclass(frozen=True, slots=True)
class Event:
    """One event: its key (e.g. ``queue.command.completed``), its payload, and when it happened
    in milliseconds since the Unix epoch (as every timestamp of lanemq, job events included;
    durations in payloads, such as a retry's ``delay``, are seconds, as in the options)."""

    key: str
    payload: dict[str, Any] = field(default_factory=dict)
    timestamp: int = 0


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class _Gap:
    __slots__ = ("missed",)

    def __init__(self) -> None:
        self.missed = 1


class Subscription(AsyncIterator[Event]):
    """An async iterator over the events whose key matches one of the filters (all when none).
    A filter is an exact key or a prefix ending in ``*`` (``queue.command.*``).

    With ``where``, only the matching events for which ``where(event)`` is true are kept: it
    is called as each event is emitted, so the buffer holds only what the subscriber wants.
    Should it raise, the subscription ends: the events already kept are delivered, then
    iteration raises that error."""

    def __init__(
        self,
        bus: EventBus,
        keys: tuple[str, ...],
        buffer: int,
        where: Callable[[Event], bool] | None = None,
    ) -> None:
        if where is not None and not callable(where):
            raise TypeError(f"where must be a callable taking an Event, got {where!r}")
        self._bus = bus
        self._where = where
        self._error: Exception | None = None
        self._exact = frozenset(k for k in keys if not k.endswith("*"))
        self._prefixes = tuple(k[:-1] for k in keys if k.endswith("*"))
        self._match_all = not keys
        # A `_Gap` in the buffer stands where events were dropped, so the subscriber learns of
        # the loss in order: after the events that fit, before those that came later.
        self._buffer: collections.deque[Event | _Gap] = collections.deque()
        self._limit = buffer
        self._closed = False
        self._waiter: asyncio.Future[None] | None = None

    def matches(self, key: str) -> bool:
        """Whether an event named ``key`` is one this subscription takes (by its keys and
        prefixes), before its ``where``."""
        return self._match_all or key in self._exact or key.startswith(self._prefixes)

    def _offer(self, event: Event) -> None:
        """Keeps ``event`` if it passes ``where`` (the key already matched)."""
        where = self._where
        if where is not None:
            try:
                if not where(event):
                    return
            except Exception as error:
                # The emitter (the manager's hot path) must not fail for a subscriber's bug:
                # the subscriber gets it instead, after the events it already has.
                self._error = error
                self.close()
                return
        self._push(event)

    def _push(self, event: Event) -> None:
        buffer = self._buffer
        last = buffer[-1] if buffer else None
        if isinstance(last, _Gap):
            if len(buffer) > self._limit:
                last.missed += 1
            else:
                buffer.append(event)
        elif len(buffer) >= self._limit:
            buffer.append(_Gap())
        else:
            buffer.append(event)
        self._notify()

    def _notify(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def close(self) -> None:
        """Stops the subscription; iteration ends once the buffered events are read."""
        if not self._closed:
            self._closed = True
            self._bus._unsubscribe(self)
            self._notify()

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> Event:
        while True:
            if self._buffer:
                item = self._buffer.popleft()
                if isinstance(item, _Gap):
                    return Event(LAGGED, {"missed": item.missed}, _now_ms())
                return item
            if self._closed:
                error, self._error = self._error, None
                if error is not None:
                    raise error
                raise StopAsyncIteration
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None

    async def __aenter__(self) -> Subscription:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()


class EventBus:
    """Fans events out to subscriptions. `active` is False when nobody listens, so the manager
    skips building events at all on its hot path."""

    def __init__(self) -> None:
        # A tuple, replaced (not changed) on subscribe and unsubscribe: a subscription that
        # closes itself while an event is being emitted (its ``where`` raised) does not make
        # the loop in `emit` skip the next one.
        self._subscriptions: tuple[Subscription, ...] = ()
        self.active = False

    def subscribe(
        self,
        keys: tuple[str, ...],
        buffer: int = 10_000,
        where: Callable[[Event], bool] | None = None,
    ) -> Subscription:
        """A new `Subscription` to the events whose key is in ``keys`` (a key ending in ``*`` is a
        prefix; none: every event), buffering at most ``buffer`` of them; ``where`` filters
        further. `ValueError` for a ``buffer`` below 1."""
        if buffer < 1:
            raise ValueError(f"invalid buffer: {buffer} (must be at least 1)")
        subscription = Subscription(self, keys, buffer, where)
        self._subscriptions += (subscription,)
        self.active = True
        return subscription

    def _unsubscribe(self, subscription: Subscription) -> None:
        self._subscriptions = tuple(s for s in self._subscriptions if s is not subscription)
        self.active = bool(self._subscriptions)

    def emit(self, key: str, **payload: Any) -> None:
        """Sends the event ``key`` with ``payload`` to every subscription that takes it; builds
        nothing when none does."""
        event: Event | None = None
        for subscription in self._subscriptions:
            if subscription.matches(key):
                if event is None:
                    event = Event(key, payload, _now_ms())
                subscription._offer(event)

    def close(self) -> None:
        """Closes every subscription: their iterators end."""
        for subscription in self._subscriptions:
            subscription.close()
