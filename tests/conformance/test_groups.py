"""Groups (`JobQueue.add(..., group=...)`): fair turns between groups at the claim, inside
one claim and across claims; ungrouped jobs as a group of their own; priority within a group
only; concurrency and rate limits per group held across workers; defaults and overrides;
max_size refusing an add whole; pause and resume; counts, listing, removal; bad input.

Claims are driven with ``now=``; the two-worker case runs on the wall clock."""

from __future__ import annotations

import asyncio

import pytest
from lanemq import (
    ConfigError,
    FlowJob,
    GroupLimits,
    GroupMaxSizeExceededError,
    Job,
    JobQueue,
    JobWorker,
)
from support import EPOCH_MS as T

LIMIT = 10.0  # upper bound for anything awaited; a healthy run needs a small fraction of it


async def _add(queue: JobQueue, group: str | None, n: int, **options: object) -> list[Job]:
    return [
        await queue.add(f"{group}-{i}", {"group": group, "i": i}, group=group, now=T, **options)  # type: ignore[arg-type]
        for i in range(n)
    ]


def _names(jobs: list[Job]) -> list[str]:
    return [job.name for job in jobs]


# ------------------------------------------------------------------ the group carried


async def test_the_group_is_carried_by_add_add_bulk_flows_and_schedulers(queue: JobQueue) -> None:
    added = await queue.add("one", 1, group="a", now=T)
    bulk = await queue.add_bulk([("two", 2, {"group": "b"}), ("three", 3)], now=T)
    node = await queue.add_flow(
        FlowJob(
            "parent",
            0,
            options={"group": "p"},
            children=[FlowJob("child", 0, options={"group": "c"})],
        ),
        now=T,
    )
    await queue.upsert_scheduler("every", every=60.0, template=("tick", 0, {"group": "s"}), now=T)

    assert added.group == "a"
    assert [job.group for job in bulk] == ["b", None]
    assert node.job.group == "p"
    assert [child.job.group for child in node.children] == ["c"]
    stored = await queue.get_job(added.id)
    assert stored is not None and stored.group == "a"
    occurrences = await queue.list_jobs("delayed") + await queue.list_jobs("waiting")
    ticks = [job for job in occurrences if job.name == "tick"]
    assert ticks and all(job.group == "s" for job in ticks)
    assert await queue.get_group_counts("s", "waiting", "delayed") in (
        {"waiting": 1, "delayed": 0},
        {"waiting": 0, "delayed": 1},
    )


async def test_the_added_event_names_the_group(queue: JobQueue) -> None:
    grouped = await queue.add("g", 1, group="a", now=T)
    plain = await queue.add("p", 2, now=T)
    added = {e.job_id: e for e in await queue.read_events() if e.event == "added"}
    assert added[grouped.id].fields.get("group") == "a"
    assert "group" not in added[plain.id].fields


# ------------------------------------------------------------------------- the turns


async def test_groups_take_turns_inside_one_claim(queue: JobQueue) -> None:
    await _add(queue, "A", 3)
    await _add(queue, "B", 1)
    await _add(queue, "C", 1)
    claimed = await queue.claim("w", max_jobs=5, now=T)
    assert _names(claimed) == ["A-0", "B-0", "C-0", "A-1", "A-2"]


async def test_a_small_group_starts_within_two_claims_of_a_large_one(queue: JobQueue) -> None:
    await queue.add_bulk([(f"big-{i}", i, {"group": "big"}) for i in range(1000)], now=T)
    await queue.add("small", 0, group="small", now=T)
    first = await queue.claim("w", now=T)
    second = await queue.claim("w", now=T)
    assert "small" in _names(first + second)
    # And the large group goes on after it.
    assert _names(await queue.claim("w", max_jobs=2, now=T)) == ["big-1", "big-2"]


async def test_ungrouped_jobs_take_turns_as_one_group(queue: JobQueue) -> None:
    await _add(queue, None, 3)
    await _add(queue, "A", 2)
    claimed = await queue.claim("w", max_jobs=5, now=T)
    assert _names(claimed) == ["None-0", "A-0", "None-1", "A-1", "None-2"]


