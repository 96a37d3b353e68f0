"""Flows (BullMQ's FlowProducer): trees that complete bottom-up and release each parent once,
children's values, the four child-failure policies and their propagation, delayed parents,
detaching and removing children, children added from a processor, cross-queue flows, a wide
flow, and validation that writes nothing."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from lanemq import (
    ConfigError,
    FlowJob,
    Job,
    JobNode,
    JobOptions,
    JobQueue,
    JobWorker,
)
from support import EPOCH_MS as T


async def claim(queue: JobQueue, now: int = T, max_jobs: int = 100) -> list[Job]:
    return await queue.claim("w", lease=60.0, max_jobs=max_jobs, now=now)


async def finish_all(
    queue: JobQueue, now: int = T, value: Callable[[Job], Any] = lambda j: j.name
) -> list[str]:
    """Claims and completes every job claimable now; returns their names in claim order."""
    jobs = await claim(queue, now)
    for job in jobs:
        assert job.lock_token is not None
        await queue.complete(job.id, job.lock_token, value(job), now=now)
    return [j.name for j in jobs]


async def fail_one(queue: JobQueue, name: str, now: int = T, reason: str = "boom") -> Job:
    jobs = await claim(queue, now)
    found = [j for j in jobs if j.name == name]
    assert found, f"{name} was not claimable: {[j.name for j in jobs]}"
    for job in jobs:
        assert job.lock_token is not None
        if job.name == name:
            await queue.fail(job.id, job.lock_token, reason, retry=False, now=now)
        else:
            await queue.release(job.id, job.lock_token, now=now)
    return found[0]


async def state(queue: JobQueue, job_id: str) -> str:
    return await queue.get_state(job_id)


def key(queue: JobQueue, node: JobNode | Job) -> str:
    job = node.job if isinstance(node, JobNode) else node
    return f"{queue.name}:{job.id}"


async def releases(queue: JobQueue, job_id: str) -> int:
    """How many times ``job_id`` left waiting_children."""
    return sum(
        1
        for e in await queue.read_events()
        if e.job_id == job_id
        and (
            (e.event == "waiting" and e.fields.get("prev") == "waiting-children")
            or (e.event == "delayed" and e.fields.get("delay"))
        )
    )


def tree() -> FlowJob:
    return FlowJob(
        "root",
        {"level": 0},
        children=[
            FlowJob("mid", {"level": 1}, children=[FlowJob("leaf-a"), FlowJob("leaf-b")]),
            FlowJob("leaf-c"),
        ],
    )


# ----------------------------------------------------------------------------- trees


async def test_a_flow_creates_parents_in_waiting_children(queue: JobQueue) -> None:
    root = await queue.add_flow(tree(), now=T)
    assert root.job.state == "waiting_children"
    assert root.job.parent_key is None
    mid, leaf_c = root.children
    assert mid.job.state == "waiting_children" and leaf_c.job.state == "waiting"
    assert mid.job.parent_key == key(queue, root) and mid.job.parent_id == root.job.id
    assert [c.job.parent_id for c in mid.children] == [mid.job.id, mid.job.id]
    counts = await queue.get_job_counts("waiting", "waiting_children")
    assert counts == {"waiting": 3, "waiting_children": 2}
    events = [(e.event, e.job_id) for e in await queue.read_events()]
    assert ("waiting-children", root.job.id) in events
    assert ("waiting-children", mid.job.id) in events
    deps = await queue.get_dependencies(root.job.id)
    assert sorted(deps.unprocessed) == sorted([key(queue, mid), key(queue, leaf_c)])
    assert await queue.get_dependencies_count(root.job.id) == {
        "processed": 0,
        "unprocessed": 2,
        "failed": 0,
        "ignored": 0,
        "missing": 0,
    }


async def test_a_three_level_tree_completes_bottom_up_releasing_each_parent_once(
    queue: JobQueue,
) -> None:
    root = await queue.add_flow(tree(), now=T)
    mid = root.children[0]
    assert sorted(await finish_all(queue, T + 1)) == ["leaf-a", "leaf-b", "leaf-c"]
    assert await state(queue, mid.job.id) == "waiting"
    assert await state(queue, root.job.id) == "waiting_children"
    assert await finish_all(queue, T + 2) == ["mid"]
    assert await state(queue, root.job.id) == "waiting"
    assert await finish_all(queue, T + 3) == ["root"]
    assert await state(queue, root.job.id) == "completed"
    assert await releases(queue, mid.job.id) == 1
    assert await releases(queue, root.job.id) == 1
    assert await finish_all(queue, T + 4) == []


async def test_parents_read_their_childrens_values(queue: JobQueue) -> None:
    root = await queue.add_flow(tree(), now=T)
    mid, leaf_c = root.children
    await finish_all(queue, T + 1, value=lambda j: {"from": j.name})
    values = await queue.get_children_values(mid.job.id)
    assert values == {
        key(queue, mid.children[0]): {"from": "leaf-a"},
        key(queue, mid.children[1]): {"from": "leaf-b"},
    }
    (claimed,) = await claim(queue, T + 2)
    assert claimed.name == "mid" and claimed.data == {"level": 1}
    assert await claimed.get_children_values() == values
    assert claimed.lock_token is not None
    await queue.complete(claimed.id, claimed.lock_token, 42, now=T + 2)
    assert await queue.get_children_values(root.job.id) == {
        key(queue, mid): 42,
        key(queue, leaf_c): {"from": "leaf-c"},
    }
    page = await queue.get_dependencies(root.job.id, count=1)
    assert len(page.processed) == 1 and page.next_processed_cursor == 1
    rest = await queue.get_dependencies(root.job.id, processed_cursor=1, count=1)
    assert len(rest.processed) == 1 and rest.next_processed_cursor is None
    assert {**page.processed, **rest.processed} == await queue.get_children_values(root.job.id)


async def test_a_parent_with_a_delay_is_delayed_from_its_release(queue: JobQueue) -> None:
    root = await queue.add_flow(
        FlowJob("root", options={"delay": 5.0}, children=[FlowJob("c")]), now=T
    )
    assert root.job.state == "waiting_children"
    await finish_all(queue, T + 1_000)
    parent = await queue.get_job(root.job.id)
    assert parent is not None
    assert parent.state == "delayed" and parent.delay_until == T + 6_000
    assert await finish_all(queue, T + 5_999) == []
    assert await finish_all(queue, T + 6_000) == ["root"]


# --------------------------------------------------------------------------- failures


async def test_by_default_a_failed_child_fails_its_parent_up_the_tree(queue: JobQueue) -> None:
    root = await queue.add_flow(tree(), now=T)
    mid = root.children[0]
    leaf_a = mid.children[0]
    await fail_one(queue, "leaf-a", T + 1)
    mid_job = await queue.get_job(mid.job.id)
    assert mid_job is not None and mid_job.state == "failed"
    assert mid_job.failed_reason == f"child {leaf_a.job.id} failed: boom"
    root_job = await queue.get_job(root.job.id)
    assert root_job is not None and root_job.state == "failed"
    assert root_job.failed_reason == f"child {mid.job.id} failed: {mid_job.failed_reason}"
    deps = await queue.get_dependencies(mid.job.id)
    assert deps.failed == {key(queue, leaf_a): "boom"}
    with pytest.raises(Exception, match="failed"):
        await root_job.wait(timeout=1)


async def test_fail_parent_on_failure_fails_the_parent(queue: JobQueue) -> None:
    opts = JobOptions(fail_parent_on_failure=True)
    assert opts.parent_policy == "fail_parent_on_failure"
    root = await queue.add_flow(
        FlowJob("root", children=[FlowJob("bad", options=opts), FlowJob("ok")]), now=T
    )
    bad = await fail_one(queue, "bad", T + 1, reason="nope")
    parent = await queue.get_job(root.job.id)
    assert parent is not None and parent.state == "failed"
    assert parent.failed_reason == f"child {bad.id} failed: nope"
    # The other child still runs; its value is recorded on the failed parent.
    assert await finish_all(queue, T + 2) == ["ok"]
    assert await state(queue, root.job.id) == "failed"
    assert list((await queue.get_children_values(root.job.id)).values()) == ["ok"]


async def test_ignore_dependency_on_failure_records_the_reason_and_counts_as_done(
    queue: JobQueue,
) -> None:
    root = await queue.add_flow(
        FlowJob(
            "root",
            children=[
                FlowJob("bad", options={"ignore_dependency_on_failure": True}),
                FlowJob("ok"),
            ],
        ),
        now=T,
    )
    bad = await fail_one(queue, "bad", T + 1)
    assert await state(queue, root.job.id) == "waiting_children"
    assert await queue.get_ignored_children_failures(root.job.id) == {key(queue, bad): "boom"}
    assert await finish_all(queue, T + 2) == ["ok"]
    assert await state(queue, root.job.id) == "waiting"
    counts = await queue.get_dependencies_count(root.job.id)
    assert counts == {"processed": 1, "unprocessed": 0, "failed": 0, "ignored": 1, "missing": 0}


async def test_remove_dependency_on_failure_drops_the_child(queue: JobQueue) -> None:
    root = await queue.add_flow(
        FlowJob(
            "root",
            children=[FlowJob("bad", options={"parent_policy": "remove_dependency_on_failure"})],
        ),
        now=T,
    )
    await fail_one(queue, "bad", T + 1)
    assert await state(queue, root.job.id) == "waiting"
    counts = await queue.get_dependencies_count(root.job.id)
    assert counts == {"processed": 0, "unprocessed": 0, "failed": 0, "ignored": 0, "missing": 0}


async def test_continue_parent_on_failure_releases_the_parent_at_once(queue: JobQueue) -> None:
    root = await queue.add_flow(
        FlowJob(
            "root",
            children=[
                FlowJob("bad", options={"continue_parent_on_failure": True}),
                FlowJob("slow", options={"delay": 60.0}),
            ],
        ),
        now=T,
    )
    bad = await fail_one(queue, "bad", T + 1)
    assert await state(queue, root.job.id) == "waiting"
    deps = await queue.get_dependencies(root.job.id)
    # Recorded as ignored, as BullMQ records it.
    assert deps.ignored == {key(queue, bad): "boom"}
    assert len(deps.unprocessed) == 1
    # (runnable at once; its completion waits for "slow": test_flow_dependencies.py)
    assert [j.name for j in await claim(queue, T + 2)] == ["root"]
    assert await finish_all(queue, T + 61_000) == ["slow"]
    assert await releases(queue, root.job.id) == 1


async def test_a_child_that_stalls_out_fails_its_parent(queue: JobQueue) -> None:
    root = await queue.add_flow(
        FlowJob("root", children=[FlowJob("c", options={"max_stalled_count": 0})]), now=T
    )
    (child,) = await queue.claim("w", lease=1.0, now=T)
    await queue.recover_stalled(now=T + 2_000)
    parent = await queue.get_job(root.job.id)
    assert parent is not None and parent.state == "failed"
    assert parent.failed_reason is not None
    assert parent.failed_reason.startswith(f"child {child.id} failed: ")


async def test_a_retried_child_counts_again_while_its_parent_waits(queue: JobQueue) -> None:
    root = await queue.add_flow(
        FlowJob(
            "root",
            children=[
                FlowJob("flaky", options={"ignore_dependency_on_failure": True}),
                FlowJob("later", options={"delay": 60.0}),
            ],
        ),
        now=T,
    )
    flaky = await fail_one(queue, "flaky", T + 1)
    assert (await queue.get_dependencies_count(root.job.id))["ignored"] == 1
    await queue.retry_job(flaky.id, now=T + 2)
    deps = await queue.get_dependencies(root.job.id)
    assert key(queue, flaky) in deps.unprocessed and deps.ignored == {}
    assert await finish_all(queue, T + 3) == ["flaky"]
    assert await finish_all(queue, T + 61_000) == ["later"]
    assert await state(queue, root.job.id) == "waiting"
    assert len(await queue.get_children_values(root.job.id)) == 2


async def test_retrying_the_child_that_failed_its_parents_reopens_them(
    queue: JobQueue, sibling: Callable[[str], JobQueue]
) -> None:
    # The failure climbed root <- mid (another queue) <- leaf; retrying the leaf undoes it.
    mids = sibling("mids")
    root = await queue.add_flow(
        FlowJob(
            "root",
            children=[
                FlowJob("mid", queue=mids.name, children=[FlowJob("leaf", queue=queue.name)]),
                FlowJob("other"),
            ],
        ),
        now=T,
    )
    mid = root.children[0].job
    leaf = await fail_one(queue, "leaf", T + 1)
    assert await state(queue, root.job.id) == "failed"
    await queue.retry_job(leaf.id, now=T + 2)
    assert await state(mids, mid.id) == "waiting_children"
    reopened = await queue.get_job(root.job.id)
    assert reopened is not None and reopened.state == "waiting_children"
    assert reopened.failed_reason is None and reopened.finished_on is None
    assert (await mids.get_dependencies(mid.id)).unprocessed == [key(queue, leaf)]
    assert (await queue.get_dependencies(root.job.id)).failed == {}
    assert sorted(await finish_all(queue, T + 3)) == ["leaf", "other"]
    assert await finish_all(mids, T + 4) == ["mid"]
    assert await finish_all(queue, T + 5) == ["root"]
    assert await state(queue, root.job.id) == "completed"


async def test_a_retried_child_leaves_a_parent_that_failed_for_another_reason(
    queue: JobQueue,
) -> None:
    root = await queue.add_flow(
        FlowJob(
            "root",
            children=[FlowJob("a"), FlowJob("b", options={"continue_parent_on_failure": True})],
        ),
        now=T,
    )
    b = await fail_one(queue, "b", T + 1)  # continue: the parent runs at once
    jobs = await claim(queue, T + 2)
    assert sorted(j.name for j in jobs) == ["a", "root"]
    for job in jobs:
        if job.name == "root":
            await queue.fail(job.id, job.lock_token or "", "own", retry=False, now=T + 2)
        else:
            await queue.complete(job.id, job.lock_token or "", "a", now=T + 2)
    await queue.retry_job(b.id, now=T + 3)
    assert await state(queue, root.job.id) == "failed"  # for its own reason: it stays so
    assert await finish_all(queue, T + 4) == ["b"]
    assert await state(queue, root.job.id) == "failed"


# ------------------------------------------------------------------------------ edits


async def test_remove_child_dependency_detaches_and_releases_on_the_last(
    queue: JobQueue,
) -> None:
    root = await queue.add_flow(FlowJob("root", children=[FlowJob("a"), FlowJob("b")]), now=T)
    a, b = (c.job for c in root.children)
    assert await queue.remove_child_dependency(a.id, now=T + 1) is True
    assert await queue.remove_child_dependency(a.id, now=T + 1) is False
    assert await state(queue, root.job.id) == "waiting_children"
    detached = await queue.get_job(a.id)
    assert detached is not None and detached.parent_key is None
    assert await queue.get_dependencies(root.job.id) == await queue.get_dependencies(root.job.id)
    assert (await queue.get_dependencies(root.job.id)).unprocessed == [key(queue, b)]
    assert await b.remove_child_dependency() is True
    assert await state(queue, root.job.id) == "waiting"
    # Detached children run on their own; the parent hears nothing.
    assert sorted(await finish_all(queue, T + 2)) == ["a", "b", "root"]
    assert await queue.get_children_values(root.job.id) == {}


async def test_remove_unprocessed_children_removes_them_and_releases_the_parent(
    queue: JobQueue,
) -> None:
    root = await queue.add_flow(
        FlowJob("root", children=[FlowJob("a"), FlowJob("b"), FlowJob("c")]), now=T
    )
    done = await claim(queue, T, max_jobs=1)
    assert done[0].lock_token is not None
    await queue.complete(done[0].id, done[0].lock_token, 1, now=T)
    assert await queue.remove_unprocessed_children(root.job.id, now=T + 1) == 2
    assert await state(queue, root.job.id) == "waiting"
    for child in root.children[1:]:
        assert await queue.get_job(child.job.id) is None
    assert await queue.get_dependencies_count(root.job.id) == {
        "processed": 1,
        "unprocessed": 0,
        "failed": 0,
        "ignored": 0,
        "missing": 0,
    }


async def test_removing_a_child_releases_its_parent(queue: JobQueue) -> None:
    root = await queue.add_flow(FlowJob("root", children=[FlowJob("a"), FlowJob("b")]), now=T)
    a, b = (c.job for c in root.children)
    await queue.remove(a.id, now=T + 1)
    assert await state(queue, root.job.id) == "waiting_children"
    assert (await queue.get_dependencies(root.job.id)).unprocessed == [key(queue, b)]
    await queue.remove(b.id, now=T + 2)
    assert await state(queue, root.job.id) == "waiting"
    assert await releases(queue, root.job.id) == 1


async def test_a_parent_is_released_after_the_removal_that_releases_it_is_recorded(
    queue: JobQueue,
) -> None:
    # Released to delayed, so that the drain below leaves it.
    removed = await queue.add_flow(
        FlowJob("root", options={"delay": 60.0}, children=[FlowJob("a")]), now=T
    )
    drained = await queue.add_flow(FlowJob("root", children=[FlowJob("b"), FlowJob("c")]), now=T)
    await queue.remove(removed.children[0].job.id, now=T + 1)
    assert await state(queue, removed.job.id) == "delayed"
    assert await queue.drain(now=T + 2) == 2
    # A drain that empties a parent of its queue deletes it (BullMQ's rule), after the drain
    # is recorded.
    assert await queue.get_job(drained.job.id) is None
    events = [(e.event, e.job_id) for e in await queue.read_events()]
    release = events.index(("delayed", removed.job.id))
    assert events.index(("removed", removed.children[0].job.id)) < release
    assert events.index(("cleaned", None)) < events.index(("removed", drained.job.id))
    assert await releases(queue, drained.job.id) == 0


# ----------------------------------------------------------------------- processors


async def test_add_children_from_a_processor_runs_the_parent_again(queue: JobQueue) -> None:
    runs: list[dict[str, Any]] = []
    worker = JobWorker(queue, concurrency=4)

    @worker.processor("parent")
    async def parent(job: Job) -> Any:
        values = await job.get_children_values()
        runs.append({"attempts_started": job.attempts_started, "values": values})
        if not values:
            nodes = await job.add_children([FlowJob("child", n) for n in (1, 2)])
            assert [n.job.parent_id for n in nodes] == [job.id, job.id]
            assert await job.get_state() == "waiting_children"
            return "ignored: the job is parked"
        return sorted(values.values())

    @worker.processor("child")
    async def child(job: Job) -> int:
        return int(job.data) * 10

    added = await queue.add("parent", None)
    async with worker:
        result = await added.wait(timeout=5)
    assert result == [10, 20]
    assert len(runs) == 2
    assert runs[0] == {"attempts_started": 1, "values": {}}
    assert runs[1]["attempts_started"] == 1  # the first run's attempt was given back
    assert len(runs[1]["values"]) == 2
    final = await queue.get_job(added.id)
    assert final is not None and final.attempts_made == 1 and final.state == "completed"


async def test_add_children_needs_a_held_job_and_some_children(queue: JobQueue) -> None:
    await queue.add("p")
    (job,) = await claim(queue)
    with pytest.raises(ConfigError, match="no children"):
        await job.add_children([])
    assert await state(queue, job.id) == "active"
    idle = await queue.add("idle")
    with pytest.raises(ConfigError):
        await idle.add_children([FlowJob("c")])


# ---------------------------------------------------------------------- cross-queue


async def test_children_in_another_queue_release_the_parent(
    queue: JobQueue, sibling: Callable[[str], JobQueue]
) -> None:
    other = sibling("kids")
    root = await queue.add_flow(
        FlowJob("root", children=[FlowJob("kid", 1, queue=other.name), FlowJob("home", 2)]),
        now=T,
    )
    kid, home = root.children
    assert kid.job.queue is other and kid.job.parent_key == key(queue, root)
    assert await finish_all(queue, T + 1) == ["home"]
    assert await state(queue, root.job.id) == "waiting_children"
    assert await finish_all(other, T + 2) == ["kid"]
    assert await state(queue, root.job.id) == "waiting"
    assert await queue.get_children_values(root.job.id) == {
        f"{other.name}:{kid.job.id}": "kid",
        key(queue, home): "home",
    }
    # Each queue keeps its own event stream.
    assert {e.job_id for e in await other.read_events() if e.job_id} == {kid.job.id}


async def test_a_failure_climbs_the_tree_across_three_queues(
    queue: JobQueue, sibling: Callable[[str], JobQueue]
) -> None:
    mids, leaves = sibling("mids"), sibling("leaves")
    root = await queue.add_flow(
        FlowJob(
            "root",
            children=[
                FlowJob("mid", queue=mids.name, children=[FlowJob("leaf", queue=leaves.name)])
            ],
        ),
        now=T,
    )
    (mid,) = root.children
    (leaf,) = mid.children
    assert leaf.job.queue is leaves and leaf.job.parent_key == key(mids, mid)
    await fail_one(leaves, "leaf", T + 1)
    assert await state(mids, mid.job.id) == "failed"
    failed = await queue.get_job(root.job.id)
    assert failed is not None and failed.state == "failed"
    assert failed.failed_reason == (f"child {mid.job.id} failed: child {leaf.job.id} failed: boom")
    assert (await mids.get_dependencies(mid.job.id)).failed == {key(leaves, leaf): "boom"}


async def test_children_in_another_queue_rejoin_detach_and_leave_when_removed(
    queue: JobQueue, sibling: Callable[[str], JobQueue]
) -> None:
    other = sibling("kids")
    root = await queue.add_flow(
        FlowJob(
            "root",
            children=[
                FlowJob("flaky", queue=other.name, options={"ignore_dependency_on_failure": True}),
                FlowJob("loose", queue=other.name),
                FlowJob("doomed", queue=other.name, options={"delay": 60.0}),
            ],
        ),
        now=T,
    )
    flaky, loose, doomed = (c.job for c in root.children)
    await fail_one(other, "flaky", T + 1)
    assert (await queue.get_dependencies_count(root.job.id))["ignored"] == 1
    await other.retry_job(flaky.id, now=T + 2)
    assert (await queue.get_dependencies_count(root.job.id)) == {
        "processed": 0,
        "unprocessed": 3,
        "failed": 0,
        "ignored": 0,
        "missing": 0,
    }
    assert await other.remove_child_dependency(loose.id, now=T + 3) is True
    assert await state(queue, root.job.id) == "waiting_children"
    assert sorted(await finish_all(other, T + 4)) == ["flaky", "loose"]
    await other.remove(doomed.id, now=T + 5)
    assert await state(queue, root.job.id) == "waiting"
    assert await queue.get_children_values(root.job.id) == {key(other, flaky): "flaky"}


async def test_remove_unprocessed_children_reaches_other_queues(
    queue: JobQueue, sibling: Callable[[str], JobQueue]
) -> None:
    other = sibling("kids")
    root = await queue.add_flow(
        FlowJob("root", children=[FlowJob("far", queue=other.name), FlowJob("near")]), now=T
    )
    assert await queue.remove_unprocessed_children(root.job.id, now=T + 1) == 2
    assert await other.get_job(root.children[0].job.id) is None
    assert await state(queue, root.job.id) == "waiting"


async def test_add_children_into_another_queue_parks_the_parent(
    queue: JobQueue, sibling: Callable[[str], JobQueue]
) -> None:
    other = sibling("kids")
    await queue.add("parent", now=T)
    (parent,) = await claim(queue, T)
    (kid,) = await parent.add_children([FlowJob("kid", queue=other.name)], now=T + 1)
    assert kid.job.queue is other and await state(queue, parent.id) == "waiting_children"
    assert await finish_all(other, T + 2) == ["kid"]
    assert await finish_all(queue, T + 3) == ["parent"]
    assert await queue.get_children_values(parent.id) == {key(other, kid): "kid"}


async def test_obliterating_a_parents_queue_leaves_its_childrens_queue(
    queue: JobQueue, sibling: Callable[[str], JobQueue]
) -> None:
    other = sibling("kids")
    root = await queue.add_flow(
        FlowJob("root", children=[FlowJob("kid", queue=other.name), FlowJob("near")]), now=T
    )
    await queue.obliterate(force=True)
    assert await queue.get_job(root.job.id) is None
    # The orphan runs on its own.
    assert await finish_all(other, T + 1) == ["kid"]
    assert await other.get_job_counts("completed") == {"completed": 1}


async def test_obliterating_a_childrens_queue_releases_their_parents(
    queue: JobQueue, sibling: Callable[[str], JobQueue]
) -> None:
    other = sibling("kids")
    root = await queue.add_flow(
        FlowJob(
            "root",
            children=[
                FlowJob("a", queue=other.name),
                FlowJob("b", queue=other.name, options={"delay": 60.0}),
            ],
        ),
        now=T,
    )
    assert await finish_all(other, T + 1) == ["a"]
    await other.obliterate(force=True)  # b, still pending, goes: the parent waits no more
    assert await state(queue, root.job.id) == "waiting"
    assert await queue.get_children_values(root.job.id) == {key(other, root.children[0]): "a"}


async def test_a_sibling_is_the_queue_object_made_already_and_a_new_one_shares_its_jobs(
    queue: JobQueue, sibling: Callable[[str], JobQueue]
) -> None:
    other = sibling("shared")
    assert sibling("shared") is other
    await other.add("x")
    await other.close()
    again = sibling("shared")  # a closed queue is not handed out: a new object of that queue
    assert again is not other
    assert await again.count_pending() == 1


# ------------------------------------------------------------------------------- wide


async def test_a_flow_of_a_thousand_children_releases_its_parent_once(queue: JobQueue) -> None:
    root = await queue.add_flow(
        FlowJob("root", children=[FlowJob("c", i) for i in range(1_000)]), now=T
    )
    assert len(root.children) == 1_000
    done = 0
    while done < 1_000:
        assert await state(queue, root.job.id) == "waiting_children"
        jobs = await claim(queue, T + 1, max_jobs=250)
        assert jobs and all(j.name == "c" for j in jobs)
        await queue.complete_many([(j.id, j.lock_token or "", j.data) for j in jobs], now=T + 1)
        done += len(jobs)
    assert await state(queue, root.job.id) == "waiting"
    assert await releases(queue, root.job.id) == 1
    counts = await queue.get_dependencies_count(root.job.id)
    assert counts["processed"] == 1_000 and counts["unprocessed"] == 0
    values = await queue.get_children_values(root.job.id)
    assert sorted(values.values()) == list(range(1_000))
    assert await finish_all(queue, T + 2) == ["root"]


# ------------------------------------------------------------------------- validation


async def assert_nothing_written(queue: JobQueue) -> None:
    counts = await queue.get_job_counts()
    assert sum(counts.values()) == 0, counts


async def test_a_bad_policy_writes_nothing(queue: JobQueue) -> None:
    flow = FlowJob("root", children=[FlowJob("c", options={"parent_policy": "sometimes"})])
    with pytest.raises(ConfigError, match="sometimes"):
        await queue.add_flow(flow, now=T)
    await assert_nothing_written(queue)


async def test_two_policies_write_nothing(queue: JobQueue) -> None:
    options = {"fail_parent_on_failure": True, "continue_parent_on_failure": True}
    flow = FlowJob("root", children=[FlowJob("ok"), FlowJob("c", options=options)])
    with pytest.raises(ConfigError, match="at most one"):
        await queue.add_flow(flow, now=T)
    await assert_nothing_written(queue)


async def test_a_queue_out_of_reach_writes_nothing(queue: JobQueue) -> None:
    # Outside the queue-name rule, so refused on every backend (braces would change a Redis
    # queue's hash tag; "/" is not a file name beside a local queue's).
    flow = FlowJob(
        "root",
        children=[FlowJob("ok"), FlowJob("c", children=[FlowJob("g", queue="no/where{}")])],
    )
    with pytest.raises(ConfigError, match="no/where"):
        await queue.add_flow(flow, now=T)
    await assert_nothing_written(queue)


async def test_invalid_nodes_write_nothing(queue: JobQueue) -> None:
    await queue.add("taken", job_id="taken")
    # (a custom id that exists is that job: test_flow_existing_jobs.py)
    bad_flows = [
        FlowJob(
            "root",
            children=[FlowJob("a", options={"job_id": "x"}), FlowJob("b", options={"job_id": "x"})],
        ),
        FlowJob("root", children=[FlowJob("c", options={"attempts": 0})]),
        FlowJob("root", children=[FlowJob("c", options={"dedup": {"id": "d"}})]),
    ]
    for flow in bad_flows:
        with pytest.raises((ConfigError, TypeError)):
            await queue.add_flow(flow, now=T)
    with pytest.raises(TypeError, match="not JSON"):
        await queue.add_flow(FlowJob("root", children=[FlowJob("c", data=object())]), now=T)
    with pytest.raises(TypeError, match="FlowJob"):
        await queue.add_flow(FlowJob("root", children=[("c", 1)]), now=T)  # type: ignore[list-item]
    assert await queue.get_job_counts() == {
        **dict.fromkeys(await queue.get_job_counts(), 0),
        "waiting": 1,
    }


async def test_waiting_for_a_parent_does_not_poll(queue: JobQueue) -> None:
    root = await queue.add_flow(FlowJob("root", children=[FlowJob("c")]), now=T)
    waiter = asyncio.ensure_future(root.job.wait(timeout=5))
    await asyncio.sleep(0)
    await finish_all(queue)
    await finish_all(queue)
    assert await waiter == "root"
