"""What every part of `JobQueue` stands on: the queue's name and backend core, closing, and
the calls a `JobWorker` makes beyond the job contract."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, TypeVar

from .._core import JobQueueCore
from ..job import Job

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from .._core import JobOptions, JobRecord
    from .queue import JobQueue

_Q = TypeVar("_Q", bound="QueueBase")

if TYPE_CHECKING:

    def new_job(queue: QueueBase, record: JobRecord) -> Job:
        """A `Job` of ``queue``: every part is a part of a `JobQueue`, which `Job` takes."""

else:
    # (`Job` itself at run time: the parts make jobs at no cost beyond the constructor)
    new_job = Job


class QueueBase:
    """The name, the core and the life of a queue; the parts of `JobQueue` build on it."""

    #: Whether calls wait on something outside this thread (a server, a file's writer thread):
    #: workers then keep two calls in flight so jobs run while one is out.
    _remote = True
    #: Set by `close`: a closed queue is not handed out again as a flow node's queue.
    _closed = False

    def __init__(self, name: str, core: JobQueueCore) -> None:
        self.name = name
        self._core = core

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"

    def _add_one(
        self, name: str, body: str, options: JobOptions | None, now: int
    ) -> Awaitable[JobRecord]:
        """The backend's add of one job (a local queue may gather them, `LocalJobQueue`)."""
        return self._core.add(name, body, options, now)

    async def close(self) -> None:
        """Releases the backend's resources (a local queue's file) once pending operations are
        done. The queue cannot be used afterwards."""
        self._closed = True
        await self._core.close()

    async def __aenter__(self: _Q) -> _Q:
        # (self-typed: ``async with LocalJobQueue(...) as q`` gives a LocalJobQueue)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def _wait_reachable(self, timeout: float) -> bool:
        """Waits until the backend answers again (a server backend asks it often), at most
        ``timeout`` seconds; whether it did. An in-process backend just waits."""
        await asyncio.sleep(timeout)
        return True

    # The calls a `JobWorker` makes beyond the job contract: public names, so the worker does
    # not reach into the queue's private parts; they delegate to the private ones, which
    # backends override and tests call.

    @property
    def max_payload_bytes(self) -> int:
        """The largest payload the queue takes, in bytes of JSON: a job's data and its result
        (a worker fails a job whose result is larger, with `ValueError`)."""
        return self._core.max_payload_bytes

    @property
    def remote(self) -> bool:
        """Whether calls wait on something outside this thread (a server, a file's writer
        thread): a `JobWorker` then keeps two calls in flight so jobs run while one is out."""
        return self._remote

    async def wait_reachable(self, timeout: float) -> bool:
        """For a worker that lost its backend: waits until the backend answers again, at most
        ``timeout`` seconds; whether it did."""
        return await self._wait_reachable(timeout)

    if TYPE_CHECKING:
        # (`JobQueue.sibling`, which the backends override; the flows part calls it)
        def sibling(self, name: str) -> JobQueue: ...
