"""Jobs whose name has no processor in this worker, under ``unknown_name_retries`` (rolling
deploys: a newer worker may know the name). Such a job is moved back to delayed for
``unknown_name_delay`` seconds, at most ``unknown_name_retries`` times, then failed.

The postponements are counted by a log line each on the job itself (`JobQueue.add_log`),
read back with `get_logs`: that count lives in the job's record, so it holds across workers
and processes on every backend, costs nothing on the hot path (only unknown names read it),
and shows users what happened. The other candidates do not work: ``attempts_made`` is given
back by `move_to_delayed` (and spending real attempts would fail a one-attempt job at once),
``stalled_count`` drives stalled recovery's own limit, and the payload is the user's."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ..exceptions import DelayedError, UnrecoverableError
from ..job import Job

if TYPE_CHECKING:
    from ._state import WorkerState

log = logging.getLogger("lanemq.worker")

#: How each postponement's log line starts; the lines that start so are the count.
POSTPONED = "lanemq: postponed, no processor for job name "


class UnknownJobNameWarning(Exception):
    """Passed to ``error`` hooks each time a worker with ``unknown_name_retries`` postpones a
    job whose name it has no processor for: ``postponement`` of ``limit``, for ``delay``
    seconds."""

    def __init__(self, job_id: str, name: str, postponement: int, limit: int, delay: float):
        super().__init__(
            f"job {job_id!r}: no processor for job name {name!r}; postponed {delay}s "
            f"({postponement} of {limit})"
        )
        self.job_id = job_id
        self.name = name
        self.postponement = postponement
        self.limit = limit
        self.delay = delay


async def postpone_unknown(worker: WorkerState, job: Job) -> None:
    """Runs as the processor of a job with no processor: postpones it (and raises
    `DelayedError`, so the worker lets go of it), or past the limit raises
    `UnrecoverableError`, which fails it at once as a worker without the option would."""
    limit = worker.unknown_name_retries
    lines, _ = await worker.queue.get_logs(job.id)
    done = sum(1 for line in lines if line.startswith(POSTPONED))
    if done >= limit:
        raise UnrecoverableError(
            f"no processor for job name {job.name!r} (postponed {done} times, the "
            f"unknown_name_retries limit)"
        )
    delay = worker.unknown_name_delay
    warning = UnknownJobNameWarning(job.id, job.name, done + 1, limit, delay)
    await worker.queue.add_log(
        job.id, f"{POSTPONED}{job.name!r} by worker {worker.id} ({done + 1} of {limit})"
    )
    await job.move_to_delayed(delay)
    log.warning("worker %s: %s", worker.id, warning)
    await worker._hook("error", warning)
    raise DelayedError(str(warning))
