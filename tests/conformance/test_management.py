"""Reading and managing a queue's jobs: lookups, counts (scenario 28), listings, results
(scenario 30), edits, logs (scenario 29), removal, pause (scenario 22), drain, clean,
obliterate (scenario 25), the rate limit and the global concurrency limit."""

from __future__ import annotations

import json

import pytest
from lanemq import ConfigError, Job, JobNotFoundError, JobQueue, JobStateError
from support import EPOCH_MS as T

from .helpers import claim_one, lock_token


async def _complete(queue: JobQueue, result: object = None, now: int = T) -> Job:
    """Claims the next job and completes it at ``now``."""
    job = await claim_one(queue, now)
    await queue.complete(job.id, lock_token(job), result, now=now)
    return job


async def _fail(queue: JobQueue, reason: str = "boom", now: int = T) -> Job:
    """Claims the next job and fails it for good at ``now``."""
    job = await claim_one(queue, now)
    retried = await queue.fail(job.id, lock_token(job), reason, retry=False, now=now)
    assert retried is False
    return job


def _ids(jobs: list[Job]) -> list[str]:
    return [job.id for job in jobs]


# ------------------------------------------------------------------ lookups


async def test_get_job_and_state(queue: JobQueue) -> None:
    added = await queue.add("send", {"to": "ops"}, now=T)
    job = await queue.get_job(added.id)
    assert job is not None
    assert (job.id, job.name, job.data, job.state) == (added.id, "send", {"to": "ops"}, "waiting")
    assert job.created_at == T
    assert await queue.get_state(added.id) == "waiting"

    await claim_one(queue, T)
    assert await queue.get_state(added.id) == "active"
    active = await queue.get_job(added.id)
    assert active is not None and active.state == "active" and active.attempts_started == 1


async def test_get_job_and_state_of_a_missing_job(queue: JobQueue) -> None:
    assert await queue.get_job("nope") is None
    assert await queue.get_state("nope") == "unknown"


# ------------------------------------------------------------------- counts


async def _populate(queue: JobQueue) -> None:
    """waiting 4, delayed 3, active 2, completed 1, failed 1."""
    for i in range(8):
        await queue.add("w", i, now=T)
    for i in range(3):
        await queue.add("d", i, delay=60.0, now=T)
    claimed = await queue.claim("w1", lease=30.0, max_jobs=4, now=T)
    assert len(claimed) == 4
    await queue.complete(claimed[0].id, lock_token(claimed[0]), "ok", now=T)
    await queue.fail(claimed[1].id, lock_token(claimed[1]), "bad", retry=False, now=T)


async def test_counts_of_asked_states_in_first_seen_order(queue: JobQueue) -> None:
    await _populate(queue)
    counts = await queue.get_job_counts("waiting", "delayed", "waiting", "active")
    assert list(counts.items()) == [("waiting", 4), ("delayed", 3), ("active", 2)]

    counts = await queue.get_job_counts("failed", "waiting")
    assert list(counts.items()) == [("failed", 1), ("waiting", 4)]


async def test_counts_without_states_gives_all_six(queue: JobQueue) -> None:
    await _populate(queue)
    counts = await queue.get_job_counts()
    assert list(counts.items()) == [
        ("waiting", 4),
        ("delayed", 3),
        ("active", 2),
        ("waiting_children", 0),
        ("completed", 1),
        ("failed", 1),
    ]


async def test_count_pending_is_waiting_plus_delayed_plus_waiting_children(
    queue: JobQueue,
) -> None:
    assert await queue.count_pending() == 0
    await _populate(queue)
    counts = await queue.get_job_counts()
    assert await queue.count_pending() == (
        counts["waiting"] + counts["delayed"] + counts["waiting_children"]
    )
    assert await queue.count_pending() == 7


async def test_counts_refuse_an_unknown_state(queue: JobQueue) -> None:
    with pytest.raises(ConfigError):
        await queue.get_job_counts("waiting", "sleeping")


