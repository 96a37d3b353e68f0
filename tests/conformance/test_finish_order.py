"""The order of what follows a job's finish (complete, or fail for good), the same on every
backend: (1) the job's own state and fields, (2) its events, (3) its dedup key, (4) its flow
parent told, (5) a job scheduler's next occurrence, (6) its retention (``remove_on_complete`` /
``remove_on_fail``) last. Retention counts a finished set, so what the finish caused before it
(a parent failed by its child) is in that count."""

from __future__ import annotations

from lanemq import FlowJob, JobNode, JobQueue, KeepJobs
from support import EPOCH_MS as T

from .helpers import lock_token


async def _claim_child(queue: JobQueue, child: JobNode, now: int, lease: float = 30.0) -> str:
    """Claims the flow's one claimable job, its child; returns the child's lock token."""
    claimed = await queue.claim("w", lease=lease, now=now)
    assert [job.id for job in claimed] == [child.job.id], claimed
    return lock_token(claimed[0])


async def _flow(queue: JobQueue, **child_options: object) -> tuple[JobNode, JobNode]:
    """A parent with one child in the same queue, the child with ``child_options``."""
    root = await queue.add_flow(
        FlowJob("parent", children=[FlowJob("child", options=dict(child_options))]), now=T
    )
    return root, root.children[0]


async def test_a_child_removed_on_completion_still_gives_its_parent_its_value(
    queue: JobQueue,
) -> None:
    root, child = await _flow(queue, remove_on_complete=True)
    token = await _claim_child(queue, child, T + 1)
    await queue.complete(child.job.id, token, {"v": 1}, now=T + 1)

    assert await queue.get_job(child.job.id) is None
    assert await queue.get_state(root.job.id) == "waiting"
    child_key = f"{queue.name}:{child.job.id}"
    assert await queue.get_children_values(root.job.id) == {child_key: {"v": 1}}
    # The child's completion, then its parent's release: the parent was told before the
    # child's retention removed it.
    events = [(e.event, e.job_id, e.fields.get("prev")) for e in await queue.read_events()]
    done = events.index(("completed", child.job.id, None))
    assert events[done + 1 :] == [("waiting", root.job.id, "waiting-children")], events


async def test_remove_on_fail_counts_the_parent_its_childs_failure_failed(
    queue: JobQueue,
) -> None:
    """``remove_on_fail=0`` keeps no failed job: the child's failure fails its parent first,
    so the child's retention, last, finds both failed and removes both."""
    root, child = await _flow(queue, remove_on_fail=0)
    token = await _claim_child(queue, child, T + 1)
    assert await queue.fail(child.job.id, token, "boom", retry=False, now=T + 1) is False

    events = [(e.event, e.job_id) for e in await queue.read_events()]
    assert ("failed", child.job.id) in events and ("failed", root.job.id) in events
    assert events.index(("failed", child.job.id)) < events.index(("failed", root.job.id))
    assert await queue.get_job_counts("failed") == {"failed": 0}
    assert await queue.get_job(child.job.id) is None
    assert await queue.get_job(root.job.id) is None


async def test_keep_jobs_count_on_a_failing_child_keeps_that_many_with_its_parent(
    queue: JobQueue,
) -> None:
    root, child = await _flow(queue, remove_on_fail=KeepJobs(count=1))
    token = await _claim_child(queue, child, T + 1)
    await queue.fail(child.job.id, token, "boom", retry=False, now=T + 1)

    # Counted after the parent failed: one of the two failed jobs is left, not both.
    assert await queue.get_job_counts("failed") == {"failed": 1}
    states = {await queue.get_state(job_id) for job_id in (root.job.id, child.job.id)}
    assert states == {"failed", "unknown"}


async def test_a_child_that_stalls_out_is_retained_after_its_parent_failed(
    queue: JobQueue,
) -> None:
    root, child = await _flow(queue, remove_on_fail=0, max_stalled_count=0)
    await _claim_child(queue, child, T + 1, lease=1.0)
    assert await queue.recover_stalled(now=T + 1_001) == ([], [child.job.id])

    assert await queue.get_job_counts("failed") == {"failed": 0}
    assert await queue.get_state(child.job.id) == "unknown"
    assert await queue.get_state(root.job.id) == "unknown"
    events = [(e.event, e.job_id) for e in await queue.read_events()]
    assert ("failed", root.job.id) in events
