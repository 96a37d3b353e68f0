"""The ``telemetry`` option (a producer's trace context, as a propagator's carrier) is job
metadata: every backend keeps it exactly through every way a job is stored, read, claimed,
retried, recovered, edited, released by its children or produced by a scheduler, and it never
shows in the job's data."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from lanemq import ConfigError, FlowJob, JobOptions, JobQueue
from support import EPOCH_MS as T

from .helpers import claim_one, stored_job

CARRIER = {
    "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
    "tracestate": 'congo=t61rcWkgMzE,rojo=00f067aa0ba902b7,"q"=1',
}


async def test_telemetry_survives_add_read_claim_and_complete(queue: JobQueue) -> None:
    added = await queue.add("mail", {"to": "ops"}, JobOptions(priority=2, telemetry=CARRIER), now=T)
    assert added.options.telemetry == CARRIER
    stored = await stored_job(queue, added.id)
    assert (stored.options.telemetry, stored.data, stored.priority) == (CARRIER, {"to": "ops"}, 2)
    claimed = await claim_one(queue, T)
    assert claimed.options.telemetry == CARRIER
    assert claimed.lock_token is not None
    await queue.complete(claimed.id, claimed.lock_token, "sent", now=T)
    done = await stored_job(queue, added.id)
    assert (done.state, done.options.telemetry) == ("completed", CARRIER)


async def test_telemetry_survives_retries_stalls_and_edits(queue: JobQueue) -> None:
    options = JobOptions(attempts=3, telemetry=CARRIER)
    job = await queue.add("mail", None, options, now=T)
    first = await claim_one(queue, T)
    assert first.lock_token is not None
    assert await queue.fail(job.id, first.lock_token, "smtp down", now=T) is True  # retried
    second = await claim_one(queue, T + 1, lease=1.0)
    assert second.options.telemetry == CARRIER
    # The lease runs out: stalled recovery puts it back (its options decoded on Redis).
    await queue.recover_stalled(now=T + 5_000)
    assert (await stored_job(queue, job.id)).state == "waiting"
    # A priority edit rewrites the options JSON as text on Redis.
    await queue.update_priority(job.id, 7, lifo=True)
    edited = await stored_job(queue, job.id)
    assert (edited.priority, edited.options.lifo, edited.options.telemetry) == (7, True, CARRIER)
    third = await claim_one(queue, T + 6_000)
    assert third.lock_token is not None
    assert await queue.fail(job.id, third.lock_token, "still down", now=T + 6_000) is True
    fourth = await claim_one(queue, T + 6_001)
    assert fourth.lock_token is not None
    assert await queue.fail(job.id, fourth.lock_token, "gave up", now=T + 6_002) is False
    await queue.retry_job(job.id, now=T + 7_000)
    retried = await claim_one(queue, T + 7_000)
    assert (retried.state, retried.options.telemetry) == ("active", CARRIER)


async def test_telemetry_per_job_in_add_bulk(queue: JobQueue) -> None:
    other = {"traceparent": "00-11111111111111111111111111111111-2222222222222222-00"}
    jobs = await queue.add_bulk(
        [
            ("a", 1, JobOptions(telemetry=CARRIER)),
            ("b", 2),
            ("c", 3, {"telemetry": other, "priority": 1}),
        ],
        now=T,
    )
    assert [j.options.telemetry for j in jobs] == [CARRIER, None, other]
    claimed = await queue.claim("w", max_jobs=3, now=T)
    by_name = {j.name: j.options.telemetry for j in claimed}
    assert by_name == {"a": CARRIER, "b": None, "c": other}


async def test_telemetry_of_flow_nodes_in_two_queues(
    queue: JobQueue, sibling: Callable[[str], JobQueue]
) -> None:
    children_queue = sibling("kids")
    child_carrier = {"traceparent": "00-33333333333333333333333333333333-4444444444444444-01"}
    node = await queue.add_flow(
        FlowJob(
            "parent",
            {"p": 1},
            JobOptions(telemetry=CARRIER),
            children=[
                FlowJob("child", {"c": 1}, {"telemetry": child_carrier}, queue=children_queue.name)
            ],
        ),
        now=T,
    )
    child = node.children[0].job
    assert (node.job.options.telemetry, child.options.telemetry) == (CARRIER, child_carrier)
    # The child's stored options also carry its parent (added by the backend).
    stored_child = await stored_job(children_queue, child.id)
    assert stored_child.parent_key == f"{queue.name}:{node.job.id}"
    assert stored_child.options.telemetry == child_carrier
    claimed_child = await claim_one(children_queue, T)
    assert claimed_child.lock_token is not None
    await children_queue.complete(child.id, claimed_child.lock_token, 1, now=T)
    parent = await claim_one(queue, T + 1)
    assert (parent.id, parent.options.telemetry) == (node.job.id, CARRIER)


async def test_telemetry_of_a_scheduler_template_reaches_every_occurrence(
    queue: JobQueue,
) -> None:
    first = await queue.upsert_scheduler(
        "tick", every=1.0, template=("tick", None, {"telemetry": CARRIER, "priority": 2}), now=T
    )
    assert first.options.telemetry == CARRIER
    claimed = await claim_one(queue, T)
    assert claimed.options.telemetry == CARRIER
    # Claiming the pending occurrence produced the next one (in Lua, on Redis).
    following = [j for j in await queue.list_jobs(["delayed", "waiting"]) if j.id != claimed.id]
    assert len(following) == 1, following
    assert (following[0].options.telemetry, following[0].priority) == (CARRIER, 2)


async def test_bad_telemetry_is_refused_and_nothing_is_added(queue: JobQueue) -> None:
    with pytest.raises(ConfigError, match=r"invalid telemetry: \{'traceparent': 1\}"):
        await queue.add("x", None, {"telemetry": {"traceparent": 1}}, now=T)
    with pytest.raises(ConfigError, match="8193 bytes"):
        await queue.add("x", None, {"telemetry": {"k": "v" * 8192}}, now=T)
    with pytest.raises(ConfigError, match="invalid telemetry key"):
        JobOptions().with_telemetry({"": "v"})
    assert (await queue.get_job_counts())["waiting"] == 0