# ----------------------------------------------------------------- listings


async def test_list_waiting_with_indexes_and_direction(queue: JobQueue) -> None:
    ids = [(await queue.add("w", i, now=T)).id for i in range(5)]

    assert _ids(await queue.list_jobs("waiting")) == ids
    assert _ids(await queue.list_jobs(["waiting"], start=1, end=2)) == ids[1:3]
    assert _ids(await queue.list_jobs("waiting", start=-2)) == ids[-2:]
    assert _ids(await queue.list_jobs("waiting", end=-2)) == ids[:-1]
    assert _ids(await queue.list_jobs("waiting", start=-3, end=-2)) == ids[2:4]
    assert _ids(await queue.list_jobs("waiting", start=3, end=1)) == []
    assert _ids(await queue.list_jobs("waiting", start=10)) == []
    assert _ids(await queue.list_jobs("waiting", ascending=False)) == ids[::-1]
    assert _ids(await queue.list_jobs("waiting", start=0, end=1, ascending=False)) == [
        ids[4],
        ids[3],
    ]
    assert all(job.state == "waiting" for job in await queue.list_jobs("waiting"))


async def test_list_delayed_by_due_time_and_finished_by_finish_time(queue: JobQueue) -> None:
    late = await queue.add("d", delay=30.0, now=T)
    early = await queue.add("d", delay=10.0, now=T)
    middle = await queue.add("d", delay=20.0, now=T)
    assert _ids(await queue.list_jobs("delayed")) == [early.id, middle.id, late.id]
    assert _ids(await queue.list_jobs("delayed", ascending=False)) == [
        late.id,
        middle.id,
        early.id,
    ]

    a = await queue.add("c", now=T)
    b = await queue.add("c", now=T)
    first = await claim_one(queue, T)
    second = await claim_one(queue, T)
    assert (first.id, second.id) == (a.id, b.id)
    # b finishes before a: finished jobs are listed by finish time.
    await queue.complete(b.id, lock_token(second), now=T + 100)
    await queue.complete(a.id, lock_token(first), now=T + 200)
    assert _ids(await queue.list_jobs("completed")) == [b.id, a.id]
    assert _ids(await queue.list_jobs("completed", ascending=False)) == [a.id, b.id]
    assert _ids(await queue.list_jobs("completed", start=-1)) == [a.id]


async def test_active_jobs_are_counted_listed_and_cleaned_alone(queue: JobQueue) -> None:
    """The active set is ordered by lock expiry; counts, listings (both ways) and clean see
    its jobs and nothing else (Redis keeps a sentinel member in it)."""
    jobs = [await queue.add("a", i, now=T) for i in range(3)]
    held = [await claim_one(queue, T + i * 1_000, lease=1.0) for i in range(3)]
    ids = [job.id for job in jobs]
    assert [job.id for job in held] == ids
    assert await queue.get_job_counts("active") == {"active": 3}
    assert _ids(await queue.list_jobs("active")) == ids
    assert _ids(await queue.list_jobs("active", ascending=False)) == ids[::-1]
    assert _ids(await queue.list_jobs("active", start=0, end=0, ascending=False)) == [ids[2]]
    assert _ids(await queue.list_jobs("active", start=1, ascending=False)) == ids[1::-1]
    assert _ids(await queue.list_jobs("active", start=-1)) == [ids[2]]
    assert [job.state for job in await queue.list_jobs()] == ["active"] * 3
    # At T+2.5s the first two leases (to T+1s and T+2s) have run out: only those go.
    assert sorted(await queue.clean(0, state="active", now=T + 2_500)) == sorted(ids[:2])
    assert _ids(await queue.list_jobs("active", ascending=False)) == [ids[2]]
    assert await queue.get_job_counts("active") == {"active": 1}
    await queue.complete(ids[2], lock_token(held[2]), now=T + 2_600)
    assert await queue.get_job_counts("active") == {"active": 0}
    assert await queue.list_jobs("active", ascending=False) == []
    assert await queue.clean(0, state="active", now=T + 60_000) == []


