"""`remove_orphaned_jobs` on a healthy queue: no job is an orphan, whatever its state, so it
returns 0 and changes nothing (every backend). How it removes real orphans on Redis, the one
store that can hold them, is in tests/test_redis_orphans.py."""

from __future__ import annotations

from typing import Any

from lanemq import FlowJob, JobQueue
from support import EPOCH_MS as T

from .helpers import lock_token


async def _snapshot(queue: JobQueue) -> dict[str, Any]:
    """Everything a user can read of the queue's jobs."""
    jobs = await queue.list_jobs()
    return {
        "counts": await queue.get_job_counts(),
        "jobs": {
            job.id: (
                job.name,
                job.data,
                job.state,
                job.priority,
                job.attempts_made,
                job.progress,
                job.return_value,
                job.failed_reason,
                job.delay_until,
                job.parent_id,
                await queue.get_logs(job.id),
            )
            for job in jobs
        },
        # The order in which waiting jobs will be claimed.
        "waiting": [job.id for job in await queue.list_jobs("waiting")],
    }


async def test_a_healthy_queue_has_no_orphans_and_nothing_changes(queue: JobQueue) -> None:
    # A job in every state, with logs, progress, a priority, a LIFO one, a flow.
    await queue.add("done", {"n": 1}, now=T)
    await queue.add("failed", {"n": 2}, now=T)
    [claimed] = await queue.claim("w1", now=T)
    await queue.complete(claimed.id, lock_token(claimed), {"ok": True}, now=T)
    [claimed] = await queue.claim("w1", now=T)
    await queue.fail(claimed.id, lock_token(claimed), "broken", retry=False, now=T)
    running = await queue.add("running", now=T)
    [active] = await queue.claim("w1", now=T)
    assert active.id == running.id
    await queue.update_progress(active.id, 40, now=T)
    await queue.add_log(active.id, "half way")
    await queue.add("waiting", [1, 2], now=T)
    await queue.add("urgent", priority=3, now=T)
    await queue.add("last-in", lifo=True, now=T)
    await queue.add("later", delay=60.0, now=T)
    node = await queue.add_flow(FlowJob("parent", children=[FlowJob("child")]), now=T)

    before = await _snapshot(queue)
    assert all(n > 0 for n in before["counts"].values()), before["counts"]

    assert await queue.remove_orphaned_jobs() == 0
    assert await _snapshot(queue) == before
    assert await queue.remove_orphaned_jobs() == 0

    # The running job's lease still holds, and the flow still works.
    await queue.complete(active.id, lock_token(active), "finished", now=T + 1)
    claimed = await queue.claim("w1", max_jobs=10, now=T + 2)
    assert node.children[0].job.id in {job.id for job in claimed}


async def test_an_empty_queue_has_no_orphans(queue: JobQueue) -> None:
    assert await queue.remove_orphaned_jobs() == 0
    assert await queue.get_job_counts() == dict.fromkeys(
        ("waiting", "delayed", "active", "waiting_children", "completed", "failed"), 0
    )
