"""`GatheredAdds`: a `sync="normal"` local queue's awaited adds, committed together once per
event-loop iteration, on the loop's thread when the file allows it."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .._core import JobOptions, JobQueueCore, JobRecord

_Item = tuple[str, str, "JobOptions | None", int]


class GatheredAdds:
    """Defers each add by one loop iteration: the adds made in that iteration (one task's, or
    a hundred tasks' gathered at once) go to the core together (`add_gathered`), which commits
    them in one transaction on this thread when the writer has none of the queue's operations
    and no process holds the file's lock, or hands them all to the writer thread, which groups
    them as before. A lone add thus skips the two thread hand-offs of the writer (about 100 us
    from an asyncio loop) while a burst keeps its group commit (benches/history/18.md)."""

    def __init__(self, core: JobQueueCore) -> None:
        self._core = core
        # By loop: a queue may be used from several threads' loops.
        self._pending: dict[
            asyncio.AbstractEventLoop,
            list[tuple[_Item, asyncio.Future[Awaitable[JobRecord]]]],
        ] = {}

    async def gather(self, name: str, body: str, options: JobOptions | None, now: int) -> JobRecord:
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[Awaitable[JobRecord]] = loop.create_future()
        pending = self._pending.get(loop)
        if pending is None:
            pending = self._pending[loop] = []
            loop.call_soon(self._flush, loop)
        pending.append(((name, body, options, now), answer))
        # (the core's awaitable: already resolved when the loop's thread committed the adds)
        return await (await answer)

    def _flush(self, loop: asyncio.AbstractEventLoop) -> None:
        pending = self._pending.pop(loop, [])
        try:
            awaitables = self._core.add_gathered([item for item, _ in pending])
        except Exception:
            # One item the core could not even take (text that is not valid Unicode): each
            # add alone, so a bad one fails only its own caller, as `add` would.
            for item, answer in pending:
                try:
                    one = self._core.add(*item)
                except Exception as error:
                    if not answer.done():
                        answer.set_exception(error)
                    continue
                _give(answer, one)
            return
        for (_, answer), awaitable in zip(pending, awaitables, strict=True):
            _give(answer, awaitable)


def _give(answer: asyncio.Future[Awaitable[JobRecord]], awaitable: Awaitable[JobRecord]) -> None:
    # (a caller cancelled while it waited for the flush: its add was made, as a cancelled
    # add already sent to the writer is)
    if not answer.done():
        answer.set_result(awaitable)