async def test_list_several_states(queue: JobQueue) -> None:
    waiting = await queue.add("w", now=T)
    delayed = await queue.add("d", delay=5.0, now=T)
    listed = await queue.list_jobs(["waiting", "delayed"])
    assert _ids(listed) == [waiting.id, delayed.id]
    assert [job.state for job in listed] == ["waiting", "delayed"]
    assert _ids(await queue.list_jobs("active")) == []
    assert sorted(_ids(await queue.list_jobs())) == sorted([waiting.id, delayed.id])


# ----------------------------------------------------------- finished_result


async def test_finished_result_not_finished(queue: JobQueue) -> None:
    job = await queue.add("w", now=T)
    result = await queue.finished_result(job.id)
    assert (result.status, result.state) == ("pending", "waiting")
    assert result.value is None and result.reason is None

    await claim_one(queue, T)
    result = await queue.finished_result(job.id)
    assert (result.status, result.state) == ("pending", "active")

    delayed = await queue.add("d", delay=5.0, now=T)
    result = await queue.finished_result(delayed.id)
    assert (result.status, result.state) == ("pending", "delayed")


async def test_finished_result_completed_with_value(queue: JobQueue) -> None:
    job = await queue.add("w", now=T)
    await _complete(queue, {"sum": 3, "items": [1, 2]})
    result = await queue.finished_result(job.id)
    assert result.status == "completed"
    assert result.value == {"sum": 3, "items": [1, 2]}
    assert result.reason is None


async def test_finished_result_failed_with_reason(queue: JobQueue) -> None:
    job = await queue.add("w", now=T)
    await _fail(queue, "disk full")
    result = await queue.finished_result(job.id)
    assert result.status == "failed"
    assert result.reason == "disk full"
    assert result.value is None


async def test_finished_result_missing(queue: JobQueue) -> None:
    result = await queue.finished_result("nope")
    assert result.status == "missing"
    assert result.value is None and result.reason is None and result.state is None


# ------------------------------------------------------------------- edits


async def test_update_data(queue: JobQueue) -> None:
    job = await queue.add("w", {"v": 1}, now=T)
    await queue.update_data(job.id, {"v": 2, "extra": [True, None]})
    stored = await queue.get_job(job.id)
    assert stored is not None and stored.data == {"v": 2, "extra": [True, None]}
    with pytest.raises(JobNotFoundError):
        await queue.update_data("nope", 1)
    with pytest.raises(TypeError):
        await queue.update_data(job.id, object())
    stored = await queue.get_job(job.id)
    assert stored is not None and stored.data == {"v": 2, "extra": [True, None]}


async def test_update_progress_is_stored_and_emitted(queue: JobQueue) -> None:
    job = await queue.add("w", now=T)
    await claim_one(queue, T)
    await queue.update_progress(job.id, 42, now=T + 5)
    stored = await queue.get_job(job.id)
    assert stored is not None and stored.progress == 42

    await queue.update_progress(job.id, {"pct": 50, "step": "copy"}, now=T + 6)
    stored = await queue.get_job(job.id)
    assert stored is not None and stored.progress == {"pct": 50, "step": "copy"}

    progress = [e for e in await queue.read_events() if e.event == "progress"]
    assert [e.job_id for e in progress] == [job.id, job.id]
    assert [json.loads(e.fields["data"]) for e in progress] == [42, {"pct": 50, "step": "copy"}]
    assert [e.timestamp for e in progress] == [T + 5, T + 6]

    with pytest.raises(JobNotFoundError):
        await queue.update_progress("nope", 1)