async def test_priority_orders_a_group_and_the_turn_orders_the_groups(queue: JobQueue) -> None:
    await queue.add("b-low", 0, group="B", priority=50, now=T)
    await queue.add("a-low", 0, group="A", priority=40, now=T)
    await queue.add("a-high", 0, group="A", priority=1, now=T)
    claimed = await queue.claim("w", max_jobs=3, now=T)
    assert _names(claimed) == ["b-low", "a-high", "a-low"]


async def test_turns_go_on_across_claims(queue: JobQueue) -> None:
    await _add(queue, "A", 3)
    await _add(queue, "B", 3)
    names = []
    for _ in range(6):
        names += _names(await queue.claim("w", now=T))
    assert names == ["A-0", "B-0", "A-1", "B-1", "A-2", "B-2"]


async def test_an_emptied_queue_is_not_ready_after_mixed_claims(queue: JobQueue) -> None:
    await _add(queue, "A", 2)
    await _add(queue, None, 2)
    names = []
    for _ in range(4):
        names += _names(await queue.claim("w", now=T))
    assert names == ["A-0", "None-0", "A-1", "None-1"]
    assert await queue.claim("w", now=T) == []
    if queue.remote:
        # Redis: the adds' wake-up marker, which these direct claims never popped, wakes one
        # wait once (a worker's wake-up that then claims nothing), grouped or not.
        await queue.wait_for_job(timeout=0.1)
    assert not await queue.wait_for_job(timeout=0.1)


# ------------------------------------------------------------------------- the limits


async def test_concurrency_holds_a_group_until_its_job_ends(queue: JobQueue) -> None:
    await queue.set_group_limits("A", concurrency=1)
    await _add(queue, "A", 2)
    await _add(queue, "B", 2)
    first = await queue.claim("w", max_jobs=5, now=T)
    assert _names(first) == ["A-0", "B-0", "B-1"]
    assert await queue.claim("w", now=T) == []
    done = first[0]
    await queue.complete(done.id, done.lock_token or "", "done", now=T + 1)
    assert _names(await queue.claim("w", now=T + 2)) == ["A-1"]


async def test_concurrency_is_held_across_two_workers(queue: JobQueue) -> None:
    await queue.set_group_limits("A", concurrency=1)
    await _add(queue, "A", 4)
    await _add(queue, "B", 2)
    running: dict[str | None, int] = {}
    most: dict[str | None, int] = {}

    async def process(job: Job) -> str:
        running[job.group] = running.get(job.group, 0) + 1
        most[job.group] = max(most.get(job.group, 0), running[job.group])
        await asyncio.sleep(0.02)
        running[job.group] -= 1
        return "ok"

    workers = [JobWorker(queue, process, concurrency=3) for _ in range(2)]
    await asyncio.wait_for(asyncio.gather(*(w.run_until_idle() for w in workers)), LIMIT)
    assert await queue.get_job_counts("completed") == {"completed": 6}
    assert most["A"] == 1
    assert await queue.get_group_counts("A", "completed", "active") == {"completed": 4, "active": 0}


async def test_a_group_alone_gives_its_jobs_by_priority_within_its_concurrency(
    queue: JobQueue,
) -> None:
    # A group alone in the turns gives every next turn: one claim takes as many of its jobs as
    # its limit lets, in priority order (Redis takes them in one pop).
    await queue.set_group_limits("A", concurrency=3)
    for name, priority in [("a5", 5), ("a1", 1), ("a3", 3), ("a2", 2), ("a4", 4)]:
        await queue.add(name, 0, group="A", priority=priority, now=T)
    first = await queue.claim("w", max_jobs=10, now=T)
    assert _names(first) == ["a1", "a2", "a3"]
    assert await queue.claim("w", max_jobs=10, now=T) == []
    await queue.complete(first[1].id, first[1].lock_token or "", "done", now=T + 1)
    assert _names(await queue.claim("w", max_jobs=10, now=T + 2)) == ["a4"]
    assert await queue.get_group_counts("A", "active", "waiting") == {"active": 3, "waiting": 1}


