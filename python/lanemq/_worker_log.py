"""What `JobWorker` logs, under ``lanemq.worker``: job starts and completions at DEBUG (with
the time since the claim), failed attempts at WARNING (with the reason and whether the job
will retry), outcomes that could not be recorded and recovered stalls at WARNING. Per-job
lines are only formatted when their level is enabled."""

from __future__ import annotations

import logging
import time

from ._core import OutcomeBatch
from .job import Job

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