async def test_save_stacktrace(queue: JobQueue) -> None:
    job = await queue.add("w", now=T)
    await queue.save_stacktrace(job.id, ["frame 1", "frame 2"], reason="exploded")
    stored = await queue.get_job(job.id)
    assert stored is not None
    assert stored.stacktrace == ["frame 1", "frame 2"]
    assert stored.failed_reason == "exploded"

    await queue.save_stacktrace(job.id, ["only"])
    stored = await queue.get_job(job.id)
    assert stored is not None
    assert stored.stacktrace == ["only"]
    assert stored.failed_reason == "exploded"
    with pytest.raises(JobNotFoundError):
        await queue.save_stacktrace("nope", ["x"])


# -------------------------------------------------------------------- logs


async def test_logs_kept_with_keep_hold_the_newest(queue: JobQueue) -> None:
    job = await queue.add("w", now=T)
    counts = [await queue.add_log(job.id, line, keep=2) for line in ("one", "two", "three")]
    assert counts == [1, 2, 2]
    assert await queue.get_logs(job.id) == (["two", "three"], 2)


async def test_get_logs_pages_and_total(queue: JobQueue) -> None:
    job = await queue.add("w", now=T)
    lines = [f"line {i}" for i in range(5)]
    for i, line in enumerate(lines):
        assert await queue.add_log(job.id, line) == i + 1

    assert await queue.get_logs(job.id) == (lines, 5)
    assert await queue.get_logs(job.id, 1, 2) == (lines[1:3], 5)
    assert await queue.get_logs(job.id, start=-2) == (lines[-2:], 5)
    assert await queue.get_logs(job.id, start=0, end=-3) == (lines[:3], 5)
    assert await queue.get_logs(job.id, start=3, end=100) == (lines[3:], 5)
    assert await queue.get_logs(job.id, start=7) == ([], 5)
    assert await queue.get_logs(job.id, ascending=False) == (lines[::-1], 5)
    assert await queue.get_logs(job.id, 0, 1, ascending=False) == ([lines[4], lines[3]], 5)

    empty = await queue.add("w", now=T)
    assert await queue.get_logs(empty.id) == ([], 0)
    with pytest.raises(JobNotFoundError):
        await queue.get_logs("nope")
    with pytest.raises(JobNotFoundError):
        await queue.add_log("nope", "x")


async def test_clear_logs_with_keep(queue: JobQueue) -> None:
    job = await queue.add("w", now=T)
    for line in ("a", "b", "c", "d"):
        await queue.add_log(job.id, line)
    await queue.clear_logs(job.id, keep=2)
    assert await queue.get_logs(job.id) == (["c", "d"], 2)
    await queue.clear_logs(job.id, keep=5)
    assert await queue.get_logs(job.id) == (["c", "d"], 2)
    await queue.clear_logs(job.id)
    assert await queue.get_logs(job.id) == ([], 0)
    assert await queue.add_log(job.id, "e") == 1
    with pytest.raises(ConfigError):
        await queue.clear_logs(job.id, keep=-1)
    with pytest.raises(ConfigError):
        await queue.add_log(job.id, "f", keep=-1)
    assert await queue.get_logs(job.id) == (["e"], 1)


# ------------------------------------------------------------------ remove


async def test_remove_a_waiting_job(queue: JobQueue) -> None:
    job = await queue.add("w", now=T)
    other = await queue.add("w", now=T)
    await queue.remove(job.id, now=T + 1)
    assert await queue.get_job(job.id) is None
    assert await queue.get_state(job.id) == "unknown"
    assert (await queue.finished_result(job.id)).status == "missing"
    assert await queue.get_job_counts("waiting") == {"waiting": 1}
    [claimed] = await queue.claim("w1", now=T + 2)
    assert claimed.id == other.id

    [removed] = [e for e in await queue.read_events() if e.event == "removed"]
    assert removed.job_id == job.id
    assert removed.fields.get("prev") == "waiting"

    with pytest.raises(JobNotFoundError):
        await queue.remove(job.id, now=T + 3)


async def test_remove_a_finished_job_names_its_previous_state(queue: JobQueue) -> None:
    job = await queue.add("w", now=T)
    await _complete(queue, 1)
    await queue.remove(job.id, now=T + 1)
    assert await queue.get_job(job.id) is None
    assert await queue.get_job_counts("completed") == {"completed": 0}
    [removed] = [e for e in await queue.read_events() if e.event == "removed"]
    assert (removed.job_id, removed.fields.get("prev")) == (job.id, "completed")


