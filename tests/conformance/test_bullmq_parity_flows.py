"""Flows as BullMQ's own tests pin them (issue 20): removing a parent removes its tree (refused,
changing nothing, while a job of the tree is active), pruning children prunes their subtrees,
``continue_parent_on_failure`` failures count as ignored, a retried child whose failure its
released parent recorded is pending again, draining or cleaning a parent's last children in
its own queue deletes the parent, ``keep_parent_waiting`` (BullMQ's default) with a child
removed on failure, custom ids on flow nodes, and dedup on every flow node (a node deduplicated
into an existing job makes that job the parent's child)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from lanemq import (
    ConfigError,
    Dedup,
    FlowJob,
    Job,
    JobNode,
    JobQueue,
    JobStateError,
)
from support import EPOCH_MS as T


async def claim(queue: JobQueue, now: int = T) -> list[Job]:
    return await queue.claim("w", lease=60.0, max_jobs=100, now=now)


async def complete(queue: JobQueue, name: str, now: int = T) -> Job:
    """Claims what is claimable, completes the job `name` and releases the others."""
    return await _finish(queue, name, now, fail=False)


async def fail(queue: JobQueue, name: str, now: int = T) -> Job:
    """Claims what is claimable, fails the job `name` for good and releases the others."""
    return await _finish(queue, name, now, fail=True)


async def _finish(queue: JobQueue, name: str, now: int, *, fail: bool) -> Job:
    jobs = await claim(queue, now)
    found = [j for j in jobs if j.name == name]
    assert found, f"{name} was not claimable: {[j.name for j in jobs]}"
    for job in jobs:
        assert job.lock_token is not None
        if job is not found[0]:
            await queue.release(job.id, job.lock_token, now=now)
        elif fail:
            await queue.fail(job.id, job.lock_token, "boom", retry=False, now=now)
        else:
            await queue.complete(job.id, job.lock_token, job.name, now=now)
    return found[0]


async def state(queue: JobQueue, job_id: str) -> str | None:
    job = await queue.get_job(job_id)
    return None if job is None else job.state


def key(queue: JobQueue, node: JobNode | Job) -> str:
    job = node.job if isinstance(node, JobNode) else node
    return f"{queue.name}:{job.id}"


def tree() -> FlowJob:
    return FlowJob(
        "root",
        children=[
            FlowJob("mid", children=[FlowJob("leaf-a"), FlowJob("leaf-b")]),
            FlowJob("leaf-c"),
        ],
    )


def ids(node: JobNode) -> list[str]:
    """The ids of a node and its descendants, in preorder."""
    return [node.job.id] + [i for child in node.children for i in ids(child)]


async def states(queue: JobQueue, node: JobNode) -> dict[str, str | None]:
    return {job_id: await state(queue, job_id) for job_id in ids(node)}


# ------------------------------------------------------------- 1. removing a parent's tree


async def test_removing_a_parent_removes_its_whole_tree(queue: JobQueue) -> None:
    root = await queue.add_flow(tree(), now=T)
    await complete(queue, "leaf-c", T + 1)  # a finished child goes too
    await queue.remove(root.job.id, now=T + 2)
    assert set((await states(queue, root)).values()) == {None}
    counts = await queue.get_job_counts()
    assert sum(counts.values()) == 0
    # One removed event per job, the root first, then depth first, children by key.
    removed = [e.job_id for e in await queue.read_events() if e.event == "removed"]
    mid, leaf_c = root.children
    subtree = [mid.job.id, *sorted(c.job.id for c in mid.children)]
    by_key = sorted([(key(queue, mid), subtree), (key(queue, leaf_c), [leaf_c.job.id])])
    assert removed == [root.job.id] + [i for _, ids_ in by_key for i in ids_]


async def test_removing_a_tree_with_an_active_grandchild_is_refused_and_changes_nothing(
    queue: JobQueue,
) -> None:
    root = await queue.add_flow(tree(), now=T)
    jobs = await claim(queue, T + 1)
    for job in jobs:
        if job.name != "leaf-a":
            assert job.lock_token is not None
            await queue.release(job.id, job.lock_token, now=T + 1)
    before = await states(queue, root)
    assert before[root.children[0].children[0].job.id] == "active"
    with pytest.raises(JobStateError, match="locked"):
        await queue.remove(root.job.id, now=T + 2)
    with pytest.raises(JobStateError, match="locked"):
        await queue.remove(root.children[0].job.id, now=T + 2)
    assert await states(queue, root) == before
    assert len((await queue.get_dependencies(root.job.id)).unprocessed) == 2


async def test_removing_a_middle_node_removes_its_subtree_and_leaves_its_parent(
    queue: JobQueue,
) -> None:
    root = await queue.add_flow(tree(), now=T)
    mid, leaf_c = root.children
    await queue.remove(mid.job.id, now=T + 1)
    assert {i: s for i, s in (await states(queue, mid)).items()} == dict.fromkeys(ids(mid))
    deps = await queue.get_dependencies(root.job.id)
    assert deps.unprocessed == [key(queue, leaf_c)]
    assert await state(queue, root.job.id) == "waiting_children"
    # The last child removed releases the parent.
    await queue.remove(leaf_c.job.id, now=T + 2)
    assert await state(queue, root.job.id) == "waiting"


async def test_removing_a_parent_removes_its_children_in_other_queues(
    queue: JobQueue, sibling: Callable[[str], JobQueue]
) -> None:
    other = sibling("kids")
    root = await queue.add_flow(
        FlowJob(
            "root",
            children=[
                FlowJob("kid", queue=other.name, children=[FlowJob("grandkid")]),
                FlowJob("home"),
            ],
        ),
        now=T,
    )
    kid, home = root.children
    await queue.remove(root.job.id, now=T + 1)
    assert await state(queue, home.job.id) is None
    assert await other.get_job(kid.job.id) is None
    assert await other.get_job(kid.children[0].job.id) is None


async def test_removing_a_parent_whose_child_in_another_queue_is_active_is_refused(
    queue: JobQueue, sibling: Callable[[str], JobQueue]
) -> None:
    other = sibling("kids")
    root = await queue.add_flow(
        FlowJob("root", children=[FlowJob("kid", queue=other.name), FlowJob("home")]), now=T
    )
    (kid,) = await claim(other, T + 1)
    with pytest.raises(JobStateError, match="locked"):
        await queue.remove(root.job.id, now=T + 2)
    assert await state(queue, root.job.id) == "waiting_children"
    assert await state(queue, root.children[1].job.id) == "waiting"
    assert await state(other, kid.id) == "active"


# ------------------------------------------------ 2. pruning children prunes their subtrees


async def test_remove_unprocessed_children_removes_grandchildren_too(queue: JobQueue) -> None:
    root = await queue.add_flow(tree(), now=T)
    assert await queue.remove_unprocessed_children(root.job.id, now=T + 1) == 2
    for job_id in ids(root)[1:]:
        assert await state(queue, job_id) is None, job_id
    assert await state(queue, root.job.id) == "waiting"


async def test_remove_unprocessed_children_skips_a_subtree_with_an_active_job(
    queue: JobQueue,
) -> None:
    root = await queue.add_flow(tree(), now=T)
    mid, leaf_c = root.children
    jobs = await claim(queue, T + 1)
    for job in jobs:
        if job.name != "leaf-b":
            assert job.lock_token is not None
            await queue.release(job.id, job.lock_token, now=T + 1)
    assert await queue.remove_unprocessed_children(root.job.id, now=T + 2) == 1
    assert await state(queue, leaf_c.job.id) is None
    assert await state(queue, mid.job.id) == "waiting_children"
    assert await state(queue, mid.children[0].job.id) == "waiting"
    assert await state(queue, mid.children[1].job.id) == "active"
    assert (await queue.get_dependencies(root.job.id)).unprocessed == [key(queue, mid)]


# ------------------------------------------- 3. continue_parent_on_failure counts as ignored


async def test_a_continue_parent_on_failure_failure_counts_as_ignored(queue: JobQueue) -> None:
    root = await queue.add_flow(
        FlowJob(
            "root",
            children=[
                FlowJob("bad", options={"continue_parent_on_failure": True}),
                FlowJob("later", options={"delay": 60.0}),
            ],
        ),
        now=T,
    )
    bad = await fail(queue, "bad", T + 1)
    assert await state(queue, root.job.id) == "waiting"
    deps = await queue.get_dependencies(root.job.id)
    assert deps.failed == {} and deps.ignored == {key(queue, bad): "boom"}
    assert await queue.get_ignored_children_failures(root.job.id) == {key(queue, bad): "boom"}
    counts = await queue.get_dependencies_count(root.job.id)
    assert counts == {"processed": 0, "unprocessed": 1, "failed": 0, "ignored": 1, "missing": 0}


async def test_the_child_that_fails_its_parent_still_counts_as_failed(queue: JobQueue) -> None:
    root = await queue.add_flow(FlowJob("root", children=[FlowJob("bad")]), now=T)
    bad = await fail(queue, "bad", T + 1)
    deps = await queue.get_dependencies(root.job.id)
    assert deps.failed == {key(queue, bad): "boom"} and deps.ignored == {}


# ----------------------------------- 4. a retried child pending again for a released parent


@pytest.mark.parametrize("policy", ["ignore_dependency_on_failure", "continue_parent_on_failure"])
async def test_retrying_a_recorded_failure_after_the_release_makes_it_pending_again(
    queue: JobQueue, policy: str
) -> None:
    root = await queue.add_flow(
        FlowJob("root", children=[FlowJob("bad", options={"parent_policy": policy})]), now=T
    )
    bad = await fail(queue, "bad", T + 1)
    assert await state(queue, root.job.id) == "waiting"
    await queue.retry_job(bad.id, now=T + 2)
    deps = await queue.get_dependencies(root.job.id)
    assert deps.unprocessed == [key(queue, bad)] and deps.ignored == {}
    # The released parent does not move back.
    assert await state(queue, root.job.id) == "waiting"
    await complete(queue, "bad", T + 3)
    deps = await queue.get_dependencies(root.job.id)
    assert deps.processed == {key(queue, bad): "bad"} and deps.unprocessed == []


async def test_a_dropped_dependency_retried_after_the_release_stays_detached(
    queue: JobQueue,
) -> None:
    root = await queue.add_flow(
        FlowJob("root", children=[FlowJob("bad", options={"remove_dependency_on_failure": True})]),
        now=T,
    )
    bad = await fail(queue, "bad", T + 1)
    assert await state(queue, root.job.id) == "waiting"
    await queue.retry_job(bad.id, now=T + 2)
    assert (await queue.get_dependencies(root.job.id)).unprocessed == []


# -------------------------------- 5. draining or cleaning a parent's last children deletes it


async def test_draining_a_parents_last_children_deletes_the_parent_up_the_tree(
    queue: JobQueue,
) -> None:
    root = await queue.add_flow(tree(), now=T)
    assert await queue.drain(now=T + 1) == 3
    assert set((await states(queue, root)).values()) == {None}


async def test_draining_leaves_a_parent_that_still_waits_for_a_delayed_child(
    queue: JobQueue,
) -> None:
    root = await queue.add_flow(
        FlowJob("root", children=[FlowJob("now"), FlowJob("later", options={"delay": 60.0})]),
        now=T,
    )
    assert await queue.drain(now=T + 1) == 1
    assert await state(queue, root.job.id) == "waiting_children"
    assert (await queue.drain(True, now=T + 2)) == 1
    assert await state(queue, root.job.id) is None


async def test_cleaning_a_parents_last_waiting_children_deletes_the_parent(
    queue: JobQueue,
) -> None:
    root = await queue.add_flow(FlowJob("root", children=[FlowJob("a"), FlowJob("b")]), now=T)
    removed = await queue.clean(0, state="waiting", now=T + 1)
    assert sorted(removed) == sorted(ids(root)[1:])
    assert await state(queue, root.job.id) is None


async def test_draining_children_in_another_queue_releases_their_parent(
    queue: JobQueue, sibling: Callable[[str], JobQueue]
) -> None:
    other = sibling("kids")
    root = await queue.add_flow(FlowJob("root", children=[FlowJob("kid", queue=other.name)]), now=T)
    assert await other.drain(now=T + 1) == 1
    assert await state(queue, root.job.id) == "waiting"


async def test_removing_a_parents_last_child_by_hand_still_releases_it(queue: JobQueue) -> None:
    root = await queue.add_flow(FlowJob("root", children=[FlowJob("a")]), now=T)
    await queue.remove(root.children[0].job.id, now=T + 1)
    assert await state(queue, root.job.id) == "waiting"


# --------------------------- keep_parent_waiting (BullMQ's default), and 6. remove_on_fail


async def test_keep_parent_waiting_leaves_the_failed_child_pending_until_retried(
    queue: JobQueue,
) -> None:
    root = await queue.add_flow(
        FlowJob(
            "root", children=[FlowJob("bad", options={"parent_policy": "keep_parent_waiting"})]
        ),
        now=T,
    )
    bad = await fail(queue, "bad", T + 1)
    assert await state(queue, root.job.id) == "waiting_children"
    deps = await queue.get_dependencies(root.job.id)
    assert deps.unprocessed == [key(queue, bad)] and deps.failed == {} and deps.ignored == {}
    await queue.retry_job(bad.id, now=T + 2)
    await complete(queue, "bad", T + 3)
    assert await state(queue, root.job.id) == "waiting"
    assert await queue.get_children_values(root.job.id) == {key(queue, bad): "bad"}


async def test_keep_parent_waiting_with_remove_on_fail_moves_the_parent_on(
    queue: JobQueue,
) -> None:
    options = {"parent_policy": "keep_parent_waiting", "remove_on_fail": True}
    root = await queue.add_flow(
        FlowJob("root", children=[FlowJob("ok"), FlowJob("bad", options=options)]), now=T
    )
    await complete(queue, "ok", T + 1)
    bad = await fail(queue, "bad", T + 2)
    assert await queue.get_job(bad.id) is None
    assert await state(queue, root.job.id) == "waiting"
    counts = await queue.get_dependencies_count(root.job.id)
    assert counts == {"processed": 1, "unprocessed": 0, "failed": 0, "ignored": 0, "missing": 0}


async def test_keep_parent_waiting_child_removed_by_hand_moves_the_parent_on(
    queue: JobQueue,
) -> None:
    root = await queue.add_flow(
        FlowJob(
            "root", children=[FlowJob("bad", options={"parent_policy": "keep_parent_waiting"})]
        ),
        now=T,
    )
    bad = await fail(queue, "bad", T + 1)
    await queue.remove(bad.id, now=T + 2)
    assert await state(queue, root.job.id) == "waiting"


async def test_by_default_a_child_removed_on_fail_still_fails_its_parent(
    queue: JobQueue,
) -> None:
    # lanemq's default (a deliberate difference from BullMQ): the parent fails.
    root = await queue.add_flow(
        FlowJob("root", children=[FlowJob("bad", options={"remove_on_fail": True})]), now=T
    )
    bad = await fail(queue, "bad", T + 1)
    assert await queue.get_job(bad.id) is None
    assert await state(queue, root.job.id) == "failed"


async def test_keep_parent_waiting_is_one_policy_among_the_others(queue: JobQueue) -> None:
    flow = FlowJob(
        "root",
        children=[
            FlowJob(
                "c",
                options={"parent_policy": "keep_parent_waiting", "fail_parent_on_failure": True},
            )
        ],
    )
    with pytest.raises(ConfigError, match="keep_parent_waiting"):
        await queue.add_flow(flow, now=T)
    assert sum((await queue.get_job_counts()).values()) == 0


# ------------------------------------------------- 14. dedup and custom ids on flow nodes


async def test_re_adding_a_flow_with_custom_ids_returns_the_existing_jobs(
    queue: JobQueue,
) -> None:
    def flow() -> FlowJob:
        return FlowJob(
            "root",
            options={"job_id": "r"},
            children=[FlowJob("a", options={"job_id": "a"}), FlowJob("b", options={"job_id": "b"})],
        )

    first = await queue.add_flow(flow(), now=T)
    again = await queue.add_flow(flow(), now=T + 1)
    assert again.job.id == first.job.id == "r"
    assert sorted(c.job.id for c in again.children) == ["a", "b"]
    assert sum((await queue.get_job_counts()).values()) == 3
    # Like a single add: the existing job, one duplicated event, nothing else written.
    duplicated = [e.job_id for e in await queue.read_events() if e.event == "duplicated"]
    assert duplicated == ["r"]


async def test_a_childless_root_with_dedup_is_deduplicated(queue: JobQueue) -> None:
    first = await queue.add_flow(FlowJob("root", 1, options={"dedup": Dedup("d")}), now=T)
    again = await queue.add_flow(FlowJob("root", 2, options={"dedup": Dedup("d")}), now=T + 1)
    assert again.job.id == first.job.id
    assert sum((await queue.get_job_counts()).values()) == 1


async def test_a_childless_root_with_keep_last_dedup_keeps_the_last(queue: JobQueue) -> None:
    first = await queue.add_flow(FlowJob("root", 1, options={"dedup": Dedup("d")}), now=T)
    (running,) = await claim(queue, T + 1)
    assert running.id == first.job.id
    keep_last = Dedup("d", keep_last=True)
    await queue.add_flow(FlowJob("root", 2, options={"dedup": keep_last}), now=T + 2)
    await queue.add_flow(FlowJob("root", 3, options={"dedup": keep_last}), now=T + 3)
    assert running.lock_token is not None
    await queue.complete(running.id, running.lock_token, None, now=T + 4)
    (last,) = await claim(queue, T + 5)
    assert last.data == 3


async def test_re_adding_a_flow_spanning_queues_returns_the_existing_tree(
    queue: JobQueue, sibling: Callable[[str], JobQueue]
) -> None:
    other = sibling("kids")

    def flow() -> FlowJob:
        # Custom ids: a node without one is a new job each time (the root gains it).
        grandkid = FlowJob("grandkid", options={"job_id": "g"})
        kid = FlowJob("kid", options={"job_id": "k"}, queue=other.name, children=[grandkid])
        return FlowJob("root", options={"job_id": "r"}, children=[kid])

    first = await queue.add_flow(flow(), now=T)
    again = await queue.add_flow(flow(), now=T + 1)
    (kid,) = again.children
    assert kid.job.id == first.children[0].job.id and kid.job.queue is other
    assert [g.job.id for g in kid.children] == [first.children[0].children[0].job.id]
    assert sum((await other.get_job_counts()).values()) == 2


async def test_a_re_added_flow_with_bad_options_is_still_refused(queue: JobQueue) -> None:
    await queue.add_flow(FlowJob("root", options={"job_id": "r"}, children=[FlowJob("a")]), now=T)
    bad = FlowJob(
        "root",
        options={"job_id": "r"},
        children=[FlowJob("a", options={"parent_policy": "sometimes"})],
    )
    with pytest.raises(ConfigError, match="sometimes"):
        await queue.add_flow(bad, now=T + 1)
    assert [e.event for e in await queue.read_events()].count("duplicated") == 0


async def test_a_new_flow_with_a_childs_custom_id_taken_attaches_that_job(
    queue: JobQueue,
) -> None:
    # BullMQ's updateExistingJobsParent (more in test_flow_existing_jobs.py).
    await queue.add("taken", None, job_id="a", now=T)
    flow = FlowJob("root", children=[FlowJob("a", options={"job_id": "a"})])
    root = await queue.add_flow(flow, now=T + 1)
    assert [c.job.name for c in root.children] == ["taken"]
    assert sum((await queue.get_job_counts()).values()) == 2


async def test_a_childless_root_whose_custom_id_exists_is_the_existing_job(
    queue: JobQueue,
) -> None:
    first = await queue.add_flow(FlowJob("root", 1, options={"job_id": "r"}), now=T)
    again = await queue.add_flow(FlowJob("root", 2, options={"job_id": "r"}), now=T + 1)
    assert again.job.id == first.job.id and again.job.data == 1


# Dedup on flow nodes (BullMQ accepts it on every node). A node deduplicated into an existing
# job (its owner) is that job: the parent waits for the owner, which keeps its own options; the
# node's own children are not added; every node still takes its automatic id.


def dedup_flow(*children: FlowJob, root_options: dict[str, object] | None = None) -> FlowJob:
    return FlowJob("root", options=root_options or {}, children=list(children))


async def test_a_child_deduplicated_into_a_waiting_job_is_the_parents_child(
    queue: JobQueue,
) -> None:
    owner = await queue.add("owner", 1, dedup=Dedup("d"), now=T)
    flow = dedup_flow(FlowJob("a", 2, options={"dedup": Dedup("d")}), FlowJob("b"))
    root = await queue.add_flow(flow, now=T + 1)
    a, b = root.children
    assert a.job.id == owner.id and a.job.data == 1
    # The deduplicated node still takes its automatic id: root 2, a 3 (unused), b 4.
    assert (root.job.id, b.job.id) == ("2", "4")
    assert sum((await queue.get_job_counts()).values()) == 3
    deps = await queue.get_dependencies(root.job.id)
    assert deps.unprocessed == sorted([key(queue, owner), key(queue, b)])
    dedup_events = [
        (e.event, e.job_id) for e in await queue.read_events() if e.event == "deduplicated"
    ]
    assert dedup_events == [("deduplicated", owner.id)]
    await complete(queue, "b", T + 2)
    assert await state(queue, root.job.id) == "waiting_children"
    await complete(queue, "owner", T + 3)
    assert await state(queue, root.job.id) == "waiting"
    assert (await queue.get_dependencies(root.job.id)).processed[key(queue, owner)] == "owner"
    assert (await queue.get_job(owner.id)).parent_id == root.job.id  # type: ignore[union-attr]


async def test_a_child_deduplicated_into_an_active_job_waits_for_it(queue: JobQueue) -> None:
    await queue.add("owner", 1, dedup=Dedup("d"), now=T)
    (running,) = await claim(queue, T + 1)
    root = await queue.add_flow(dedup_flow(FlowJob("a", options={"dedup": Dedup("d")})), now=T + 2)
    assert [c.job.id for c in root.children] == [running.id]
    assert await state(queue, root.job.id) == "waiting_children"
    assert running.lock_token is not None
    await queue.complete(running.id, running.lock_token, 7, now=T + 3)
    assert await state(queue, root.job.id) == "waiting"
    assert (await queue.get_dependencies(root.job.id)).processed == {key(queue, running): 7}


async def test_a_child_deduplicated_into_a_completed_owner_counts_as_processed(
    queue: JobQueue,
) -> None:
    # Throttle keys are held until they expire, whatever the owner's state.
    d, e = Dedup("d", ttl=60.0), Dedup("e", ttl=60.0)
    await queue.add("owner", None, dedup=d, now=T)
    await queue.add("other", None, dedup=e, now=T)
    owner = await complete(queue, "owner", T + 1)
    other = await complete(queue, "other", T + 1)
    only = await queue.add_flow(dedup_flow(FlowJob("a", options={"dedup": d})), now=T + 2)
    assert [c.job.id for c in only.children] == [owner.id]
    assert await state(queue, only.job.id) == "waiting"  # nothing left to wait for
    assert (await queue.get_dependencies(only.job.id)).processed == {key(queue, owner): "owner"}
    two = await queue.add_flow(
        dedup_flow(FlowJob("a", options={"dedup": e}), FlowJob("b")), now=T + 3
    )
    assert two.children[0].job.id == other.id
    assert await state(queue, two.job.id) == "waiting_children"
    counts = await queue.get_dependencies_count(two.job.id)
    assert (counts["processed"], counts["unprocessed"]) == (1, 1)


async def test_a_child_deduplicated_into_a_failed_owner_fails_the_parent(
    queue: JobQueue,
) -> None:
    throttle = Dedup("d", ttl=60.0)
    await queue.add("owner", None, dedup=throttle, now=T)
    owner = await fail(queue, "owner", T + 1)
    root = await queue.add_flow(
        dedup_flow(FlowJob("a", options={"dedup": throttle}), FlowJob("b")), now=T + 2
    )
    job = await queue.get_job(root.job.id)
    assert job is not None and job.state == "failed"
    assert job.failed_reason == f"child {owner.id} failed: boom"
    assert (await queue.get_dependencies(root.job.id)).failed == {key(queue, owner): "boom"}


async def test_a_keep_last_child_of_an_active_owner_is_kept_and_the_parent_waits_for_the_owner(
    queue: JobQueue,
) -> None:
    await queue.add("owner", 1, dedup=Dedup("d"), now=T)
    (running,) = await claim(queue, T + 1)
    keep_last = Dedup("d", keep_last=True)
    root = await queue.add_flow(
        dedup_flow(FlowJob("a", 2, options={"dedup": keep_last})), now=T + 2
    )
    assert [c.job.id for c in root.children] == [running.id]
    assert running.lock_token is not None
    await queue.complete(running.id, running.lock_token, None, now=T + 3)
    assert await state(queue, root.job.id) == "waiting"
    # The kept duplicate runs after the owner, on its own.
    jobs = await claim(queue, T + 4)
    (last,) = [j for j in jobs if j.name == "a"]
    assert last.data == 2 and last.parent_id is None


async def test_a_root_deduplicated_with_children_is_the_owner_and_adds_nothing(
    queue: JobQueue,
) -> None:
    owner = await queue.add("owner", None, dedup=Dedup("r"), now=T)
    flow = dedup_flow(FlowJob("a"), FlowJob("b"), root_options={"dedup": Dedup("r")})
    root = await queue.add_flow(flow, now=T + 1)
    assert root.job.id == owner.id and root.children == []
    assert sum((await queue.get_job_counts()).values()) == 1
    # The flow's three nodes took ids 2, 3 and 4 all the same.
    assert (await queue.add("next", None, now=T + 2)).id == "5"


async def test_a_new_root_with_dedup_and_children_holds_its_key(queue: JobQueue) -> None:
    flow = dedup_flow(FlowJob("a"), root_options={"dedup": Dedup("r")})
    root = await queue.add_flow(flow, now=T)
    assert await queue.get_deduplication_job_id("r") == root.job.id
    again = await queue.add_flow(flow, now=T + 1)
    assert again.job.id == root.job.id
    assert [c.job.id for c in again.children] == [root.children[0].job.id]
    assert sum((await queue.get_job_counts()).values()) == 2


# (Dedup on a node in another queue, in that queue's dedup space: test_flow_dependencies.py.)


async def test_a_child_deduplicated_into_a_job_with_another_parent_writes_nothing(
    queue: JobQueue,
) -> None:
    first = await queue.add_flow(dedup_flow(FlowJob("a", options={"dedup": Dedup("d")})), now=T)
    owner = first.children[0].job
    events = len(await queue.read_events())
    flow = dedup_flow(FlowJob("b"), FlowJob("a", options={"dedup": Dedup("d")}))
    with pytest.raises(
        ConfigError, match=rf'flow node root.children\[1\]: dedup \("d"\).*"{owner.id}"'
    ):
        await queue.add_flow(flow, now=T + 1)
    assert sum((await queue.get_job_counts()).values()) == 2
    assert len(await queue.read_events()) == events
    # Nothing was taken: the next automatic id follows the first flow's.
    assert (await queue.add("next", None, now=T + 2)).id == "3"


async def test_a_dedup_id_twice_in_one_flow_is_refused(queue: JobQueue) -> None:
    d = {"dedup": Dedup("d")}
    flow = dedup_flow(FlowJob("a", options=d), FlowJob("b", options=d))
    with pytest.raises(ConfigError, match=r'dedup id "d" appears twice'):
        await queue.add_flow(flow, now=T)
    assert sum((await queue.get_job_counts()).values()) == 0


async def test_removing_a_tree_whose_grandchild_in_another_queue_is_active_is_refused(
    queue: JobQueue, sibling: Callable[[str], JobQueue]
) -> None:
    other = sibling("kids")
    root = await queue.add_flow(
        FlowJob("root", children=[FlowJob("mid", children=[FlowJob("kid", queue=other.name)])]),
        now=T,
    )
    (kid,) = await claim(other, T + 1)
    with pytest.raises(JobStateError, match="descendant"):
        await queue.remove(root.job.id, now=T + 2)
    assert await state(queue, root.job.id) == "waiting_children"
    assert await state(queue, root.children[0].job.id) == "waiting_children"
    assert await state(other, kid.id) == "active"


async def test_obliterating_a_kept_failed_childs_queue_moves_its_parent_on(
    queue: JobQueue, sibling: Callable[[str], JobQueue]
) -> None:
    other = sibling("kids")
    options = {"parent_policy": "keep_parent_waiting"}
    root = await queue.add_flow(
        FlowJob("root", children=[FlowJob("bad", queue=other.name, options=options)]), now=T
    )
    await fail(other, "bad", T + 1)
    assert await state(queue, root.job.id) == "waiting_children"
    await other.obliterate(force=True)
    assert await state(queue, root.job.id) == "waiting"
