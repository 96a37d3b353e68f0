"""Flow nodes whose custom id a job has already (BullMQ's ``updateExistingJobsParent``): the
node is that job, which becomes the parent's child (in `add_flow`, `Job.add_children` and an
add's ``parent``), a completed one counting as processed at once; a job with another parent,
a cycle, or an existing job that cannot take children refuses the call, writing nothing. A flow
whose root exists gains the new children; re-adding the same tree writes nothing."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from lanemq import FlowJob, JobNode, JobQueue, JobStateError
from support import EPOCH_MS as T

from .helpers import claim_all as claim
from .helpers import finish_named as run
from .helpers import state


async def total(queue: JobQueue) -> int:
    return sum((await queue.get_job_counts()).values())


def ids(node: JobNode) -> list[str]:
    return sorted(c.job.id for c in node.children)


def custom(name: str, *children: FlowJob, queue: str | None = None) -> FlowJob:
    return FlowJob(name, options={"job_id": name}, children=list(children), queue=queue)


# ---------------------------------------------------------------- an existing child


async def test_an_existing_job_becomes_the_new_parents_child(queue: JobQueue) -> None:
    await queue.add("e", "old", job_id="e", now=T)
    root = await queue.add_flow(FlowJob("root", children=[custom("e"), FlowJob("b")]), now=T + 1)
    (e,) = [c for c in root.children if c.job.id == "e"]
    assert e.job.data == "old" and e.job.parent_id == root.job.id
    assert await total(queue) == 3
    assert f"{queue.name}:e" in (await queue.get_dependencies(root.job.id)).unprocessed
    await run(queue, "b", T + 2)
    assert await state(queue, root.job.id) == "waiting_children"
    await run(queue, "e", T + 3)
    assert await state(queue, root.job.id) == "waiting"
    assert (await queue.get_children_values(root.job.id))[f"{queue.name}:e"] == "e"


async def test_an_existing_completed_job_counts_as_processed(queue: JobQueue) -> None:
    await queue.add("e", None, job_id="e", now=T)
    await run(queue, "e", T)
    only = await queue.add_flow(FlowJob("root", children=[custom("e")]), now=T + 1)
    assert await state(queue, only.job.id) == "waiting"  # nothing left to wait for
    assert await queue.get_children_values(only.job.id) == {f"{queue.name}:e": "e"}
    # Also as an add's parent: the completed job's value is the parent's at once.
    parent = await queue.add("parent", None, now=T + 2)
    await queue.add("ignored name", None, job_id="f", now=T + 2)
    await run(queue, "ignored name", T + 2)
    added = await queue.add("x", None, job_id="f", parent={"id": parent.id}, now=T + 3)
    assert added.id == "f" and added.parent_id == parent.id
    assert await queue.get_children_values(parent.id) == {f"{queue.name}:f": "ignored name"}


async def test_an_existing_failed_job_tells_its_failure(queue: JobQueue) -> None:
    await queue.add("e", None, job_id="e", now=T)
    await run(queue, "e", T, fail=True)
    root = await queue.add_flow(FlowJob("root", children=[custom("e"), FlowJob("b")]), now=T + 1)
    job = await queue.get_job(root.job.id)
    assert job is not None and job.state == "failed"
    assert job.failed_reason == "child e failed: boom"


async def test_an_existing_job_added_from_a_processor(queue: JobQueue) -> None:
    await queue.add("e", None, job_id="e", delay=60.0, now=T)
    await queue.add("parent", None, now=T)
    (parent,) = await claim(queue, T + 1)
    (e,) = await parent.add_children([custom("e")], now=T + 2)
    assert e.job.id == "e" and e.job.parent_id == parent.id
    assert await state(queue, parent.id) == "waiting_children"
    await queue.promote("e", now=T + 3)
    await run(queue, "e", T + 4)
    assert await state(queue, parent.id) == "waiting"


async def test_an_existing_job_in_another_queue(
    queue: JobQueue, sibling: Callable[[str], JobQueue]
) -> None:
    other = sibling("kids")
    await other.add("e", None, job_id="e", now=T)
    root = await queue.add_flow(FlowJob("root", children=[custom("e", queue=other.name)]), now=T)
    (e,) = root.children
    assert e.job.id == "e" and e.job.queue is other and e.job.parent_id == root.job.id
    assert (await other.get_job("e")).parent_id == root.job.id  # type: ignore[union-attr]
    assert await state(queue, root.job.id) == "waiting_children"
    await run(other, "e", T + 1)
    assert await state(queue, root.job.id) == "waiting"


async def test_an_existing_job_in_another_queue_gains_new_children_there(
    queue: JobQueue, sibling: Callable[[str], JobQueue]
) -> None:
    other = sibling("kids")
    await other.add("e", None, job_id="e", now=T)
    flow = FlowJob("root", children=[custom("e", FlowJob("leaf"), queue=other.name)])
    root = await queue.add_flow(flow, now=T)
    # Returned as it is once written, in every backend (a local file's a moment later).
    (e,) = root.children
    assert (e.job.state, e.job.parent_id) == ("waiting_children", root.job.id)
    assert [c.job.name for c in e.children] == ["leaf"]
    assert await state(other, "e") == "waiting_children"
    assert (await other.get_dependencies_count("e"))["unprocessed"] == 1
    await run(other, "leaf", T + 1)
    assert await state(other, "e") == "waiting"
    await run(other, "e", T + 2)
    assert await state(queue, root.job.id) == "waiting"
    assert await queue.get_children_values(root.job.id) == {f"{other.name}:e": "e"}


async def test_an_existing_job_gains_its_nodes_new_children(queue: JobQueue) -> None:
    await queue.add("e", None, job_id="e", delay=60.0, now=T)
    flow = FlowJob("root", children=[custom("e", FlowJob("leaf"))])
    root = await queue.add_flow(flow, now=T + 1)
    (e,) = root.children
    assert [c.job.name for c in e.children] == ["leaf"]
    assert await state(queue, "e") == "waiting_children"
    await run(queue, "leaf", T + 2)
    # Released: delayed again by its own delay, counted from now.
    assert await state(queue, "e") == "delayed"
    assert await state(queue, root.job.id) == "waiting_children"


# ------------------------------------------------------------------- refusals


async def test_an_existing_job_with_another_parent_refuses_the_flow(queue: JobQueue) -> None:
    first = await queue.add_flow(FlowJob("one", children=[custom("e")]), now=T)
    other = await queue.add("other", None, now=T)
    count, events = await total(queue), len(await queue.read_events())
    with pytest.raises(JobStateError, match=f'already a child of "{queue.name}:{first.job.id}"'):
        await queue.add_flow(FlowJob("two", children=[FlowJob("b"), custom("e")]), now=T + 1)
    with pytest.raises(JobStateError, match="a job has one parent"):
        await queue.add("e", None, job_id="e", parent={"id": other.id}, now=T + 2)
    assert await total(queue) == count
    assert len(await queue.read_events()) == events
    assert await state(queue, other.id) == "waiting"
    assert (await queue.get_job("e")).parent_id == first.job.id  # type: ignore[union-attr]


async def test_an_existing_job_under_its_own_descendant_is_refused(queue: JobQueue) -> None:
    top = await queue.add_flow(custom("top", FlowJob("mid", options={"job_id": "mid"})), now=T)
    assert top.job.id == "top"
    with pytest.raises(JobStateError, match="own descendant"):
        await queue.add("x", None, job_id="top", parent={"id": "mid"}, now=T + 1)
    assert (await queue.get_job("top")).parent_id is None  # type: ignore[union-attr]
    assert await total(queue) == 2


@pytest.mark.parametrize("finish", ["completed", "active"])
async def test_an_existing_job_that_cannot_take_children_refuses(
    queue: JobQueue, finish: str
) -> None:
    await queue.add("e", None, job_id="e", now=T)
    if finish == "active":
        await claim(queue, T)
    else:
        await run(queue, "e", T)
    count, events = await total(queue), len(await queue.read_events())
    with pytest.raises(JobStateError, match=f'"e" is {finish}'):
        await queue.add_flow(FlowJob("root", children=[custom("e", FlowJob("leaf"))]), now=T + 1)
    with pytest.raises(JobStateError, match=f'"e" is {finish}'):
        await queue.add_flow(custom("e", FlowJob("leaf")), now=T + 1)
    assert await total(queue) == count
    assert len(await queue.read_events()) == events
    assert (await queue.add("next", None, now=T + 2)).id == "1"


# ----------------------------------------------------------- re-adding a flow


async def test_re_adding_a_flow_adds_its_new_children_to_the_existing_root(
    queue: JobQueue,
) -> None:
    first = await queue.add_flow(custom("r", custom("a")), now=T)
    again = await queue.add_flow(custom("r", custom("a"), custom("b"), FlowJob("auto")), now=T + 1)
    assert again.job.id == "r"
    assert {"a", "b"} < set(ids(again)) and len(again.children) == 3
    assert await total(queue) == 4
    assert (await queue.get_dependencies_count(first.job.id))["unprocessed"] == 3
    for name in ("a", "b", "auto"):
        await run(queue, name, T + 2)
    assert await state(queue, "r") == "waiting"


async def test_re_adding_the_same_tree_writes_nothing(queue: JobQueue) -> None:
    def flow() -> FlowJob:
        return custom("r", custom("a", custom("a1")), custom("b"))

    first = await queue.add_flow(flow(), now=T)
    await run(queue, "a1", T + 1)
    before = await queue.get_job_counts()
    events = len(await queue.read_events())
    again = await queue.add_flow(flow(), now=T + 2)
    assert (again.job.id, ids(again)) == (first.job.id, ["a", "b"])
    assert [c.job.id for c in again.children[0].children] == ["a1"]
    assert await queue.get_job_counts() == before
    # Only the root's duplicated event, as a single add of an existing id writes.
    assert [e.event for e in (await queue.read_events())[events:]] == ["duplicated"]
    assert await queue.get_children_values("a") == {f"{queue.name}:a1": "a1"}


async def test_a_root_added_alone_then_as_a_flow_waits_for_the_children(
    queue: JobQueue,
) -> None:
    await queue.add("r", None, job_id="r", now=T)
    root = await queue.add_flow(custom("r", FlowJob("c")), now=T + 1)
    assert root.job.state == "waiting_children" and len(root.children) == 1
    await run(queue, "c", T + 2)
    (job,) = await claim(queue, T + 3)
    assert job.id == "r"


async def test_a_finished_root_with_the_same_children_writes_nothing(queue: JobQueue) -> None:
    await queue.add_flow(custom("r", custom("a")), now=T)
    await run(queue, "a", T + 1)
    await run(queue, "r", T + 2)
    again = await queue.add_flow(custom("r", custom("a")), now=T + 3)
    assert again.job.state == "completed" and ids(again) == ["a"]
    with pytest.raises(JobStateError, match='"r" is completed'):
        await queue.add_flow(custom("r", custom("a"), custom("b")), now=T + 4)
    assert await total(queue) == 2


async def test_adding_its_own_done_children_again_leaves_nothing_to_wait_for(
    queue: JobQueue,
) -> None:
    await queue.add("parent", None, now=T)
    (parent,) = await claim(queue, T)
    await parent.add_children([custom("a")], now=T + 1)
    await run(queue, "a", T + 2)
    (again,) = await claim(queue, T + 3)
    # A processor that adds the same children on its second run: they are done already.
    (a,) = await again.add_children([custom("a")], now=T + 4)
    assert a.job.state == "completed"
    assert await state(queue, parent.id) == "waiting"
    assert await queue.get_children_values(parent.id) == {f"{queue.name}:a": "a"}


async def test_add_bulk_under_a_parent_returns_the_jobs_given(queue: JobQueue) -> None:
    await queue.add_flow(custom("e", FlowJob("leaf")), now=T)  # an existing job with a child
    parent = await queue.add("parent", None, now=T)
    ref = {"parent": {"id": parent.id}}
    added = await queue.add_bulk([("x", 1, dict(ref, job_id="e")), ("y", 2, ref)], now=T + 1)
    assert [(j.id, j.name) for j in added] == [("e", "e"), (added[1].id, "y")]
    assert (await queue.get_dependencies_count(parent.id))["unprocessed"] == 2
