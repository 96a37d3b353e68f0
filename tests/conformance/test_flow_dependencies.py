"""A parent's dependencies as BullMQ reads them: child snapshots and the children that no
longer exist (``missing``), counts limited to chosen sets, the pending-dependencies rule (a
parent released early by ``continue_parent_on_failure`` cannot complete while a sibling is
unfinished), and dedup on the children ``add_children`` adds (cycles refused)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from lanemq import (
    ConfigError,
    Dedup,
    FlowJob,
    Job,
    JobFailedError,
    JobQueue,
    JobStateError,
    JobWorker,
    PendingDependenciesError,
)
from support import EPOCH_MS as T


async def claim(queue: JobQueue, now: int, *names: str) -> list[Job]:
    """Claims what is ready at ``now``; the jobs not named go back (none named: keeps all)."""
    jobs = await queue.claim("w", lease=60.0, max_jobs=100, now=now)
    kept = []
    for job in jobs:
        assert job.lock_token is not None
        if names and job.name not in names:
            await queue.release(job.id, job.lock_token, now=now)
        else:
            kept.append(job)
    return kept


def key(job: Job) -> str:
    return f"{job.queue.name}:{job.id}"


# ----------------------------------------------------------------- snapshots, missing


async def test_dependencies_hold_child_snapshots_and_the_missing_children(
    queue: JobQueue, sibling: Callable[[str], JobQueue]
) -> None:
    other = sibling("kids")
    root = await queue.add_flow(
        FlowJob(
            "root",
            children=[
                FlowJob("gone", options={"remove_on_complete": True}),
                FlowJob("kept", queue=other.name),
                FlowJob("ignored", options={"ignore_dependency_on_failure": True}),
                FlowJob("pending", options={"delay": 60.0}),
            ],
        ),
        now=T,
    )
    gone, kept, ignored, pending = (node.job for node in root.children)
    [job] = await claim(queue, T + 1, "gone")
    assert job.lock_token is not None
    await queue.complete(job.id, job.lock_token, "g", now=T + 1)
    [job] = await claim(other, T + 1)
    assert job.lock_token is not None
    await other.complete(job.id, job.lock_token, "k", now=T + 1)
    [job] = await claim(queue, T + 2, "ignored")
    assert job.lock_token is not None
    await queue.fail(job.id, job.lock_token, "boom", retry=False, now=T + 2)
    await queue.remove(ignored.id, now=T + 3)  # removed by hand, after it was recorded

    deps = await queue.get_dependencies(root.job.id)
    # The sets as they were: a removed child's value and reason stay recorded.
    assert deps.processed == {key(gone): "g", key(kept): "k"}
    assert deps.ignored == {key(ignored): "boom"}
    assert deps.unprocessed == [key(pending)]
    assert deps.missing == sorted([key(gone), key(ignored)])
    assert set(deps.jobs) == {key(kept), key(pending)}
    snapshot = deps.jobs[key(kept)]
    assert snapshot.queue is other and snapshot.id == kept.id
    assert snapshot.state == "completed" and snapshot.return_value == "k"
    assert deps.jobs[key(pending)].state == "delayed"

    # A page holds the snapshots and missing children of its own keys only.
    page = await queue.get_dependencies(root.job.id, count=1)
    assert list(page.processed) == [min(key(gone), key(kept))]
    assert set(page.jobs) | set(page.missing) == set(page.keys())

    assert await queue.get_dependencies_count(root.job.id) == {
        "processed": 2,
        "unprocessed": 1,
        "failed": 0,
        "ignored": 1,
        "missing": 2,
    }
    assert await root.job.get_dependencies_count("missing", "processed", "missing") == {
        "missing": 2,
        "processed": 2,
    }
    assert await queue.get_dependencies_count(root.job.id, "unprocessed") == {"unprocessed": 1}


async def test_an_unknown_dependency_bucket_is_refused_naming_it(queue: JobQueue) -> None:
    root = await queue.add_flow(FlowJob("root", children=[FlowJob("a")]), now=T)
    with pytest.raises(ConfigError, match="'done'"):
        await queue.get_dependencies_count(root.job.id, "processed", "done")


# ------------------------------------------------------------ pending dependencies


def early_release() -> FlowJob:
    """A parent released at once by its first child's failure, its second still delayed."""
    return FlowJob(
        "root",
        children=[
            FlowJob("bad", options={"continue_parent_on_failure": True}),
            FlowJob("slow", options={"delay": 60.0}),
        ],
    )