async def test_remove_refused_while_a_lease_is_live_allowed_after_expiry(
    queue: JobQueue,
) -> None:
    job = await queue.add("w", now=T)
    await claim_one(queue, T, lease=30.0)

    with pytest.raises(JobStateError):
        await queue.remove(job.id, now=T + 1_000)
    assert await queue.get_state(job.id) == "active"
    assert not [e for e in await queue.read_events() if e.event == "removed"]

    await queue.remove(job.id, now=T + 30_000)
    assert await queue.get_job(job.id) is None
    assert await queue.get_job_counts("active") == {"active": 0}
    [removed] = [e for e in await queue.read_events() if e.event == "removed"]
    assert (removed.job_id, removed.fields.get("prev")) == (job.id, "active")


# ------------------------------------------------------------------- pause


async def test_paused_queue_accepts_adds_hands_out_nothing(queue: JobQueue) -> None:
    assert await queue.is_paused() is False
    await queue.pause(now=T)
    assert await queue.is_paused() is True

    job = await queue.add("w", {"n": 1}, now=T + 1)
    assert await queue.get_state(job.id) == "waiting"
    assert await queue.claim("w1", now=T + 2) == []
    assert await queue.claim("w1", max_jobs=5, now=T + 3) == []
    assert await queue.get_state(job.id) == "waiting"

    await queue.resume(now=T + 4)
    assert await queue.is_paused() is False
    [claimed] = await queue.claim("w1", now=T + 5)
    assert claimed.id == job.id and claimed.state == "active"

    events = [(e.event, e.job_id, e.timestamp) for e in await queue.read_events()]
    assert ("paused", None, T) in events
    assert ("resumed", None, T + 4) in events
    names = [name for name, _, _ in events]
    assert names.index("paused") < names.index("resumed")


async def test_paused_queue_holds_back_due_delayed_jobs(queue: JobQueue) -> None:
    job = await queue.add("d", delay=1.0, now=T)
    await queue.pause(now=T)
    assert await queue.claim("w1", now=T + 5_000) == []
    await queue.resume(now=T + 5_000)
    [claimed] = await queue.claim("w1", now=T + 5_001)
    assert claimed.id == job.id


# ------------------------------------------------------------- drain, clean


async def test_drain_removes_waiting_keeps_delayed(queue: JobQueue) -> None:
    waiting = [await queue.add("w", i, now=T) for i in range(3)]
    delayed = await queue.add("d", delay=60.0, now=T)
    [claimed] = await queue.claim("w1", now=T)  # the first waiting job
    assert claimed.id == waiting[0].id
    extra = await queue.add("w", 3, now=T)

    assert await queue.drain(now=T + 1) == 3  # waiting[1], waiting[2], extra
    assert await queue.get_job_counts("waiting", "delayed", "active") == {
        "waiting": 0,
        "delayed": 1,
        "active": 1,
    }
    assert await queue.get_job(waiting[1].id) is None
    assert await queue.get_job(extra.id) is None
    assert await queue.get_state(delayed.id) == "delayed"
    assert await queue.get_state(claimed.id) == "active"

    assert await queue.drain(delayed=True, now=T + 2) == 1
    assert await queue.get_job(delayed.id) is None
    assert await queue.count_pending() == 0
    assert await queue.get_state(claimed.id) == "active"
    assert await queue.drain(now=T + 3) == 0


