"""An add's ``parent`` (BullMQ's ``opts.parent``): the new jobs become children of an existing
job, which waits for them as a flow's parent does; the states a parent may be in, a parent in
another queue, ``add_bulk``, and refusals that write nothing."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from lanemq import (
    ConfigError,
    FlowJob,
    Job,
    JobNotFoundError,
    JobOptions,
    JobQueue,
    JobStateError,
    ParentRef,
)
from support import EPOCH_MS as T

from .helpers import claim_all as claim
from .helpers import finish_named as run
from .helpers import state


def key(queue: JobQueue, job: Job) -> str:
    return f"{queue.name}:{job.id}"


async def total(queue: JobQueue) -> int:
    return sum((await queue.get_job_counts()).values())


async def test_a_waiting_parent_waits_for_the_added_child(queue: JobQueue) -> None:
    parent = await queue.add("parent", None, now=T)
    child = await queue.add("child", 1, parent={"id": parent.id}, now=T + 1)
    assert child.parent_id == parent.id and child.state == "waiting"
    assert await state(queue, parent.id) == "waiting_children"
    events = [(e.event, e.fields.get("prev")) for e in await queue.read_events()]
    assert ("waiting-children", "waiting") in events
    assert (await queue.get_dependencies(parent.id)).unprocessed == [key(queue, child)]
    # Only the child runs; its value is the parent's, which then waits again.
    await run(queue, "child", T + 2)
    assert await state(queue, parent.id) == "waiting"
    assert await queue.get_children_values(parent.id) == {key(queue, child): "child"}
    (again,) = await claim(queue, T + 3)
    assert again.id == parent.id


async def test_a_delayed_or_prioritized_parent_moves_to_waiting_children(
    queue: JobQueue,
) -> None:
    delayed = await queue.add("delayed", None, delay=10.0, now=T)
    prioritized = await queue.add("prioritized", None, priority=5, now=T)
    await queue.add("a", None, parent=ParentRef(delayed.id), now=T + 1)
    await queue.add("b", None, options={"parent": {"id": prioritized.id}}, now=T + 1)
    assert await state(queue, delayed.id) == "waiting_children"
    assert await state(queue, prioritized.id) == "waiting_children"
    events = [(e.job_id, e.fields.get("prev")) for e in await queue.read_events()]
    assert (delayed.id, "delayed") in events and (prioritized.id, "waiting") in events
    await run(queue, "a", T + 2)
    await run(queue, "b", T + 2)
    # Released: the delayed one by its own delay from then, the other waiting at its priority.
    assert await state(queue, delayed.id) == "delayed"
    assert await state(queue, prioritized.id) == "waiting"
    (job,) = await claim(queue, T + 3)
    assert job.id == prioritized.id and job.priority == 5


async def test_a_parent_waiting_for_children_gains_the_new_child(queue: JobQueue) -> None:
    root = await queue.add_flow(FlowJob("root", children=[FlowJob("first")]), now=T)
    events = len(await queue.read_events())
    child = await queue.add("late", None, parent={"id": root.job.id}, now=T + 1)
    counts = await queue.get_dependencies_count(root.job.id)
    assert counts["unprocessed"] == 2
    # Already waiting for children: no move, no waiting-children event.
    assert "waiting-children" not in [e.event for e in (await queue.read_events())[events:]]
    await run(queue, "first", T + 2)
    assert await state(queue, root.job.id) == "waiting_children"
    await run(queue, "late", T + 3)
    assert await state(queue, root.job.id) == "waiting"
    assert key(queue, child) in await queue.get_children_values(root.job.id)


async def test_a_parent_in_another_queue(
    queue: JobQueue, sibling: Callable[[str], JobQueue]
) -> None:
    other = sibling("parents")
    parent = await other.add("parent", None, now=T)
    child = await queue.add("child", None, parent={"id": parent.id, "queue": other.name}, now=T)
    assert child.queue is queue and child.parent_id == parent.id
    assert await state(other, parent.id) == "waiting_children"
    assert (await other.get_dependencies(parent.id)).unprocessed == [key(queue, child)]
    await run(queue, "child", T + 1)
    assert await state(other, parent.id) == "waiting"
    assert await other.get_children_values(parent.id) == {key(queue, child): "child"}


@pytest.mark.parametrize("finish", ["completed", "failed", "active"])
async def test_a_running_or_finished_parent_is_refused_and_nothing_is_written(
    queue: JobQueue, finish: str
) -> None:
    parent = await queue.add("parent", None, now=T)
    if finish == "active":
        await claim(queue, T)
    else:
        await run(queue, "parent", T, fail=finish == "failed")
    events = len(await queue.read_events())
    with pytest.raises(JobStateError, match=rf'"{parent.id}" is {finish}'):
        await queue.add("child", None, parent={"id": parent.id}, now=T + 1)
    with pytest.raises(JobStateError):
        await queue.add_bulk([("a", 1, {"parent": {"id": parent.id}})], now=T + 1)
    assert await total(queue) == 1
    assert len(await queue.read_events()) == events
    assert await state(queue, parent.id) == finish
    # No automatic id was taken.
    assert (await queue.add("next", None, now=T + 2)).id == "2"


async def test_a_missing_parent_is_refused_naming_it(
    queue: JobQueue, sibling: Callable[[str], JobQueue]
) -> None:
    with pytest.raises(JobNotFoundError, match="parent job 'nope'"):
        await queue.add("child", None, parent={"id": "nope"}, now=T)
    other = sibling("parents")
    with pytest.raises(JobNotFoundError, match=f"parent job 'nope' of queue '{other.name}'"):
        await queue.add_bulk([("a", 1, {"parent": {"id": "nope", "queue": other.name}})], now=T)
    assert await total(queue) == 0
    assert await queue.read_events() == []


async def test_add_bulk_adds_every_job_under_the_parent(queue: JobQueue) -> None:
    parent = await queue.add("parent", None, now=T)
    ref = {"parent": {"id": parent.id}}
    a, b = await queue.add_bulk([("a", 1, ref), ("b", 2, dict(ref, priority=3))], now=T + 1)
    assert (a.name, b.name, b.priority) == ("a", "b", 3)
    assert a.parent_id == b.parent_id == parent.id
    assert await queue.get_dependencies_count(parent.id, "processed", "unprocessed") == {
        "processed": 0,
        "unprocessed": 2,
    }
    await run(queue, "a", T + 2)
    await run(queue, "b", T + 3)
    assert await state(queue, parent.id) == "waiting"


async def test_add_bulk_with_two_parents_or_a_bad_parent_writes_nothing(
    queue: JobQueue,
) -> None:
    p1 = await queue.add("p1", None, now=T)
    p2 = await queue.add("p2", None, now=T)
    items = [("a", 1, {"parent": {"id": p1.id}}), ("b", 2, {"parent": {"id": p2.id}})]
    with pytest.raises(ConfigError, match="one parent"):
        await queue.add_bulk(items, now=T + 1)
    with pytest.raises(ConfigError, match="one parent"):
        await queue.add_bulk([("a", 1, {"parent": {"id": p1.id}}), ("b", 2)], now=T + 1)
    for bad in ({"queue": "q"}, {"id": ""}, {"id": 5}, {"id": "1", "jobId": "x"}, "1"):
        with pytest.raises(ConfigError, match="invalid parent"):
            await queue.add("c", None, parent=bad, now=T + 1)  # type: ignore[arg-type]
    assert await total(queue) == 2
    assert await state(queue, p1.id) == "waiting"


async def test_the_childs_parent_policy_applies(queue: JobQueue) -> None:
    parent = await queue.add("parent", None, now=T)
    options = JobOptions(ignore_dependency_on_failure=True)
    await queue.add("ignored", None, options, parent={"id": parent.id}, now=T)
    await queue.add("fails", None, parent={"id": parent.id}, now=T)
    await run(queue, "ignored", T + 1, fail=True)
    assert await state(queue, parent.id) == "waiting_children"
    assert (await queue.get_dependencies(parent.id)).ignored != {}
    await run(queue, "fails", T + 2, fail=True)
    job = await queue.get_job(parent.id)
    assert job is not None and job.state == "failed"
    assert job.failed_reason is not None and "boom" in job.failed_reason


async def test_a_parent_with_repeat_or_given_twice_is_refused(
    queue: JobQueue,
) -> None:
    parent = await queue.add("parent", None, now=T)
    with pytest.raises(ConfigError, match=r"invalid parent.*repeat"):
        await queue.add("c", None, repeat={"every": 60}, parent={"id": parent.id}, now=T)
    with pytest.raises(TypeError, match="parent"):
        await queue.add("c", None, {"parent": {"id": parent.id}}, parent={"id": parent.id}, now=T)
    assert await total(queue) == 1


async def test_a_grouped_parent_leaves_its_group_while_it_waits(queue: JobQueue) -> None:
    parent = await queue.add("parent", None, group="g", now=T)
    await queue.add("other", None, group="g", now=T)
    await queue.add("child", None, parent={"id": parent.id}, now=T + 1)
    # The group's waiting jobs no longer hold the parent: a claim takes the other two.
    claimed = await claim(queue, T + 2)
    assert sorted(j.name for j in claimed) == ["child", "other"]
    assert await state(queue, parent.id) == "waiting_children"
    child = next(j for j in claimed if j.name == "child")
    assert child.lock_token is not None
    await queue.complete(child.id, child.lock_token, None, now=T + 3)
    assert await state(queue, parent.id) == "waiting"
    assert [j.id for j in await claim(queue, T + 4)] == [parent.id]
