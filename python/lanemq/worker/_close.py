"""How a `JobWorker` stops: running jobs finish until close()'s grace runs out, then the rest
are cancelled and released back to waiting; and the check of the seconds its methods take."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from ..exceptions import ConfigError

if TYPE_CHECKING:
    from ._worker import JobWorker

log = logging.getLogger("lanemq.worker")


def check_seconds(name: str, value: Any, *, optional: bool = True) -> None:
    """Raises `ConfigError` naming ``name`` unless ``value`` is a number of seconds >= 0 (or
    None, when ``optional``)."""
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
        allowed = "None or >= 0 seconds" if optional else ">= 0 seconds"
        raise ConfigError(f"invalid {name}: {value!r} (must be {allowed})")


async def wind_down(worker: JobWorker) -> None:
    """Lets running jobs finish (reporting each outcome as it comes) until close()'s grace
    runs out, then cancels what still runs and gives those jobs back; with ``force``,
    cancels everything and leaves it to stalled recovery. Then reports what is left."""
    await worker._settle()
    loop = worker._loop
    assert loop is not None
    book = worker._book
    await release_ahead(worker)
    while book.running and not worker._force:
        deadline = worker._deadline
        if deadline is not None and loop.time() >= deadline:
            release_running(worker)
            break
        wake = worker._wake = loop.create_future()  # poked as each job ends, and by close()
        try:
            await asyncio.wait([wake], timeout=None if deadline is None else deadline - loop.time())
        finally:
            worker._wake = None
        if book.pending:
            try:
                await worker._flush()
            except Exception as error:  # kept; the last flush below tries again
                log.warning("worker %s: reporting while closing failed: %s", worker.id, error)
                await worker._hook("error", error)
    if worker._force:
        for task in book.tasks():
            task.cancel()
    if book.running:
        await asyncio.gather(*book.tasks(), return_exceptions=True)
    await worker._flush()


async def release_ahead(worker: JobWorker) -> None:
    """Gives the jobs claimed ahead (never started) back to waiting at once, their attempt
    unused, whether or not close is forced: no other worker should wait for this one's grace."""
    held = worker._book.take_ahead()
    if not held:
        return
    for job in held:
        worker._book.release(job)
    try:
        await worker._flush()
    except Exception as error:  # kept; the last flush tries again
        log.warning("worker %s: releasing jobs claimed ahead failed: %s", worker.id, error)
        await worker._hook("error", error)


def release_running(worker: JobWorker) -> None:
    """Cancels the jobs still running when the grace ran out; `_done` records them as
    released, and the flush gives them back to waiting (no attempt used)."""
    log.warning(
        "worker %s: stopping with %d job(s) still running (grace over or cut short): "
        "cancelling them and releasing them to waiting",
        worker.id,
        worker._book.running,
    )
    for task in worker._book.tasks():
        worker._releasing.add(task)
        task.cancel()