async def test_a_parent_released_early_cannot_complete_while_a_sibling_is_pending(
    queue: JobQueue,
) -> None:
    root = await queue.add_flow(early_release(), now=T)
    [bad] = await claim(queue, T + 1)
    assert bad.lock_token is not None
    await queue.fail(bad.id, bad.lock_token, "boom", retry=False, now=T + 1)
    [parent] = await claim(queue, T + 2)
    assert parent.id == root.job.id and parent.lock_token is not None
    with pytest.raises(PendingDependenciesError, match="pending dependencies") as refused:
        await queue.complete(parent.id, parent.lock_token, "early", now=T + 3)
    assert isinstance(refused.value, JobStateError)
    # Nothing written: still active and held, so its holder may fail or release it.
    after = await queue.get_job(parent.id)
    assert after is not None and after.state == "active" and after.return_value is None
    assert not [e for e in await queue.read_events() if e.event == "completed"]
    await queue.release(parent.id, parent.lock_token, now=T + 4)

    # Once the sibling is done, the parent completes.
    [slow] = await claim(queue, T + 61_000, "slow")
    assert slow.lock_token is not None
    await queue.complete(slow.id, slow.lock_token, "s", now=T + 61_000)
    [parent] = await claim(queue, T + 61_001)
    assert parent.lock_token is not None
    await queue.complete(parent.id, parent.lock_token, "late", now=T + 61_001)
    assert await queue.get_state(parent.id) == "completed"


async def test_a_workers_completion_of_such_a_parent_fails_it_as_bullmq_does(
    queue: JobQueue,
) -> None:
    worker = JobWorker(queue)

    @worker.processor("bad")
    async def bad(job: Job) -> None:
        raise ValueError("boom")

    @worker.processor("root")
    async def parent(job: Job) -> str:
        return "done"

    root = await queue.add_flow(early_release())
    async with worker:
        with pytest.raises(JobFailedError, match="pending dependencies") as failed:
            await root.job.wait(timeout=10)
    assert root.job.id in failed.value.reason
    final = await queue.get_job(root.job.id)
    assert final is not None and final.state == "failed" and final.return_value is None
    assert final.failed_reason is not None and "pending dependencies" in final.failed_reason
    assert await queue.get_dependencies_count(root.job.id, "unprocessed") == {"unprocessed": 1}


# ------------------------------------------------------------ dedup on add_children


async def test_a_child_added_with_dedup_is_deduplicated_into_the_key_holder(
    queue: JobQueue,
) -> None:
    owner = await queue.add("owner", 1, dedup=Dedup("d"), now=T)
    await queue.add("parent", None, now=T)
    [parent] = await claim(queue, T + 1, "parent")
    nodes = await parent.add_children(
        [FlowJob("a", 2, options={"dedup": Dedup("d")}), FlowJob("b")], now=T + 2
    )
    assert nodes[0].job.id == owner.id and nodes[0].job.data == 1
    assert nodes[0].job.parent_id == parent.id
    assert await queue.get_state(parent.id) == "waiting_children"
    deps = await queue.get_dependencies(parent.id)
    assert deps.unprocessed == sorted([key(owner), key(nodes[1].job)])
    deduplicated = [e.job_id for e in await queue.read_events() if e.event == "deduplicated"]
    assert deduplicated == [owner.id]
    for name in ("b", "owner"):
        [job] = await claim(queue, T + 3, name)
        assert job.lock_token is not None
        await queue.complete(job.id, job.lock_token, name, now=T + 3)
    assert await queue.get_state(parent.id) == "waiting"
    assert (await queue.get_dependencies(parent.id)).processed[key(owner)] == "owner"


async def test_a_child_deduplicated_into_its_own_ancestor_is_refused_writing_nothing(
    queue: JobQueue,
) -> None:
    # The top job holds the key; its child, active, would add it as its own child.
    await queue.add("top", None, dedup=Dedup("top"), now=T)
    [top] = await claim(queue, T + 1)
    [mid] = await top.add_children([FlowJob("mid")], now=T + 2)
    [held] = await claim(queue, T + 3)
    assert held.id == mid.job.id
    await queue.add("elsewhere", None, dedup=Dedup("free"), now=T + 3)
    before = await queue.get_job_counts()
    events = len(await queue.read_events())
    for children in (
        [FlowJob("x", options={"dedup": Dedup("top")})],
        # (after a harmless duplicate: every child is checked)
        [
            FlowJob("ok", options={"dedup": Dedup("free")}),
            FlowJob("x", options={"dedup": Dedup("top")}),
        ],
        [FlowJob("y", children=[FlowJob("x", options={"dedup": Dedup("top")})])],
    ):
        with pytest.raises(ConfigError, match=r'dedup \("top"\).*its own ancestor') as refused:
            await held.add_children(children, now=T + 4)
        assert f"flow node children[{len(children) - 1}]" in str(refused.value)
    # The job the children were for is still active and held, nothing was added.
    assert await queue.get_state(held.id) == "active"
    assert await queue.get_job_counts() == before
    assert len(await queue.read_events()) == events
    assert (await queue.get_dependencies(held.id)).keys() == []
    # The job itself holding the key is refused too.
    await queue.add("self", None, dedup=Dedup("self"), now=T + 5)
    [me] = await claim(queue, T + 6, "self")
    with pytest.raises(ConfigError, match="its own ancestor"):
        await me.add_children([FlowJob("x", options={"dedup": Dedup("self")})], now=T + 7)
    assert await queue.get_state(me.id) == "active"


