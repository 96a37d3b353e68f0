"""Deduplication (BullMQ's modes): simple (held until the job finishes), throttle (``ttl``),
debounce (``extend``), replace-delayed (``replace``) and keep-last-if-active (``keep_last``);
the ``deduplicated`` and ``debounced`` events; what finishing, retrying and removing the job
holding a key do to it; ``add_bulk``; reading and deleting keys; validation."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from lanemq import (
    ConfigError,
    Dedup,
    Job,
    JobNotFoundError,
    JobOptions,
    JobQueue,
    JobStateError,
    QueueEvent,
)
from support import EPOCH_MS as T

from .helpers import lock_token


async def _claim(queue: JobQueue, job: Job, now: int) -> Job:
    """Claims the next job, which must be ``job``."""
    claimed = await queue.claim("w", lease=60.0, now=now)
    assert [c.id for c in claimed] == [job.id], claimed
    return claimed[0]


async def _complete(queue: JobQueue, job: Job, now: int) -> None:
    """Claims ``job`` (the next one) and completes it at ``now``."""
    active = await _claim(queue, job, now)
    await queue.complete(job.id, lock_token(active), "done", now=now)


async def _fail(queue: JobQueue, job: Job, now: int) -> None:
    """Claims ``job`` (the next one) and fails it for good at ``now``."""
    active = await _claim(queue, job, now)
    assert await queue.fail(job.id, lock_token(active), "boom", retry=False, now=now) is False


async def _last_event_id(queue: JobQueue) -> int:
    events = await queue.read_events()
    return events[-1].id if events else 0


def _shape(events: list[QueueEvent]) -> list[tuple[str, str | None, dict[str, str]]]:
    return [(e.event, e.job_id, e.fields) for e in events]


async def _since(queue: JobQueue, after: int) -> list[tuple[str, str | None, dict[str, str]]]:
    return _shape(await queue.read_events(start=after + 1))


def _dup_events(owner: str, dedup_id: str, dup_job_id: str | None = None) -> list[Any]:
    fields = {"deduplicationId": dedup_id}
    if dup_job_id is not None:
        fields["deduplicatedJobId"] = dup_job_id
    return [
        ("deduplicated", owner, fields),
        ("debounced", owner, {"debounceId": dedup_id}),
    ]


# ------------------------------------------------------------------------------- simple


async def test_duplicate_returns_the_owner_and_emits_events(queue: JobQueue) -> None:
    owner = await queue.add("mail", {"v": 1}, dedup=Dedup("user:1"), now=T)
    assert owner.dedup_id == "user:1"
    assert owner.options.dedup == Dedup("user:1")
    mark = await _last_event_id(queue)

    again = await queue.add("mail", {"v": 2}, dedup=Dedup("user:1"), now=T + 1)
    custom = await queue.add(
        "other", {"v": 3}, JobOptions(job_id="dup-3", dedup=Dedup("user:1")), now=T + 2
    )

    assert again.id == custom.id == owner.id
    assert again.data == custom.data == {"v": 1}
    assert await queue.get_job_counts("waiting") == {"waiting": 1}
    assert await queue.get_job("dup-3") is None
    assert await _since(queue, mark) == [
        *_dup_events(owner.id, "user:1"),
        *_dup_events(owner.id, "user:1", "dup-3"),
    ]
    timestamps = [e.timestamp for e in await queue.read_events(start=mark + 1)]
    assert timestamps == [T + 1, T + 1, T + 2, T + 2]
    assert await queue.get_deduplication_job_id("user:1", now=T + 3) == owner.id


async def test_other_dedup_ids_and_plain_jobs_are_not_affected(queue: JobQueue) -> None:
    a = await queue.add("x", 1, dedup=Dedup("a"), now=T)
    b = await queue.add("x", 2, dedup=Dedup("b"), now=T)
    plain = await queue.add("x", 3, now=T)
    assert len({a.id, b.id, plain.id}) == 3
    assert plain.dedup_id is None
    assert await queue.get_job_counts("waiting") == {"waiting": 3}


async def test_a_taken_custom_id_wins_over_dedup(queue: JobQueue) -> None:
    first = await queue.add("x", 1, job_id="same", now=T)
    mark = await _last_event_id(queue)
    again = await queue.add("x", 2, job_id="same", dedup=Dedup("d"), now=T + 1)
    assert again.id == first.id and again.dedup_id is None
    assert await _since(queue, mark) == [("duplicated", "same", {})]
    assert await queue.get_deduplication_job_id("d", now=T + 1) is None


async def test_key_is_held_while_active_and_released_on_completion(queue: JobQueue) -> None:
    owner = await queue.add("x", 1, dedup=Dedup("k"), now=T)
    active = await _claim(queue, owner, T + 1)
    assert (await queue.add("x", 2, dedup=Dedup("k"), now=T + 2)).id == owner.id
    await queue.complete(owner.id, lock_token(active), 1, now=T + 3)

    assert await queue.get_deduplication_job_id("k", now=T + 4) is None
    fresh = await queue.add("x", 3, dedup=Dedup("k"), now=T + 4)
    assert fresh.id != owner.id and fresh.state == "waiting" and fresh.data == 3
    assert await queue.get_deduplication_job_id("k", now=T + 4) == fresh.id


async def test_key_is_kept_on_retry_and_released_on_final_failure(queue: JobQueue) -> None:
    owner = await queue.add("x", 1, attempts=2, dedup=Dedup("k"), now=T)
    first = await _claim(queue, owner, T + 1)
    assert await queue.fail(owner.id, lock_token(first), "again", now=T + 2) is True
    assert (await queue.add("x", 2, dedup=Dedup("k"), now=T + 3)).id == owner.id

    second = await _claim(queue, owner, T + 4)
    assert await queue.fail(owner.id, lock_token(second), "final", now=T + 5) is False
    assert await queue.get_state(owner.id) == "failed"
    fresh = await queue.add("x", 3, dedup=Dedup("k"), now=T + 6)
    assert fresh.id != owner.id


async def test_stalled_out_owner_releases_the_key(queue: JobQueue) -> None:
    owner = await queue.add("x", 1, max_stalled_count=0, dedup=Dedup("k"), now=T)
    await queue.claim("w", lease=1.0, now=T)
    assert await queue.recover_stalled(now=T + 1000) == ([], [owner.id])
    assert await queue.get_deduplication_job_id("k", now=T + 1001) is None


# ------------------------------------------------------------------------ ttl (throttle)


async def test_ttl_holds_the_key_after_the_owner_finished(queue: JobQueue) -> None:
    owner = await queue.add("x", 1, dedup=Dedup("t", ttl=10.0), now=T)
    await _complete(queue, owner, T + 1)

    throttled = await queue.add("x", 2, dedup=Dedup("t", ttl=10.0), now=T + 5_000)
    assert throttled.id == owner.id and throttled.state == "completed"
    assert await queue.get_deduplication_job_id("t", now=T + 9_999) == owner.id
    assert await queue.get_deduplication_job_id("t", now=T + 10_000) is None

    fresh = await queue.add("x", 3, dedup=Dedup("t", ttl=10.0), now=T + 10_000)
    assert fresh.id != owner.id and fresh.state == "waiting"
    assert await queue.get_deduplication_job_id("t", now=T + 19_999) == fresh.id


async def test_ttl_expiry_frees_the_key_while_the_owner_still_waits(queue: JobQueue) -> None:
    owner = await queue.add("x", 1, dedup=Dedup("t", ttl=1.0), now=T)
    assert (await queue.add("x", 2, dedup=Dedup("t", ttl=1.0), now=T + 999)).id == owner.id
    second = await queue.add("x", 3, dedup=Dedup("t", ttl=1.0), now=T + 1_000)
    assert second.id != owner.id
    assert await queue.get_job_counts("waiting") == {"waiting": 2}
    # The first job no longer holds the key: removing it leaves the second one's key alone.
    await queue.remove(owner.id, now=T + 1_001)
    assert await queue.get_deduplication_job_id("t", now=T + 1_002) == second.id


async def test_a_removed_owner_holds_nothing_even_within_its_ttl(queue: JobQueue) -> None:
    owner = await queue.add("x", 1, remove_on_complete=True, dedup=Dedup("t", ttl=60.0), now=T)
    await _complete(queue, owner, T + 1)
    assert await queue.get_job(owner.id) is None
    assert await queue.get_deduplication_job_id("t", now=T + 2) is None
    fresh = await queue.add("x", 2, dedup=Dedup("t", ttl=60.0), now=T + 2)
    assert fresh.id != owner.id


# ---------------------------------------------------------------------- extend (debounce)


async def test_extend_restarts_the_ttl_on_every_duplicate(queue: JobQueue) -> None:
    debounce = Dedup("e", ttl=10.0, extend=True)
    owner = await queue.add("x", 1, dedup=debounce, now=T)
    assert (await queue.add("x", 2, dedup=debounce, now=T + 8_000)).id == owner.id
    assert (await queue.add("x", 3, dedup=debounce, now=T + 15_000)).id == owner.id
    assert await queue.get_deduplication_job_id("e", now=T + 24_999) == owner.id
    assert await queue.get_deduplication_job_id("e", now=T + 25_000) is None
    assert (await queue.add("x", 4, dedup=debounce, now=T + 25_000)).id != owner.id


async def test_without_extend_duplicates_do_not_move_the_expiry(queue: JobQueue) -> None:
    throttle = Dedup("e", ttl=10.0)
    owner = await queue.add("x", 1, dedup=throttle, now=T)
    assert (await queue.add("x", 2, dedup=throttle, now=T + 8_000)).id == owner.id
    assert await queue.get_deduplication_job_id("e", now=T + 10_000) is None


# ------------------------------------------------------------------------------- replace


async def test_replace_swaps_a_delayed_owner_for_the_new_job(queue: JobQueue) -> None:
    replace = Dedup("r", replace=True)
    old = await queue.add("x", {"v": 1}, delay=60.0, dedup=replace, now=T)
    mark = await _last_event_id(queue)

    new = await queue.add("y", {"v": 2}, delay=30.0, priority=3, dedup=replace, now=T + 10)

    assert new.id != old.id
    assert (new.name, new.data, new.state, new.priority) == ("y", {"v": 2}, "delayed", 3)
    assert new.delay_until == T + 10 + 30_000
    assert await queue.get_job(old.id) is None
    assert await queue.get_job_counts("delayed") == {"delayed": 1}
    assert await queue.get_deduplication_job_id("r", now=T + 11) == new.id
    assert await _since(queue, mark) == [
        ("removed", old.id, {"prev": "delayed"}),
        ("added", new.id, {"name": "y"}),
        ("delayed", new.id, {"delay": str(T + 10 + 30_000)}),
    ]


async def test_replace_keeps_the_remaining_ttl_or_extends_it(queue: JobQueue) -> None:
    keep = Dedup("r1", ttl=10.0, replace=True)
    await queue.add("x", 1, delay=60.0, dedup=keep, now=T)
    kept = await queue.add("x", 2, delay=60.0, dedup=keep, now=T + 4_000)
    assert await queue.get_deduplication_job_id("r1", now=T + 9_999) == kept.id
    assert await queue.get_deduplication_job_id("r1", now=T + 10_000) is None

    extend = Dedup("r2", ttl=10.0, replace=True, extend=True)
    await queue.add("x", 1, delay=60.0, dedup=extend, now=T)
    extended = await queue.add("x", 2, delay=60.0, dedup=extend, now=T + 4_000)
    assert await queue.get_deduplication_job_id("r2", now=T + 13_999) == extended.id
    assert await queue.get_deduplication_job_id("r2", now=T + 14_000) is None


async def test_replace_is_plain_dedup_when_the_owner_is_not_delayed(queue: JobQueue) -> None:
    replace = Dedup("r", replace=True)
    owner = await queue.add("x", 1, dedup=replace, now=T)
    mark = await _last_event_id(queue)
    again = await queue.add("x", 2, delay=5.0, dedup=replace, now=T + 1)
    assert again.id == owner.id and again.data == 1
    assert await _since(queue, mark) == _dup_events(owner.id, "r")

    await _claim(queue, owner, T + 2)
    assert (await queue.add("x", 3, delay=5.0, dedup=replace, now=T + 3)).id == owner.id
    assert await queue.get_job_counts("waiting", "delayed", "active") == {
        "waiting": 0,
        "delayed": 0,
        "active": 1,
    }


async def test_a_replaced_job_s_waiter_is_told_it_is_gone(queue: JobQueue) -> None:
    replace = Dedup("r", replace=True)
    old = await queue.add("x", 1, delay=60.0, dedup=replace, now=T)
    waiter = asyncio.create_task(old.wait(timeout=5.0))
    await asyncio.sleep(0.05)
    await queue.add("x", 2, delay=60.0, dedup=replace, now=T + 1)
    with pytest.raises(JobNotFoundError):
        await waiter


# ----------------------------------------------------------------------------- keep_last


async def test_keep_last_adds_the_latest_duplicate_once_the_owner_finishes(
    queue: JobQueue,
) -> None:
    keep = Dedup("kl", keep_last=True)
    owner = await queue.add("x", {"v": 1}, dedup=keep, now=T)
    active = await _claim(queue, owner, T + 1)
    mark = await _last_event_id(queue)

    assert (await queue.add("x", {"v": 2}, dedup=keep, now=T + 2)).id == owner.id
    latest = await queue.add("y", {"v": 3}, delay=5.0, dedup=keep, job_id="latest", now=T + 3)
    assert latest.id == owner.id
    assert await queue.get_job_counts("waiting", "delayed") == {"waiting": 0, "delayed": 0}
    assert await _since(queue, mark) == [
        *_dup_events(owner.id, "kl"),
        *_dup_events(owner.id, "kl", "latest"),
    ]

    mark = await _last_event_id(queue)
    await queue.complete(owner.id, lock_token(active), "ok", now=T + 100)

    follow = await queue.get_job("latest")
    assert follow is not None
    assert (follow.name, follow.data, follow.state) == ("y", {"v": 3}, "delayed")
    assert follow.created_at == T + 100
    assert follow.delay_until == T + 100 + 5_000, "the delay counts from the finish"
    assert await queue.get_job_counts("waiting", "delayed") == {"waiting": 0, "delayed": 1}
    assert await queue.get_deduplication_job_id("kl", now=T + 101) == "latest"
    assert await _since(queue, mark) == [
        ("completed", owner.id, {"returnvalue": '"ok"'}),
        ("added", "latest", {"name": "y"}),
        ("delayed", "latest", {"delay": str(T + 100 + 5_000)}),
    ]

    # The follow-up runs; with nothing stored behind it, its finish just releases the key.
    await _complete(queue, follow, T + 5_100)
    assert await queue.get_deduplication_job_id("kl", now=T + 5_101) is None
    assert await queue.get_job_counts("waiting", "delayed") == {"waiting": 0, "delayed": 0}


async def test_keep_last_follow_up_also_comes_after_a_final_failure(queue: JobQueue) -> None:
    keep = Dedup("kl", keep_last=True)
    owner = await queue.add("x", 1, dedup=keep, now=T)
    active = await _claim(queue, owner, T + 1)
    await queue.add("x", 2, dedup=keep, now=T + 2)
    assert await queue.fail(owner.id, lock_token(active), "boom", retry=False, now=T + 3) is False
    waiting = await queue.list_jobs("waiting")
    assert [(j.data, j.created_at) for j in waiting] == [(2, T + 3)]
    assert await queue.get_deduplication_job_id("kl", now=T + 4) == waiting[0].id


async def test_keep_last_stores_nothing_while_the_owner_waits(queue: JobQueue) -> None:
    keep = Dedup("kl", keep_last=True)
    owner = await queue.add("x", 1, dedup=keep, now=T)
    assert (await queue.add("x", 2, dedup=keep, now=T + 1)).id == owner.id
    delayed = await queue.add("x", 3, delay=10.0, dedup=Dedup("kd", keep_last=True), now=T)
    assert (await queue.add("x", 4, dedup=Dedup("kd", keep_last=True), now=T + 1)).id == (
        delayed.id
    )
    await _complete(queue, owner, T + 2)
    assert await queue.get_job_counts("waiting") == {"waiting": 0}
    assert await queue.get_deduplication_job_id("kl", now=T + 3) is None


async def test_keep_last_with_a_ttl_follows_up_and_restarts_the_ttl(queue: JobQueue) -> None:
    keep = Dedup("kt", ttl=10.0, keep_last=True)
    owner = await queue.add("x", 1, dedup=keep, now=T)
    active = await _claim(queue, owner, T + 1)
    await queue.add("x", 2, dedup=keep, now=T + 2)
    await queue.complete(owner.id, lock_token(active), None, now=T + 3)
    follow = (await queue.list_jobs("waiting"))[0]
    assert follow.data == 2
    assert await queue.get_deduplication_job_id("kt", now=T + 10_002) == follow.id
    assert await queue.get_deduplication_job_id("kt", now=T + 10_003) is None


async def test_keep_last_stored_job_outlives_the_ttl_of_its_key(queue: JobQueue) -> None:
    keep = Dedup("kx", ttl=1.0, keep_last=True)
    owner = await queue.add("x", 1, dedup=keep, now=T)
    active = await _claim(queue, owner, T)
    assert (await queue.add("x", 2, dedup=keep, now=T + 500)).id == owner.id
    # The ttl ran out: nothing holds the key, but the stored job still waits for the owner.
    assert await queue.get_deduplication_job_id("kx", now=T + 1_000) is None
    await queue.complete(owner.id, lock_token(active), None, now=T + 2_000)
    follow = await queue.list_jobs("waiting")
    assert [(j.data, j.created_at) for j in follow] == [(2, T + 2_000)]
    assert await queue.get_deduplication_job_id("kx", now=T + 2_999) == follow[0].id


async def test_keep_last_stored_job_is_dropped_when_a_new_job_takes_the_key(
    queue: JobQueue,
) -> None:
    keep = Dedup("kx", ttl=1.0, keep_last=True)
    owner = await queue.add("x", 1, dedup=keep, now=T)
    active = await _claim(queue, owner, T)
    await queue.add("x", 2, dedup=keep, now=T + 500)
    newer = await queue.add("x", 3, dedup=keep, now=T + 1_500)
    assert newer.id != owner.id and newer.state == "waiting"
    await queue.complete(owner.id, lock_token(active), None, now=T + 2_000)
    assert [j.data for j in await queue.list_jobs("waiting")] == [3]
    assert await queue.get_deduplication_job_id("kx", now=T + 2_001) == newer.id


# ------------------------------------------------------------------------------- removal


async def test_removing_the_owner_releases_its_key(queue: JobQueue) -> None:
    owner = await queue.add("x", 1, dedup=Dedup("k", ttl=60.0), now=T)
    await queue.remove(owner.id, now=T + 1)
    assert await queue.get_deduplication_job_id("k", now=T + 2) is None
    assert (await queue.add("x", 2, dedup=Dedup("k", ttl=60.0), now=T + 2)).id != owner.id


async def test_removing_the_owner_drops_a_stored_keep_last_job(queue: JobQueue) -> None:
    keep = Dedup("kl", keep_last=True)
    owner = await queue.add("x", 1, dedup=keep, now=T)
    await queue.claim("w", lease=1.0, now=T)
    await queue.add("x", 2, dedup=keep, now=T + 1)
    await queue.remove(owner.id, now=T + 1_000)  # its lease ran out
    assert await queue.get_deduplication_job_id("kl", now=T + 1_001) is None
    assert await queue.get_job_counts("waiting", "delayed") == {"waiting": 0, "delayed": 0}


async def test_drain_clean_and_obliterate_release_keys(queue: JobQueue) -> None:
    waiting = await queue.add("x", 1, dedup=Dedup("w"), now=T)
    delayed = await queue.add("x", 2, delay=60.0, dedup=Dedup("d"), now=T)
    assert await queue.drain(now=T + 1) == 1
    assert await queue.get_deduplication_job_id("w", now=T + 1) is None
    assert await queue.get_deduplication_job_id("d", now=T + 1) == delayed.id
    assert await queue.drain(delayed=True, now=T + 2) == 1
    assert await queue.get_deduplication_job_id("d", now=T + 2) is None
    assert waiting.id != delayed.id

    done = await queue.add("x", 3, dedup=Dedup("c", ttl=60.0), now=T + 3)
    await _complete(queue, done, T + 4)
    assert await queue.get_deduplication_job_id("c", now=T + 5) == done.id
    assert await queue.clean(0, state="completed", now=T + 5) == [done.id]
    assert await queue.get_deduplication_job_id("c", now=T + 6) is None

    await queue.add("x", 4, dedup=Dedup("o", ttl=60.0), now=T + 7)
    await queue.obliterate(now=T + 8)
    assert await queue.get_deduplication_job_id("o", now=T + 9) is None
    assert (await queue.add("x", 5, dedup=Dedup("o", ttl=60.0), now=T + 9)).data == 5


# ----------------------------------------------------------------------------- retry_job


async def test_retry_job_reclaims_a_free_key(queue: JobQueue) -> None:
    owner = await queue.add("x", 1, dedup=Dedup("k"), now=T)
    await _fail(queue, owner, T + 1)
    assert await queue.get_deduplication_job_id("k", now=T + 2) is None

    await queue.retry_job(owner.id, now=T + 2)
    assert await queue.get_state(owner.id) == "waiting"
    assert await queue.get_deduplication_job_id("k", now=T + 3) == owner.id
    assert (await queue.add("x", 2, dedup=Dedup("k"), now=T + 3)).id == owner.id


async def test_retry_job_of_a_throttled_owner_restarts_its_ttl(queue: JobQueue) -> None:
    owner = await queue.add("x", 1, dedup=Dedup("t", ttl=10.0), now=T)
    await _fail(queue, owner, T + 1)
    await queue.retry_job(owner.id, now=T + 5_000)
    assert await queue.get_deduplication_job_id("t", now=T + 14_999) == owner.id
    assert await queue.get_deduplication_job_id("t", now=T + 15_000) is None


async def test_retry_job_is_refused_while_another_job_holds_the_key(queue: JobQueue) -> None:
    first = await queue.add("x", 1, dedup=Dedup("k"), now=T)
    await _fail(queue, first, T + 1)
    holder = await queue.add("x", 2, dedup=Dedup("k"), now=T + 2)
    assert holder.id != first.id
    before = await queue.read_events()

    with pytest.raises(JobStateError) as caught:
        await queue.retry_job(first.id, now=T + 3)
    message = str(caught.value)
    assert "'k'" in message or '"k"' in message, message
    assert holder.id in message and first.id in message

    assert await queue.get_state(first.id) == "failed"
    assert await queue.get_deduplication_job_id("k", now=T + 4) == holder.id
    assert await queue.read_events() == before

    # Once the holder finished, the key is free and the retry goes through.
    await _complete(queue, holder, T + 5)
    await queue.retry_job(first.id, now=T + 6)
    assert await queue.get_deduplication_job_id("k", now=T + 7) == first.id


# ------------------------------------------------------------------------------ add_bulk


async def test_add_bulk_dedups_against_earlier_jobs_of_the_same_batch(queue: JobQueue) -> None:
    added = await queue.add_bulk(
        [
            ("a", 1, {"dedup": Dedup("b")}),
            ("a", 2, JobOptions(dedup=Dedup("b"))),
            ("plain", 3),
            ("c", 4, {"dedup": Dedup("c"), "job_id": "c-job"}),
            ("c", 5, {"dedup": Dedup("c")}),
        ],
        now=T,
    )
    ids = [job.id for job in added]
    assert ids[0] == ids[1] and ids[3] == ids[4] == "c-job"
    assert len(set(ids)) == 3
    assert [job.data for job in added] == [1, 1, 3, 4, 4]
    assert await queue.get_job_counts("waiting") == {"waiting": 3}
    names = [e.event for e in await queue.read_events()]
    assert names.count("deduplicated") == 2 and names.count("debounced") == 2


async def test_add_bulk_with_dedup_is_all_or_nothing(queue: JobQueue) -> None:
    before = (await queue.get_job_counts(), await queue.read_events())
    with pytest.raises(ConfigError):
        await queue.add_bulk([("a", 1, {"dedup": Dedup("b")}), ("bad", 2, {"priority": -1})], now=T)
    assert (await queue.get_job_counts(), await queue.read_events()) == before
    assert await queue.get_deduplication_job_id("b", now=T) is None


# ---------------------------------------------------------------------------- key access


async def test_get_and_remove_deduplication_keys(queue: JobQueue) -> None:
    assert await queue.get_deduplication_job_id("nope") is None
    assert await queue.remove_deduplication_key("nope") is False

    owner = await queue.add("x", 1, dedup=Dedup("k"), now=T)
    assert await queue.remove_deduplication_key("k", now=T + 1) is True
    assert await queue.remove_deduplication_key("k", now=T + 1) is False
    fresh = await queue.add("x", 2, dedup=Dedup("k"), now=T + 2)
    assert fresh.id != owner.id
    assert await queue.get_state(owner.id) == "waiting", "the old job is left as it was"

    throttled = await queue.add("x", 3, dedup=Dedup("t", ttl=1.0), now=T)
    assert await queue.remove_deduplication_key("t", now=T + 1_000) is False, "expired"
    assert await queue.get_deduplication_job_id("t", now=T) is None
    assert throttled.dedup_id == "t"


async def test_removing_a_key_drops_its_stored_keep_last_job(queue: JobQueue) -> None:
    keep = Dedup("kl", keep_last=True)
    owner = await queue.add("x", 1, dedup=keep, now=T)
    active = await _claim(queue, owner, T + 1)
    await queue.add("x", 2, dedup=keep, now=T + 2)
    assert await queue.remove_deduplication_key("kl", now=T + 3) is True
    await queue.complete(owner.id, lock_token(active), None, now=T + 4)
    assert await queue.get_job_counts("waiting", "delayed") == {"waiting": 0, "delayed": 0}


# ---------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("kwargs", "fragments"),
    [
        ({"id": ""}, ("dedup id", '""')),
        ({"id": "d", "ttl": 0}, ("dedup ttl", "0")),
        ({"id": "d", "ttl": -1.5}, ("dedup ttl", "-1.5")),
        ({"id": "d", "ttl": float("nan")}, ("dedup ttl", "NaN")),
        ({"id": "d", "extend": True}, ("extend", '"d"')),
        ({"id": "d", "replace": True, "keep_last": True}, ("replace and keep_last", '"d"')),
    ],
)
async def test_invalid_dedup_is_refused_and_writes_nothing(
    queue: JobQueue, kwargs: dict[str, Any], fragments: tuple[str, ...]
) -> None:
    await queue.add("seed", None, now=T)
    before = (await queue.get_job_counts(), await queue.read_events())
    with pytest.raises(ConfigError) as caught:
        await queue.add("x", None, dedup=Dedup(**kwargs), now=T)
    for fragment in fragments:
        assert fragment in str(caught.value), str(caught.value)
    assert isinstance(caught.value, ValueError)
    assert (await queue.get_job_counts(), await queue.read_events()) == before


async def test_dedup_must_be_a_dedup(queue: JobQueue) -> None:
    with pytest.raises(TypeError, match="'k'"):
        await queue.add("x", None, dedup="k", now=T)
    with pytest.raises(TypeError):
        Dedup(42)  # type: ignore[arg-type]
    assert await queue.get_job_counts("waiting") == {"waiting": 0}


def test_dedup_is_a_frozen_value() -> None:
    d = Dedup("k", ttl=1.5, extend=True)
    assert (d.id, d.ttl, d.extend, d.replace, d.keep_last) == ("k", 1.5, True, False, False)
    assert d == Dedup("k", ttl=1.5, extend=True) and d != Dedup("k")
    assert len({d, Dedup("k", ttl=1.5, extend=True)}) == 1
    assert repr(d) == 'Dedup("k", ttl=1.5, extend=True)'
    with pytest.raises(AttributeError):
        d.id = "other"  # type: ignore[misc]
    assert JobOptions(dedup=d).dedup == d
    assert JobOptions().dedup is None