async def test_a_group_alone_gives_its_rate_in_one_claim_then_waits_for_its_window(
    queue: JobQueue,
) -> None:
    await queue.set_group_limits("A", rate=(2, 1.0))
    await _add(queue, "A", 5)
    assert _names(await queue.claim("w", max_jobs=10, now=T)) == ["A-0", "A-1"]
    assert await queue.claim("w", max_jobs=10, now=T + 500) == []
    assert _names(await queue.claim("w", max_jobs=10, now=T + 1000)) == ["A-2", "A-3"]
    # Ungrouped jobs added meanwhile take turns with it again.
    await _add(queue, None, 2)
    assert _names(await queue.claim("w", max_jobs=10, now=T + 2000)) == ["None-0", "A-4", "None-1"]


async def test_rate_limits_claims_of_a_group_per_window(queue: JobQueue) -> None:
    await queue.set_group_limits("A", rate=(2, 1.0))
    await _add(queue, "A", 3)
    await _add(queue, "B", 1)
    assert _names(await queue.claim("w", max_jobs=5, now=T)) == ["A-0", "B-0", "A-1"]
    assert await queue.claim("w", max_jobs=5, now=T + 500) == []
    assert _names(await queue.claim("w", max_jobs=5, now=T + 1000)) == ["A-2"]


async def test_defaults_apply_to_every_group_and_overrides_win(queue: JobQueue) -> None:
    await queue.set_group_defaults(concurrency=1, max_size=10)
    await queue.set_group_limits("B", concurrency=2)
    assert await queue.get_group_defaults() == GroupLimits(concurrency=1, max_size=10)
    assert await queue.get_group_limits("B") == GroupLimits(concurrency=2)
    assert await queue.get_group_limits("A") == GroupLimits()
    await _add(queue, "A", 3)
    await _add(queue, "B", 3)
    await _add(queue, None, 2)
    claimed = await queue.claim("w", max_jobs=10, now=T)
    # Ungrouped jobs have no group limits.
    assert sorted(_names(claimed)) == ["A-0", "B-0", "B-1", "None-0", "None-1"]


async def test_raising_a_limit_makes_a_held_group_claimable(queue: JobQueue) -> None:
    await queue.set_group_limits("A", concurrency=1)
    await _add(queue, "A", 2)
    assert len(await queue.claim("w", max_jobs=5, now=T)) == 1
    assert await queue.claim("w", now=T) == []
    await queue.set_group_limits("A", concurrency=2)
    assert _names(await queue.claim("w", now=T)) == ["A-1"]


async def test_max_size_refuses_an_add_and_writes_nothing(queue: JobQueue) -> None:
    await queue.set_group_limits("A", max_size=2)
    await _add(queue, "A", 1)
    await queue.add("later", 0, group="A", delay=10.0, now=T)
    with pytest.raises(GroupMaxSizeExceededError, match="A"):
        await queue.add("over", 0, group="A", now=T)
    with pytest.raises(GroupMaxSizeExceededError):
        await queue.add_bulk([("plain", 0), ("over", 0, {"group": "A"})], now=T)
    assert await queue.get_job_counts("waiting", "delayed") == {"waiting": 1, "delayed": 1}
    # Other groups and ungrouped jobs are not bounded by it.
    await _add(queue, "B", 3)
    await queue.add("plain", 0, now=T)
    # An active job is not counted: a claim makes room.
    await queue.claim("w", now=T)
    await queue.add("fits", 0, group="A", now=T)
    assert await queue.get_group_counts("A", "waiting", "delayed", "active") == {
        "waiting": 1,
        "delayed": 1,
        "active": 1,
    }


