"""What `JobWorker` logs, under ``lanemq.worker``: job starts and completions at DEBUG (with
the time since the claim), failed attempts at WARNING (with the reason and whether the job
will retry), outcomes that could not be recorded and recovered stalls at WARNING, a backend
that its chores cannot reach once as it goes away and once as it answers again (`Outage`).
Per-job lines are only formatted when their level is enabled."""

from __future__ import annotations

import logging
import time

from .._core import OutcomeBatch
from ..exceptions import BackendConnectionError
from ..job import Job

log = logging.getLogger("lanemq.worker")


def started(worker_id: str, job: Job) -> None:
    """(The worker checks that DEBUG is enabled first.)"""
    log.debug(
        "worker %s: job %s (%s) started, attempt %d",
        worker_id,
        job.id,
        job.name,
        job.attempts_started,
    )


def completed(worker_id: str, done: OutcomeBatch, lost: dict[str, str]) -> None:
    """The completions of one report (``lost``: those refused, by id, logged as warnings)."""
    for job_id, detail in lost.items():
        log.warning("worker %s: job %s: completion not recorded: %s", worker_id, job_id, detail)
    if not log.isEnabledFor(logging.DEBUG):
        return
    now = time.time() * 1000
    for job in done.jobs:
        if job.id in lost:
            continue
        claimed = job.processed_on
        took = "" if claimed is None else f" in {max(now - claimed, 0.0) / 1000:.3f}s"
        log.debug("worker %s: job %s (%s) completed%s", worker_id, job.id, job.name, took)


def failed(worker_id: str, job: Job, error: BaseException, retried: bool) -> None:
    log.warning(
        "worker %s: job %s (%s) failed, attempt %d: %s: %s; %s",
        worker_id,
        job.id,
        job.name,
        job.attempts_started,
        type(error).__name__,
        error,
        "will retry" if retried else "failed for good",
    )


def not_recorded(worker_id: str, job_id: str, what: str, detail: object) -> None:
    log.warning("worker %s: job %s: %s not recorded: %s", worker_id, job_id, what, detail)


def stalled(worker_id: str, recovered: list[str], failed: list[str]) -> None:
    if recovered:
        log.warning(
            "worker %s: %d stalled job(s) back to waiting (lease expired): %s",
            worker_id,
            len(recovered),
            ", ".join(recovered),
        )
    if failed:
        log.warning(
            "worker %s: %d stalled jobs failed for good (stalled more than max_stalled_count): %s",
            worker_id,
            len(failed),
            ", ".join(failed),
        )


class Outage:
    """What a worker's chores (heartbeat, metrics, lease renewals, stalled recovery) log of
    their failures. A backend that is away (`BackendConnectionError`) fails each of them on
    every round: a traceback every few seconds would bury the log, so the outage gets one
    WARNING line as the first chore fails and one as the last of the failing chores succeeds
    again. Any other failure is logged with its traceback each time."""

    def __init__(self, worker_id: str) -> None:
        self.worker_id = worker_id
        #: The chores whose last run failed on the connection.
        self.failing: set[str] = set()

    def failed(self, chore: str, error: Exception) -> None:
        if not isinstance(error, BackendConnectionError):
            log.error("worker %s: %s failed", self.worker_id, chore, exc_info=error)
            return
        if not self.failing:
            log.warning(
                "worker %s: backend unreachable (%s failed: %s); the chores go on trying",
                self.worker_id,
                chore,
                error,
            )
        self.failing.add(chore)

    def succeeded(self, chore: str) -> None:
        if chore in self.failing:
            self.failing.discard(chore)
            if not self.failing:
                log.warning("worker %s: backend reachable again (%s)", self.worker_id, chore)
