"""Job schedulers (BullMQ's upsertJobScheduler): occurrences of ``every`` and cron schedules,
the next one produced when the pending one is claimed, ``limit``, ``end``, ``start``,
``immediately``, time zones, upserts that keep or replace the pending occurrence, reads and
removal, drain and obliterate, stalls and retries, and validation that writes nothing."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from lanemq import ConfigError, Dedup, Job, JobOptions, JobQueue, JobScheduler, JobStateError
from support import EPOCH_MS as T

UTC = timezone.utc


def ms(at: datetime) -> int:
    return (at - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(milliseconds=1)


def rid(key: str, run: int) -> str:
    return f"repeat:{key}:{run}"


async def pending(queue: JobQueue, key: str) -> list[Job]:
    """The jobs of scheduler ``key`` that have not started (waiting or delayed)."""
    jobs = await queue.list_jobs(["waiting", "delayed"])
    return [j for j in jobs if j.scheduler_key == key]


async def pending_ids(queue: JobQueue, key: str) -> list[str]:
    return [j.id for j in await pending(queue, key)]


async def claim(queue: JobQueue, now: int, max_jobs: int = 10) -> list[str]:
    return [j.id for j in await queue.claim("w", lease=60.0, max_jobs=max_jobs, now=now)]


async def scheduler(queue: JobQueue, key: str) -> JobScheduler:
    found = await queue.get_scheduler(key)
    assert found is not None, f"scheduler {key!r} is gone"
    return found


async def last_event_id(queue: JobQueue) -> int:
    events = await queue.read_events()
    return events[-1].id if events else 0


async def events_since(queue: JobQueue, after: int) -> list[tuple[str, str | None, dict[str, str]]]:
    return [(e.event, e.job_id, e.fields) for e in await queue.read_events(start=after + 1)]


# ------------------------------------------------------------------------------ every


async def test_every_produces_its_first_occurrence_at_once(queue: JobQueue) -> None:
    job = await queue.upsert_scheduler(
        "tick", every=1.0, template=("tick", {"n": 1}, {"priority": 3, "attempts": 2}), now=T
    )
    assert (job.id, job.state, job.name, job.data) == (rid("tick", T), "waiting", "tick", {"n": 1})
    assert job.scheduler_key == job.options.scheduler == "tick"
    assert (job.priority, job.options.attempts, job.options.job_id) == (3, 2, rid("tick", T))
    got = await scheduler(queue, "tick")
    assert got == JobScheduler(
        key="tick",
        name="tick",
        data={"n": 1},
        options=got.options,
        every=1.0,
        cron=None,
        tz=None,
        limit=None,
        start=None,
        end=None,
        immediately=False,
        iteration_count=1,
        next_run=T,
        job_id=rid("tick", T),
    )
    assert (got.options.priority, got.options.attempts, got.options.job_id) == (3, 2, None)
    assert got.options.scheduler is None


async def test_the_next_occurrence_is_produced_by_the_claim_not_the_completion(
    queue: JobQueue,
) -> None:
    await queue.upsert_scheduler("tick", every=1.0, template=("tick", None), now=T)
    assert await pending_ids(queue, "tick") == [rid("tick", T)]

    # The claim produces the next one (delayed), and does not claim it even with room left.
    assert await claim(queue, T + 5) == [rid("tick", T)]
    [next_one] = await pending(queue, "tick")
    assert (next_one.id, next_one.state, next_one.delay_until) == (
        rid("tick", T + 1000),
        "delayed",
        T + 1000,
    )
    got = await scheduler(queue, "tick")
    assert (got.iteration_count, got.next_run, got.job_id) == (2, T + 1000, rid("tick", T + 1000))

    # A slow job: completing it late produces nothing and shifts nothing.
    [active] = await queue.list_jobs("active")
    assert active.lock_token is not None
    await queue.complete(active.id, active.lock_token, "ok", now=T + 4000)
    assert await pending_ids(queue, "tick") == [rid("tick", T + 1000)]
    assert (await scheduler(queue, "tick")).iteration_count == 2

    assert await claim(queue, T + 1000) == [rid("tick", T + 1000)]
    assert await pending_ids(queue, "tick") == [rid("tick", T + 2000)]


async def test_missed_runs_are_skipped_not_replayed(queue: JobQueue) -> None:
    await queue.upsert_scheduler("tick", every=1.0, template=("tick", None), now=T)
    await claim(queue, T)
    # The occurrence due at T + 1000 starts late, at T + 5500: the next is the first slot of
    # the grid at or after then.
    assert await claim(queue, T + 5500) == [rid("tick", T + 1000)]
    [next_one] = await pending(queue, "tick")
    assert (next_one.id, next_one.delay_until) == (rid("tick", T + 6000), T + 6000)


async def test_limit_gives_exactly_that_many_runs(queue: JobQueue) -> None:
    await queue.upsert_scheduler("three", every=1.0, limit=3, template=("x", None), now=T)
    runs: list[str] = []
    for at in (T, T + 1000, T + 2000):
        runs += await claim(queue, at)
    assert runs == [rid("three", T), rid("three", T + 1000), rid("three", T + 2000)]
    # The third claim had nothing to produce: the scheduler is gone, its runs carry on.
    assert await queue.get_scheduler("three") is None
    assert await queue.count_schedulers() == 0
    assert await pending_ids(queue, "three") == []
    assert await claim(queue, T + 10_000) == []
    assert await queue.get_job_counts("active") == {"active": 3}


async def test_end_stops_the_runs(queue: JobQueue) -> None:
    end = datetime.fromtimestamp((T + 2500) / 1000, tz=UTC)
    await queue.upsert_scheduler("until", every=1.0, end=end, template=("x", None), now=T)
    assert (await scheduler(queue, "until")).end == T + 2500
    runs: list[str] = []
    for at in (T, T + 1000, T + 2000):
        runs += await claim(queue, at)
    assert runs == [rid("until", T), rid("until", T + 1000), rid("until", T + 2000)]
    assert await queue.get_scheduler("until") is None
    assert await pending_ids(queue, "until") == []


async def test_start_in_the_future_delays_the_first_run(queue: JobQueue) -> None:
    job = await queue.upsert_scheduler(
        "later", every=1.0, start=T + 60_000, template=("x", None), now=T
    )
    assert (job.id, job.state, job.delay_until) == (rid("later", T + 60_000), "delayed", T + 60_000)
    assert await claim(queue, T + 59_999) == []
    assert await claim(queue, T + 60_000) == [rid("later", T + 60_000)]
    assert await pending_ids(queue, "later") == [rid("later", T + 61_000)]
    got = await scheduler(queue, "later")
    assert (got.start, got.iteration_count) == (T + 60_000, 2)


async def test_start_and_end_take_aware_datetimes_or_milliseconds(queue: JobQueue) -> None:
    start = datetime(2023, 11, 15, 1, 0, tzinfo=timezone(timedelta(hours=2)))
    await queue.upsert_scheduler("dt", every=60.0, start=start, template=("x", None), now=T)
    assert (await scheduler(queue, "dt")).start == ms(start) == ms(start.astimezone(UTC))
    await queue.upsert_scheduler("int", every=60.0, start=ms(start), template=("x", None), now=T)
    assert (await scheduler(queue, "int")).next_run == ms(start)


# ------------------------------------------------------------------------------- cron


async def test_weekday_cron_in_a_time_zone(queue: JobQueue) -> None:
    friday = ms(datetime(2024, 1, 5, 10, 0, tzinfo=UTC))  # 11:00 in Berlin, after the run
    monday_9_berlin = ms(datetime(2024, 1, 8, 8, 0, tzinfo=UTC))
    tuesday_9_berlin = ms(datetime(2024, 1, 9, 8, 0, tzinfo=UTC))
    job = await queue.upsert_scheduler(
        "weekdays",
        cron="0 9 * * 1-5",
        tz="Europe/Berlin",
        template=("report", {"kind": "daily"}),
        now=friday,
    )
    assert (job.id, job.state, job.delay_until) == (
        rid("weekdays", monday_9_berlin),
        "delayed",
        monday_9_berlin,
    )
    got = await scheduler(queue, "weekdays")
    assert (got.cron, got.tz, got.every, got.next_run) == (
        "0 9 * * 1-5",
        "Europe/Berlin",
        None,
        monday_9_berlin,
    )
    assert await claim(queue, monday_9_berlin - 1) == []
    assert await claim(queue, monday_9_berlin) == [rid("weekdays", monday_9_berlin)]
    assert await pending_ids(queue, "weekdays") == [rid("weekdays", tuesday_9_berlin)]


async def test_immediately_runs_a_cron_schedule_once_at_once(queue: JobQueue) -> None:
    job = await queue.upsert_scheduler(
        "nine", cron="0 9 * * *", immediately=True, template=("x", None), now=T
    )
    assert (job.id, job.state) == (rid("nine", T), "waiting")
    assert (await scheduler(queue, "nine")).immediately is True
    assert await claim(queue, T) == [rid("nine", T)]
    next_nine = ms(datetime(2023, 11, 15, 9, 0, tzinfo=UTC))
    assert await pending_ids(queue, "nine") == [rid("nine", next_nine)]


async def test_seven_field_cron_names_its_years_and_ends_after_the_last(queue: JobQueue) -> None:
    # The seed's form: second minute hour day-of-month month day-of-week year.
    first = ms(datetime(2023, 12, 31, 9, 0, 30, tzinfo=UTC))
    last = ms(datetime(2025, 12, 31, 9, 0, 30, tzinfo=UTC))
    job = await queue.upsert_scheduler(
        "eve", cron="30 0 9 31 DEC * 2023,2025", template=("x", None), now=T
    )
    assert (job.id, job.delay_until) == (rid("eve", first), first)
    assert (await scheduler(queue, "eve")).cron == "30 0 9 31 DEC * 2023,2025"
    assert await claim(queue, first) == [rid("eve", first)]
    assert await pending_ids(queue, "eve") == [rid("eve", last)], "2024 is not a year of it"
    assert await claim(queue, last) == [rid("eve", last)]
    # No year left: the schedule ended, as a limit or an end ends one.
    assert await queue.get_scheduler("eve") is None
    assert await pending_ids(queue, "eve") == []


# ------------------------------------------------------------------ keep-last templates


def keep_last_template(dedup_id: str = "tick") -> tuple[str, None, JobOptions]:
    return ("x", None, JobOptions(dedup=Dedup(dedup_id, keep_last=True)))


async def test_keep_last_on_a_template_keeps_the_next_occurrence_while_one_runs(
    queue: JobQueue,
) -> None:
    first = await queue.upsert_scheduler("k", every=1.0, template=keep_last_template(), now=T)
    assert first.id == rid("k", T)
    assert await queue.get_deduplication_job_id("tick", now=T) == rid("k", T)
    [running] = await queue.claim("w", lease=60.0, now=T)
    # The next occurrence was produced by that claim, and waits on the key: no job yet.
    assert await pending_ids(queue, "k") == []
    got = await scheduler(queue, "k")
    assert (got.next_run, got.job_id, got.iteration_count) == (T + 1000, None, 2)
    events = [(e.event, e.job_id, e.fields) for e in await queue.read_events()]
    assert (
        "deduplicated",
        rid("k", T),
        {"deduplicationId": "tick", "deduplicatedJobId": rid("k", T + 1000)},
    ) in events
    # A slow run: nothing piles up while it runs.
    assert await claim(queue, T + 5000) == []
    await queue.complete(running.id, running.lock_token or "", None, now=T + 5500)
    # It finished: the kept occurrence is added, at once (its run time has passed).
    [kept] = await pending(queue, "k")
    assert (kept.id, kept.state) == (rid("k", T + 1000), "waiting")
    assert await queue.get_deduplication_job_id("tick", now=T + 5500) == kept.id
    [second] = await queue.claim("w", lease=60.0, now=T + 5500)
    assert second.id == kept.id
    # The schedule goes on from it, the missed times skipped; again kept while it runs.
    assert (await scheduler(queue, "k")).next_run == T + 6000
    assert await pending_ids(queue, "k") == []
    await queue.complete(second.id, second.lock_token or "", None, now=T + 5600)
    # Finished before the next run time: the kept occurrence waits for that time.
    [third] = await pending(queue, "k")
    assert (third.id, third.state, third.delay_until) == (rid("k", T + 6000), "delayed", T + 6000)
    assert (await scheduler(queue, "k")).job_id == third.id


async def test_an_upsert_keeps_or_replaces_the_occurrence_waiting_on_the_key(
    queue: JobQueue,
) -> None:
    keep = {"dedup": Dedup("tick", keep_last=True)}
    await queue.upsert_scheduler("k", every=1.0, template=("x", {"v": 1}, keep), now=T)
    [running] = await queue.claim("w", lease=60.0, now=T)
    before = await scheduler(queue, "k")
    assert (before.next_run, before.iteration_count, before.job_id) == (T + 1000, 2, None)
    # The same upsert again: the occurrence waiting on the key is the pending one, kept; the
    # key's owner answers for it, as when it was produced.
    again = await queue.upsert_scheduler("k", every=1.0, template=("x", {"v": 1}, keep), now=T + 5)
    assert again.id == running.id
    assert await scheduler(queue, "k") == before
    # A new template replaces it on the key, at its run time and number.
    await queue.upsert_scheduler("k", every=1.0, template=("x", {"v": 2}, keep), now=T + 10)
    got = await scheduler(queue, "k")
    assert (got.next_run, got.iteration_count, got.data) == (T + 1000, 2, {"v": 2})
    await queue.complete(running.id, running.lock_token or "", None, now=T + 20)
    [kept] = await pending(queue, "k")
    assert (kept.id, kept.data, kept.state, kept.delay_until) == (
        rid("k", T + 1000),
        {"v": 2},
        "delayed",
        T + 1000,
    )


async def test_a_template_key_held_by_another_job_defers_the_occurrence(queue: JobQueue) -> None:
    holder = await queue.add("x", None, dedup=Dedup("tick"), now=T)
    # The first occurrence waits on the key held by a waiting job (an add deduplicated would
    # be turned away; an occurrence is kept, or the schedule would stop): the answer is the
    # key's holder, as a deduplicated add's.
    answer = await queue.upsert_scheduler("k", every=1.0, template=keep_last_template(), now=T)
    assert answer.id == holder.id
    got = await scheduler(queue, "k")
    assert (got.next_run, got.job_id) == (T, None)
    [job] = await queue.claim("w", lease=60.0, now=T)
    assert job.id == holder.id
    await queue.complete(job.id, job.lock_token or "", None, now=T + 100)
    assert await pending_ids(queue, "k") == [rid("k", T)]
    assert await claim(queue, T + 100) == [rid("k", T)]
    assert (await scheduler(queue, "k")).next_run == T + 1000


async def test_removing_a_scheduler_drops_the_occurrence_waiting_on_its_key(
    queue: JobQueue,
) -> None:
    await queue.upsert_scheduler("k", every=1.0, template=keep_last_template(), now=T)
    [running] = await queue.claim("w", lease=60.0, now=T)
    assert await queue.remove_scheduler("k", now=T + 10) is True
    await queue.complete(running.id, running.lock_token or "", None, now=T + 20)
    # Nothing is added once the running one finishes: the kept occurrence went with it.
    assert await queue.list_jobs(["waiting", "delayed"]) == []
    assert await queue.get_deduplication_job_id("tick", now=T + 20) is None


# ----------------------------------------------------------------------------- upsert


async def test_repeating_an_upsert_changes_nothing(queue: JobQueue) -> None:
    args: dict[str, Any] = {"every": 5.0, "limit": 10, "template": ("x", {"a": [1, 2]})}
    first = await queue.upsert_scheduler("same", **args, now=T)
    mark = await last_event_id(queue)
    again = await queue.upsert_scheduler("same", **args, now=T + 1234)
    assert again.id == first.id == rid("same", T)
    assert await events_since(queue, mark) == []
    got = await scheduler(queue, "same")
    assert (got.iteration_count, got.next_run, got.job_id) == (1, T, rid("same", T))
    assert await pending_ids(queue, "same") == [rid("same", T)]


async def test_a_new_template_replaces_the_pending_occurrence_at_its_run_time(
    queue: JobQueue,
) -> None:
    await queue.upsert_scheduler("k", every=1.0, template=("old", {"v": 1}), now=T)
    await claim(queue, T)  # the first runs; the second is pending for T + 1000
    mark = await last_event_id(queue)
    job = await queue.upsert_scheduler("k", every=1.0, template=("new", {"v": 2}), now=T + 100)
    assert (job.id, job.name, job.data, job.delay_until) == (
        rid("k", T + 1000),
        "new",
        {"v": 2},
        T + 1000,
    )
    [only] = await pending(queue, "k")
    assert (only.id, only.name) == (rid("k", T + 1000), "new")
    assert (await scheduler(queue, "k")).iteration_count == 2
    assert await events_since(queue, mark) == [
        ("removed", rid("k", T + 1000), {"prev": "delayed"}),
        ("added", rid("k", T + 1000), {"name": "new"}),
        ("delayed", rid("k", T + 1000), {"delay": str(T + 1000)}),
    ]
    # The running occurrence is not touched.
    [active] = await queue.list_jobs("active")
    assert (active.id, active.name) == (rid("k", T), "old")


async def test_a_new_schedule_replaces_the_pending_occurrence_at_its_first_run(
    queue: JobQueue,
) -> None:
    await queue.upsert_scheduler("k", every=60.0, start=T + 5000, template=("x", None), now=T)
    job = await queue.upsert_scheduler("k", every=2.0, template=("x", None), now=T + 10)
    assert (job.id, job.state) == (rid("k", T + 10), "waiting")
    assert await pending_ids(queue, "k") == [rid("k", T + 10)]
    cron = await queue.upsert_scheduler("k", cron="0 * * * *", template=("x", None), now=T + 20)
    next_hour = ms(datetime(2023, 11, 14, 23, 0, tzinfo=UTC))
    assert cron.id == rid("k", next_hour)
    assert await pending_ids(queue, "k") == [rid("k", next_hour)]
    got = await scheduler(queue, "k")
    assert (got.cron, got.every, got.iteration_count) == ("0 * * * *", None, 1)


async def test_a_run_time_taken_by_an_earlier_occurrence_is_skipped(queue: JobQueue) -> None:
    await queue.upsert_scheduler("k", every=1.0, template=("x", None), now=T)
    await claim(queue, T)  # repeat:k:T runs
    # In the same millisecond, another interval: its first run, T, is taken by the running one.
    job = await queue.upsert_scheduler("k", every=0.5, template=("x", None), now=T)
    assert job.id == rid("k", T + 500)
    assert await pending_ids(queue, "k") == [rid("k", T + 500)]


async def test_a_limit_below_the_iterations_so_far_is_refused(queue: JobQueue) -> None:
    await queue.upsert_scheduler("k", every=1.0, template=("x", None), now=T)
    await claim(queue, T)
    await claim(queue, T + 1000)  # three produced, the third pending
    with pytest.raises(ConfigError, match=r"invalid limit: 2 .*number 3"):
        await queue.upsert_scheduler("k", every=1.0, limit=2, template=("x", None), now=T + 1001)
    job = await queue.upsert_scheduler("k", every=1.0, limit=3, template=("x", None), now=T + 1001)
    assert job.id == rid("k", T + 2000)
    await claim(queue, T + 2000)
    assert await queue.get_scheduler("k") is None


async def test_many_upserts_leave_one_pending_occurrence(queue: JobQueue) -> None:
    for i in range(20):
        schedule: dict[str, Any] = (
            {"every": 1.0 + i % 3} if i % 2 else {"cron": f"{i} * * * *", "tz": "Asia/Tokyo"}
        )
        await queue.upsert_scheduler("k", **schedule, template=("x", {"i": i}), now=T + i)
        if i % 5 == 0:
            await claim(queue, T + i)
        assert len(await pending_ids(queue, "k")) == 1
    got = await scheduler(queue, "k")
    assert got.job_id == (await pending_ids(queue, "k"))[0]
    assert got.data == {"i": 19}


# --------------------------------------------------------------------- reading, removal


async def test_list_count_and_get(queue: JobQueue) -> None:
    for key, start in (("late", T + 3000), ("early", T + 1000), ("mid", T + 2000), ("b", T + 2000)):
        await queue.upsert_scheduler(key, every=10.0, start=start, template=(key, None), now=T)
    assert await queue.count_schedulers() == 4
    listed = await queue.list_schedulers()
    assert [(s.key, s.next_run) for s in listed] == [
        ("early", T + 1000),
        ("b", T + 2000),
        ("mid", T + 2000),
        ("late", T + 3000),
    ]
    assert [s.key for s in await queue.list_schedulers(ascending=False)] == [
        "late",
        "mid",
        "b",
        "early",
    ]
    assert [s.key for s in await queue.list_schedulers(1, 2)] == ["b", "mid"]
    assert [s.key for s in await queue.list_schedulers(-1)] == ["late"]
    assert await queue.list_schedulers(4) == []
    assert await queue.get_scheduler("mid") == listed[2]
    assert await queue.get_scheduler("nope") is None


async def test_remove_scheduler_removes_its_pending_occurrence(queue: JobQueue) -> None:
    await queue.upsert_scheduler("k", every=1.0, template=("x", None), now=T)
    await claim(queue, T)
    mark = await last_event_id(queue)
    assert await queue.remove_scheduler("k", now=T + 1) is True
    assert await events_since(queue, mark) == [
        ("removed", rid("k", T + 1000), {"prev": "delayed"}),
    ]
    assert await queue.get_scheduler("k") is None
    assert await pending_ids(queue, "k") == []
    # The running occurrence finishes normally and produces nothing.
    [active] = await queue.list_jobs("active")
    assert active.lock_token is not None
    await queue.complete(active.id, active.lock_token, None, now=T + 2)
    assert await queue.get_job_counts("completed", "waiting", "delayed") == {
        "completed": 1,
        "waiting": 0,
        "delayed": 0,
    }
    assert await queue.remove_scheduler("k", now=T + 3) is False


async def test_a_pending_occurrence_cannot_be_removed_by_hand(queue: JobQueue) -> None:
    # As in BullMQ: the schedule would produce nothing more until its next upsert.
    job = await queue.upsert_scheduler("k", every=1.0, template=("x", None), now=T)
    with pytest.raises(JobStateError, match="pending occurrence of job scheduler"):
        await queue.remove(job.id, now=T + 1)
    got = await scheduler(queue, "k")
    assert (got.job_id, got.iteration_count, got.next_run) == (rid("k", T), 1, T)
    again = await queue.upsert_scheduler("k", every=1.0, template=("x", None), now=T + 2)
    assert again.id == rid("k", T)  # the same upsert again changes nothing


async def test_drain_keeps_schedulers_and_their_occurrences(queue: JobQueue) -> None:
    # As in BullMQ, waiting and delayed pending occurrences alike.
    await queue.upsert_scheduler("now", every=1.0, template=("x", None), now=T)
    await queue.upsert_scheduler("later", every=1.0, start=T + 500, template=("x", None), now=T)
    await queue.add("plain", None, delay=1.0, now=T)
    assert await queue.drain(delayed=True, now=T) == 1
    assert await pending_ids(queue, "later") == [rid("later", T + 500)]
    assert await pending_ids(queue, "now") == [rid("now", T)]
    assert await queue.count_schedulers() == 2
    assert (await scheduler(queue, "now")).job_id == rid("now", T)
    assert (await scheduler(queue, "later")).job_id == rid("later", T + 500)


async def test_obliterate_removes_schedulers(queue: JobQueue) -> None:
    await queue.upsert_scheduler("k", every=1.0, template=("x", None), now=T)
    await queue.obliterate(force=True, now=T)
    assert await queue.count_schedulers() == 0
    assert await queue.list_schedulers() == []
    assert await queue.get_job_counts("waiting") == {"waiting": 0}


# ------------------------------------------------------------------ stalls and retries


async def test_a_stalled_occurrence_is_requeued_without_a_second_pending_one(
    queue: JobQueue,
) -> None:
    await queue.upsert_scheduler("k", every=1.0, template=("x", None), now=T)
    [first] = await queue.claim("w", lease=0.5, now=T)
    assert await queue.recover_stalled(now=T + 500) == ([rid("k", T)], [])
    assert await pending_ids(queue, "k") == [rid("k", T), rid("k", T + 1000)]

    # Claimed again (it went back to the front): an old occurrence produces nothing.
    assert await claim(queue, T + 600, max_jobs=1) == [first.id]
    assert await pending_ids(queue, "k") == [rid("k", T + 1000)]
    got = await scheduler(queue, "k")
    assert (got.iteration_count, got.job_id) == (2, rid("k", T + 1000))

    assert await claim(queue, T + 1000) == [rid("k", T + 1000)]
    assert await pending_ids(queue, "k") == [rid("k", T + 2000)]


async def test_a_retried_occurrence_produces_nothing_more(queue: JobQueue) -> None:
    await queue.upsert_scheduler("k", every=10.0, template=("x", None, {"attempts": 2}), now=T)
    [job] = await queue.claim("w", lease=60.0, now=T)
    assert job.lock_token is not None
    assert await queue.fail(job.id, job.lock_token, "boom", now=T + 1) is True
    assert await claim(queue, T + 2) == [job.id]
    assert await pending_ids(queue, "k") == [rid("k", T + 10_000)]
    assert (await scheduler(queue, "k")).iteration_count == 2


# ------------------------------------------------------------------------- validation


BAD: list[tuple[dict[str, Any], str]] = [
    ({"every": 0}, "invalid every: 0"),
    ({"every": -1.5}, "-1.5"),
    ({"every": float("nan")}, "nan"),
    ({"every": 0.0001}, "0.0001"),
    ({"every": 1.0, "cron": "* * * * *"}, "cron='* * * * *'"),
    ({}, "neither every nor cron"),
    ({"cron": "not a cron"}, "not a cron"),
    ({"cron": "* * * *"}, "* * * *"),
    ({"cron": "0 0 30 2 *"}, "never fires"),
    ({"cron": "0 0 9 * * * 2020-2022"}, 'year field "2020-2022"'),
    ({"cron": "0 0 9 * * * 6000"}, 'year field "6000"'),
    ({"cron": "0 0 9 * * * 2024 1"}, "8 fields"),
    ({"cron": "0 9 * * *", "tz": "Mars/Olympus"}, "Mars/Olympus"),
    ({"every": 1.0, "tz": "Europe/Berlin"}, "Europe/Berlin"),
    ({"every": 1.0, "limit": 0}, "invalid limit: 0"),
    ({"every": 1.0, "end": T - 1}, str(T - 1)),
    ({"every": 1.0, "start": T + 10, "end": T + 5}, "invalid start"),
    ({"every": 1.0, "start": datetime(2024, 1, 1)}, "timezone-aware"),
    ({"every": 1.0, "start": -1}, "invalid start: -1"),
    ({"every": 1.0, "template": ("x", None, {"job_id": "fixed"})}, '"fixed"'),
    ({"every": 1.0, "template": ("x", None, JobOptions(dedup=Dedup("d")))}, "in simple mode"),
    (
        {"every": 1.0, "template": ("x", None, {"dedup": Dedup("d", ttl=5.0, keep_last=True)})},
        '"d" in ttl mode',
    ),
    (
        {"every": 1.0, "template": ("x", None, {"dedup": Dedup("d", replace=True)})},
        '"d" in replace mode',
    ),
    ({"every": 1.0, "template": ("x", None, {"delay": 5.0})}, "delay"),
    ({"every": 1.0, "template": ("x", None, {"attempts": 0})}, "attempts: 0"),
    ({"every": 1.0, "key": ""}, "scheduler key"),
]


@pytest.mark.parametrize(("kwargs", "fragment"), BAD, ids=[f for _, f in BAD])
async def test_bad_input_raises_and_writes_nothing(
    queue: JobQueue, kwargs: dict[str, Any], fragment: str
) -> None:
    args: dict[str, Any] = {"template": ("x", None), **kwargs}
    key = args.pop("key", "k")
    with pytest.raises(ValueError) as raised:
        await queue.upsert_scheduler(key, **args, now=T)
    assert fragment in str(raised.value)
    assert await queue.count_schedulers() == 0
    assert await queue.get_job_counts() == dict.fromkeys(
        ("waiting", "delayed", "active", "waiting_children", "completed", "failed"), 0
    )
    assert await queue.read_events() == []


async def test_a_bad_upsert_leaves_an_existing_scheduler_as_it_was(queue: JobQueue) -> None:
    await queue.upsert_scheduler("k", every=1.0, template=("x", {"v": 1}), now=T)
    before = await scheduler(queue, "k")
    mark = await last_event_id(queue)
    with pytest.raises(ValueError, match="Mars/Olympus"):
        await queue.upsert_scheduler(
            "k", cron="0 9 * * *", tz="Mars/Olympus", template=("x", {"v": 2}), now=T + 1
        )
    assert await scheduler(queue, "k") == before
    assert await events_since(queue, mark) == []


async def test_occurrences_are_marked_with_their_scheduler(queue: JobQueue) -> None:
    job = await queue.upsert_scheduler("k", every=1.0, template=("x", None), now=T)
    assert '"scheduler":"k"' in job.options.to_json()
    plain = await queue.add("x", None, now=T)
    assert plain.scheduler_key is None and plain.options.scheduler is None
    assert '"scheduler"' not in plain.options.to_json()