async def test_max_size_refuses_a_flow_whole(queue: JobQueue) -> None:
    await queue.set_group_limits("A", max_size=2)
    await _add(queue, "A", 1)
    flow = FlowJob(
        "parent",
        0,
        options={"group": "A"},  # waits for its children: not counted
        children=[FlowJob(f"c{i}", i, options={"group": "A"}) for i in range(2)],
    )
    with pytest.raises(GroupMaxSizeExceededError):
        await queue.add_flow(flow, now=T)
    assert await queue.get_job_counts("waiting", "waiting_children") == {
        "waiting": 1,
        "waiting_children": 0,
    }
    flow = FlowJob(
        "parent", 0, options={"group": "A"}, children=[FlowJob("c", 0, options={"group": "A"})]
    )
    node = await queue.add_flow(flow, now=T)
    assert [child.job.group for child in node.children] == ["A"]
    assert await queue.get_group_counts("A", "waiting", "waiting_children") == {
        "waiting": 2,
        "waiting_children": 1,
    }


async def test_a_bulk_add_within_max_size_counts_its_own_jobs(queue: JobQueue) -> None:
    await queue.set_group_defaults(max_size=3)
    with pytest.raises(GroupMaxSizeExceededError):
        await queue.add_bulk([(f"j{i}", i, {"group": "A"}) for i in range(4)], now=T)
    assert await queue.count_groups() == 0
    added = await queue.add_bulk([(f"j{i}", i, {"group": "A"}) for i in range(3)], now=T)
    assert len(added) == 3


async def test_zero_limits_are_refused(queue: JobQueue) -> None:
    with pytest.raises(ConfigError):
        await queue.set_group_limits("A", rate=(0, 1.0))
    with pytest.raises(ConfigError):
        await queue.set_group_defaults(rate=(1, 0.0))
    with pytest.raises(ConfigError):
        await queue.set_group_limits("A", concurrency=0)
    with pytest.raises(ConfigError):
        await queue.set_group_defaults(max_size=0)
    for bad in ((5, -1.0), (5,), (True, 1.0), (2, float("inf")), [2, 1.0]):
        with pytest.raises(ConfigError, match=r"invalid rate: .*\(must be \(max, seconds\)"):
            await queue.set_group_limits("A", rate=bad)  # type: ignore[arg-type]
    assert await queue.get_group_limits("A") == GroupLimits()
    assert await queue.get_group_defaults() == GroupLimits()


# ------------------------------------------------------------------ pause and resume


async def test_a_paused_group_does_not_block_the_others(queue: JobQueue) -> None:
    await queue.pause_group("A")
    assert await queue.is_group_paused("A")
    assert not await queue.is_group_paused("B")
    await _add(queue, "A", 3)
    await _add(queue, "B", 1)
    await _add(queue, None, 1)
    assert sorted(_names(await queue.claim("w", max_jobs=5, now=T))) == ["B-0", "None-0"]
    assert await queue.claim("w", now=T) == []
    await queue.resume_group("A")
    assert not await queue.is_group_paused("A")
    assert _names(await queue.claim("w", max_jobs=5, now=T)) == ["A-0", "A-1", "A-2"]


async def test_resume_wakes_a_waiting_worker(queue: JobQueue) -> None:
    await queue.pause_group("A")
    await _add(queue, "A", 1)
    assert not await queue.wait_for_job(timeout=0.05)
    waiter = asyncio.create_task(queue.wait_for_job(timeout=LIMIT))
    await asyncio.sleep(0.05)
    await queue.resume_group("A")
    assert await asyncio.wait_for(waiter, LIMIT)


async def test_run_until_idle_returns_with_only_held_groups_left(queue: JobQueue) -> None:
    await queue.pause_group("A")
    await queue.set_group_limits("B", rate=(1, 3600.0))
    await _add(queue, "A", 2)
    await _add(queue, "B", 2)
    await _add(queue, None, 2)
    seen: list[str] = []

    async def process(job: Job) -> None:
        seen.append(job.name)

    worker = JobWorker(queue, process)
    processed = await asyncio.wait_for(worker.run_until_idle(), LIMIT)
    assert processed == 3
    assert sorted(seen) == ["B-0", "None-0", "None-1"]
    assert await queue.get_job_counts("waiting") == {"waiting": 3}


# -------------------------------------------------------------------- management