async def test_clean_completed_by_grace_and_limit(queue: JobQueue) -> None:
    jobs = [await queue.add("c", i, now=T) for i in range(4)]
    for i in range(4):
        await _complete(queue, i, now=T + i * 1_000)  # finished at T, T+1s, T+2s, T+3s

    # Older than 1.5 s at T+3s: finished at or before T+1.5s.
    cleaned = await queue.clean(1.5, now=T + 3_000)
    assert sorted(cleaned) == sorted([jobs[0].id, jobs[1].id])
    assert await queue.get_job(jobs[0].id) is None
    assert _ids(await queue.list_jobs("completed")) == [jobs[2].id, jobs[3].id]

    # limit: at most one per call, oldest first.
    assert await queue.clean(0, limit=1, now=T + 10_000) == [jobs[2].id]
    assert _ids(await queue.list_jobs("completed")) == [jobs[3].id]
    assert await queue.clean(60.0, now=T + 10_000) == []
    assert _ids(await queue.list_jobs("completed")) == [jobs[3].id]


async def test_clean_failed_leaves_completed(queue: JobQueue) -> None:
    done = await queue.add("c", now=T)
    await _complete(queue, now=T)
    bad = await queue.add("f", now=T)
    await _fail(queue, "x", now=T)
    bad_late = await queue.add("f", now=T)
    await _fail(queue, "y", now=T + 5_000)

    cleaned = await queue.clean(2.0, state="failed", now=T + 6_000)
    assert cleaned == [bad.id]
    assert await queue.get_job(bad.id) is None
    assert await queue.get_state(bad_late.id) == "failed"
    assert await queue.get_state(done.id) == "completed"

    with pytest.raises(ConfigError):
        await queue.clean(0, state="finished", now=T)
    with pytest.raises(ConfigError):
        await queue.clean(0, limit=-1, now=T)
    with pytest.raises(ConfigError):
        await queue.clean(-1.0, now=T)
    assert await queue.get_state(bad_late.id) == "failed"


# --------------------------------------------------------------- obliterate


async def test_obliterate_with_an_active_job_is_refused_and_leaves_paused(
    queue: JobQueue,
) -> None:
    active = await queue.add("a", now=T)
    await claim_one(queue, T)
    waiting = await queue.add("w", now=T)

    with pytest.raises(JobStateError):
        await queue.obliterate(now=T + 1)
    assert await queue.is_paused() is True
    assert await queue.get_state(active.id) == "active"
    assert await queue.get_state(waiting.id) == "waiting"
    assert await queue.claim("w2", now=T + 2) == []


async def test_obliterate_force_empties_everything(queue: JobQueue) -> None:
    active = await queue.add("a", now=T)
    await claim_one(queue, T)
    done = await queue.add("c", now=T)
    await _complete(queue, now=T)
    delayed = await queue.add("d", delay=60.0, now=T)
    waiting = await queue.add("w", now=T)
    await queue.set_rate_limit(5, 1.0)
    await queue.set_max_active(3)
    await queue.pause(now=T)

    await queue.obliterate(force=True, now=T + 1)

    counts = await queue.get_job_counts()
    assert set(counts) == {
        "waiting",
        "delayed",
        "active",
        "waiting_children",
        "completed",
        "failed",
    }
    assert all(n == 0 for n in counts.values()), counts
    for job in (active, done, delayed, waiting):
        assert await queue.get_job(job.id) is None
    assert await queue.is_paused() is False
    assert await queue.read_events() == []
    assert await queue.get_rate_limit() is None
    assert await queue.get_max_active() is None

    # The queue works afterwards.
    fresh = await queue.add("w", now=T + 2)
    [claimed] = await queue.claim("w1", now=T + 3)
    assert claimed.id == fresh.id


async def test_obliterate_restarts_automatic_ids_and_event_ids(queue: JobQueue) -> None:
    # BullMQ deletes every key of the queue, counters included; every backend does the same.
    for i in range(3):
        await queue.add("w", i, now=T)
    assert (await queue.read_events())[-1].id > 1
    await queue.obliterate(force=True, now=T + 1)
    fresh = await queue.add("w", now=T + 2)
    assert fresh.id == "1"
    events = await queue.read_events()
    assert [e.id for e in events] == list(range(1, len(events) + 1))
    assert (events[0].event, events[0].job_id) == ("added", "1")