# ------------------------------------------------------- dedup on nodes in other queues


async def test_a_node_in_another_queue_is_deduplicated_in_that_queues_dedup_space(
    queue: JobQueue, sibling: Callable[[str], JobQueue]
) -> None:
    other = sibling("kids")
    home_holder = await queue.add("home", None, dedup=Dedup("d"), now=T)
    owner = await other.add("owner", 1, dedup=Dedup("d"), now=T)
    root = await queue.add_flow(
        FlowJob(
            "root",
            children=[
                FlowJob("a", 2, queue=other.name, options={"dedup": Dedup("d")}),
                FlowJob("b"),
            ],
        ),
        now=T + 1,
    )
    a, b = root.children
    # The key of that queue, not the home queue's job that holds the same id.
    assert a.job.queue is other and a.job.id == owner.id and a.job.data == 1
    assert await queue.get_deduplication_job_id("d") == home_holder.id
    found = await other.get_job(owner.id)
    assert found is not None and found.parent_key == f"{queue.name}:{root.job.id}"
    deduplicated = [e.job_id for e in await other.read_events() if e.event == "deduplicated"]
    assert deduplicated == [owner.id]
    assert not [e for e in await queue.read_events() if e.event == "deduplicated"]
    assert sum((await other.get_job_counts()).values()) == 1  # nothing new there
    deps = await queue.get_dependencies(root.job.id)
    assert deps.unprocessed == sorted([key(a.job), key(b.job)])
    [job] = await claim(other, T + 2)
    assert job.lock_token is not None
    await other.complete(job.id, job.lock_token, "o", now=T + 2)
    assert await queue.get_state(root.job.id) == "waiting_children"
    [job] = await claim(queue, T + 3, "b")
    assert job.lock_token is not None
    await queue.complete(job.id, job.lock_token, "b", now=T + 3)
    assert await queue.get_state(root.job.id) == "waiting"
    assert (await queue.get_dependencies(root.job.id)).processed[key(a.job)] == "o"


async def test_a_node_created_in_another_queue_takes_that_queues_key(
    queue: JobQueue, sibling: Callable[[str], JobQueue]
) -> None:
    other = sibling("kids")
    await queue.add("home", None, dedup=Dedup("d"), now=T)

    def flow() -> FlowJob:
        node = FlowJob("a", queue=other.name, options={"dedup": Dedup("d")})
        return FlowJob("root", children=[node])

    first = await queue.add_flow(flow(), now=T + 1)
    [created] = first.children
    assert created.job.queue is other
    assert await other.get_deduplication_job_id("d") == created.job.id
    assert (await other.get_job(created.job.id)) is not None
    # A second flow's node there is deduplicated into it, which has a parent already.
    with pytest.raises(ConfigError, match=r"flow node root.children\[0\]: dedup .*already a child"):
        await queue.add_flow(flow(), now=T + 2)
    assert sum((await queue.get_job_counts()).values()) == 2
    assert sum((await other.get_job_counts()).values()) == 1
    # A root there holds no parent: deduplicated into it, it is that job.
    again = await queue.add_flow(
        FlowJob("top", children=[FlowJob("leaf")], queue=other.name, options={"dedup": Dedup("d")}),
        now=T + 3,
    )
    assert again.job.id == created.job.id and again.job.queue is other


async def test_a_node_in_another_queue_deduplicated_into_a_completed_owner_counts_at_once(
    queue: JobQueue, sibling: Callable[[str], JobQueue]
) -> None:
    other = sibling("kids")
    throttle = Dedup("t", ttl=60.0)
    await other.add("owner", None, dedup=throttle, now=T)
    [job] = await claim(other, T + 1)
    assert job.lock_token is not None
    await other.complete(job.id, job.lock_token, "done", now=T + 1)
    root = await queue.add_flow(
        FlowJob("root", children=[FlowJob("a", queue=other.name, options={"dedup": throttle})]),
        now=T + 2,
    )
    assert root.children[0].job.id == job.id
    assert await queue.get_state(root.job.id) == "waiting"
    assert (await queue.get_dependencies(root.job.id)).processed == {key(job): "done"}