async def test_group_counts_list_and_count(queue: JobQueue) -> None:
    await _add(queue, "b", 2)
    await _add(queue, "a", 1)
    await queue.add("later", 0, group="a", delay=5.0, now=T)
    await queue.pause_group("paused-empty")
    await queue.set_group_limits("limited", concurrency=3)
    claimed = await queue.claim("w", now=T)
    assert _names(claimed) == ["b-0"]

    assert await queue.get_group_counts("a", "delayed", "waiting", "delayed") == {
        "delayed": 1,
        "waiting": 1,
    }
    counts = await queue.get_group_counts("b")
    assert counts["waiting"] == 1 and counts["active"] == 1 and sum(counts.values()) == 2
    assert await queue.get_group_counts("nothing", "waiting") == {"waiting": 0}

    assert await queue.count_groups() == 4
    groups = await queue.list_groups()
    assert [g.name for g in groups] == ["a", "b", "limited", "paused-empty"]
    assert [g.paused for g in groups] == [False, False, False, True]
    assert groups[0].counts["delayed"] == 1 and groups[1].counts["active"] == 1
    page = await queue.list_groups(1, 2)
    assert [g.name for g in page] == ["b", "limited"]
    assert await queue.list_groups(10, 5) == []


async def test_remove_group_removes_its_waiting_and_delayed_jobs(queue: JobQueue) -> None:
    await queue.set_group_limits("A", concurrency=5)
    await _add(queue, "A", 3)
    await queue.add("later", 0, group="A", delay=5.0, now=T)
    await _add(queue, "B", 1)
    active = await queue.claim("w", now=T)
    assert _names(active) == ["A-0"]
    assert await queue.remove_group("A") == 3
    assert await queue.get_group_counts("A", "waiting", "delayed", "active") == {
        "waiting": 0,
        "delayed": 0,
        "active": 1,
    }
    removed = [e for e in await queue.read_events() if e.event == "removed"]
    assert len(removed) == 3
    # Its settings stay; the other group is untouched.
    assert await queue.get_group_limits("A") == GroupLimits(concurrency=5)
    assert _names(await queue.claim("w", now=T)) == ["B-0"]
    assert await queue.remove_group("A") == 0


async def test_drain_empties_the_groups_and_keeps_their_settings(queue: JobQueue) -> None:
    await queue.pause_group("A")
    await _add(queue, "A", 2)
    await _add(queue, "B", 2)
    await queue.drain()
    assert await queue.get_job_counts("waiting") == {"waiting": 0}
    assert await queue.is_group_paused("A")
    await _add(queue, "B", 1)
    assert _names(await queue.claim("w", max_jobs=3, now=T)) == ["B-0"]


# --------------------------------------------------------------------- bad input


@pytest.mark.parametrize("bad", ["", "x" * 257, "a\nb", "tab\there", 42])
async def test_bad_group_names_are_refused_naming_the_value(queue: JobQueue, bad: object) -> None:
    with pytest.raises(ConfigError, match="group"):
        await queue.add("j", 0, group=bad, now=T)  # type: ignore[arg-type]
    with pytest.raises(ConfigError):
        await queue.add_bulk([("j", 0, {"group": bad})], now=T)
    with pytest.raises(ConfigError):
        await queue.pause_group(bad)  # type: ignore[arg-type]
    with pytest.raises(ConfigError):
        await queue.set_group_limits(bad, concurrency=1)  # type: ignore[arg-type]
    assert await queue.get_job_counts("waiting") == {"waiting": 0}
    assert await queue.count_groups() == 0


async def test_waiting_lists_the_ungrouped_jobs_first_then_the_grouped(queue: JobQueue) -> None:
    # (Claims take turns; a listing has one order on every backend: the ungrouped jobs, then
    # the grouped ones, each by priority then position.)
    await queue.add("g1", None, group="A")
    await queue.add("u1", None)
    await queue.add("g2", None, group="B", priority=1)
    await queue.add("u2", None, priority=2)
    listed = [job.name for job in await queue.list_jobs("waiting")]
    assert listed == ["u1", "u2", "g1", "g2"]
    newest_first = await queue.list_jobs("waiting", ascending=False)
    assert [job.name for job in newest_first] == ["g2", "g1", "u2", "u1"]
