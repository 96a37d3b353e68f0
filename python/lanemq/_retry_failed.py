"""Retrying every failed job of a queue, as ``lanemq queue ... retry --failed`` and the
dashboard's "retry all failed" do: through the public `JobQueue` API, one job at a time."""

from __future__ import annotations

from .exceptions import LanemqError
from .queue import JobQueue


async def retry_failed(
    queue: JobQueue, page: int = 500, *, reset_attempts: bool = False
) -> tuple[list[str], list[tuple[str, str]]]:
    """Retries every job that is failed now (`JobQueue.retry_job`: attempts kept unless
    ``reset_attempts``). Returns the ids retried and, for a job that changed meanwhile
    (retried or removed by someone else), its id and why it was skipped. The ids are read
    first, page by page, so the retries do not shift the pages."""
    ids: list[str] = []
    while True:
        batch = await queue.list_jobs("failed", len(ids), len(ids) + page - 1)
        ids += [job.id for job in batch]
        if len(batch) < page:
            break
    retried: list[str] = []
    skipped: list[tuple[str, str]] = []
    for failed_id in ids:
        try:
            await queue.retry_job(failed_id, reset_attempts=reset_attempts)
        except LanemqError as error:
            skipped.append((failed_id, str(error)))
            continue
        retried.append(failed_id)
    return retried, skipped
