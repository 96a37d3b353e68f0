"""The queues a dashboard shows, by name: those given, or those a URL's backend holds."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from starlette.exceptions import HTTPException

from ..exceptions import ConfigError
from ..queue import JobQueue
from ..urls import from_url, list_queue_names, local_queue_file, redact_url


class QueueSource:
    """The queues given to `lanemq.dashboard.app` (in the order given), or, with ``url``,
    the queues its backend holds (`list_queue_names`, read again for each page that lists
    them, so a new queue shows without a restart). A queue of a URL is opened when first
    shown, and only once listed: looking up a name that is not there never creates a queue
    (a local queue's file, say)."""

    def __init__(
        self, queues: Sequence[JobQueue] | None, url: str | None, options: dict[str, Any]
    ) -> None:
        if (queues is None) == (url is None):
            raise ConfigError("give the dashboard either queues or a url (not both)")
        if options and url is None:
            raise ConfigError("prefix goes with url (given queues have theirs)")
        self._url = url
        self._options = options
        self._queues: dict[str, JobQueue] = {}
        #: The queues opened here, from the URL (closed by `close`).
        self._opened: list[JobQueue] = []
        if url is not None:
            _check_url(url, options)
            return
        assert queues is not None
        if isinstance(queues, JobQueue) or not isinstance(queues, Sequence):
            raise TypeError(f"queues must be a sequence of JobQueue, got {queues!r}")
        for queue in queues:
            if not isinstance(queue, JobQueue):
                raise TypeError(f"queues must be JobQueue objects, got {queue!r}")
            if queue.name in self._queues:
                raise ConfigError(f"queue {queue.name!r} is given twice")
            self._queues[queue.name] = queue
        if not self._queues:
            raise ConfigError("no queues to show: give at least one queue")

    def __repr__(self) -> str:
        if self._url is not None:
            return f"QueueSource(url={redact_url(self._url)!r})"
        return f"QueueSource({list(self._queues)!r})"

    async def names(self) -> list[str]:
        if self._url is None:
            return list(self._queues)
        return await list_queue_names(self._url, **self._options)

    async def all(self) -> list[JobQueue]:
        """Every queue, in order (those of a URL listed once)."""
        return [self._open(name) for name in await self.names()]

    async def get(self, name: str) -> JobQueue:
        """The queue ``name``; an unknown one is a 404 naming the known ones."""
        queue = self._queues.get(name)
        if queue is not None:
            return queue
        names = await self.names() if self._url is not None else []
        if name not in names:
            known = ", ".join(repr(n) for n in names or self._queues) or "none"
            raise HTTPException(404, f"no queue {name!r} here (queues: {known})")
        return self._open(name)

    def _open(self, name: str) -> JobQueue:
        """The queue ``name``, which is known to exist: opened from the URL the first time."""
        queue = self._queues.get(name)
        if queue is None:
            assert self._url is not None
            queue = self._queues[name] = from_url(self._url, name, **self._options)
            self._opened.append(queue)
        return queue

    async def known(self, name: str) -> bool:
        return name in self._queues or (self._url is not None and name in await self.names())

    async def close(self) -> None:
        """Closes the queues opened from the URL (given ones stay the caller's)."""
        opened, self._opened = self._opened, []
        for queue in opened:
            self._queues.pop(queue.name, None)
            await queue.close()


def _check_url(url: str, options: dict[str, Any]) -> None:
    """Refuses a URL the dashboard cannot show (`ConfigError`, as `from_url` says), opening
    nothing."""
    if not isinstance(url, str):
        raise TypeError(f"url must be a str, got {type(url).__name__}")
    scheme = url.partition(":")[0].lower()
    if scheme == "memory":
        raise ConfigError(
            "a memory:// URL names no queues to show (each is private to its object): pass "
            "the queues themselves"
        )
    if local_queue_file(url, "default") is not None:  # (refuses a malformed local: URL)
        if options:
            raise ConfigError("prefix applies to Redis URLs only")
        return
    # Redis: making the object checks the URL and options, and connects to nothing.
    from_url(url, "default", **options)