async def test_obliterate_without_active_jobs(queue: JobQueue) -> None:
    job = await queue.add("w", now=T)
    await queue.obliterate(now=T + 1)
    assert await queue.get_job(job.id) is None
    assert await queue.is_paused() is False
    assert await queue.count_pending() == 0


# -------------------------------------------------------------- rate limit


async def test_rate_limit_caps_claims_per_window(queue: JobQueue) -> None:
    for i in range(6):
        await queue.add("w", i, now=T)
    await queue.set_rate_limit(2, 1.0)
    assert await queue.get_rate_limit() == (2, 1.0)

    assert len(await queue.claim("w1", now=T)) == 1
    assert len(await queue.claim("w2", now=T + 10)) == 1
    assert await queue.claim("w3", now=T + 20) == []
    assert await queue.claim("w3", max_jobs=5, now=T + 999) == []

    assert len(await queue.claim("w1", max_jobs=5, now=T + 1_000)) == 2
    assert await queue.claim("w1", now=T + 1_500) == []
    assert await queue.get_job_counts("active", "waiting") == {"active": 4, "waiting": 2}


async def test_rate_limit_tokens_are_not_spent_on_empty_claims(queue: JobQueue) -> None:
    await queue.set_rate_limit(2, 1.0)
    for offset in range(3):
        assert await queue.claim("w1", now=T + offset) == []
    for i in range(3):
        await queue.add("w", i, now=T + 10)
    assert len(await queue.claim("w1", max_jobs=5, now=T + 20)) == 2


async def test_clear_rate_limit(queue: JobQueue) -> None:
    for i in range(5):
        await queue.add("w", i, now=T)
    await queue.set_rate_limit(1, 60.0)
    assert len(await queue.claim("w1", max_jobs=5, now=T)) == 1
    assert await queue.claim("w1", now=T + 1) == []

    await queue.clear_rate_limit()
    assert await queue.get_rate_limit() is None
    assert len(await queue.claim("w1", max_jobs=5, now=T + 2)) == 4


async def test_rate_limit_invalid_values(queue: JobQueue) -> None:
    for max_jobs, duration in ((0, 1.0), (-1, 1.0), (2, 0.0), (2, -1.0)):
        with pytest.raises(ConfigError):
            await queue.set_rate_limit(max_jobs, duration)
    assert await queue.get_rate_limit() is None
    await queue.set_rate_limit(3, 2.5)
    with pytest.raises(ConfigError):
        await queue.set_rate_limit(0, 1.0)
    assert await queue.get_rate_limit() == (3, 2.5)


# -------------------------------------------------------------- max active


async def test_max_active_caps_concurrent_jobs(queue: JobQueue) -> None:
    for i in range(5):
        await queue.add("w", i, now=T)
    assert await queue.get_max_active() is None
    await queue.set_max_active(2)
    assert await queue.get_max_active() == 2
    assert await queue.is_maxed() is False

    first = await queue.claim("w1", max_jobs=5, now=T)
    assert len(first) == 2
    assert await queue.is_maxed() is True
    assert await queue.claim("w2", max_jobs=5, now=T + 1) == []

    await queue.complete(first[0].id, lock_token(first[0]), now=T + 2)
    assert await queue.is_maxed() is False
    more = await queue.claim("w2", max_jobs=5, now=T + 3)
    assert len(more) == 1
    assert await queue.is_maxed() is True
    assert await queue.get_job_counts("active", "waiting") == {"active": 2, "waiting": 2}

    await queue.set_max_active(None)
    assert await queue.get_max_active() is None
    assert await queue.is_maxed() is False
    assert len(await queue.claim("w3", max_jobs=5, now=T + 4)) == 2


async def test_max_active_invalid_values(queue: JobQueue) -> None:
    await queue.set_max_active(4)
    for bad in (0, -1):
        with pytest.raises(ConfigError):
            await queue.set_max_active(bad)
    assert await queue.get_max_active() == 4
