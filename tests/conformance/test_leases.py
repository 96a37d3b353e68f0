"""Leases: claiming, completing and failing under a lock token, renewing, stall recovery
(scenarios 18, 19 and 21), moving to delayed and releasing."""

from __future__ import annotations

import asyncio

import pytest
from lanemq import (
    JobNotFoundError,
    JobQueue,
    JobStateError,
    LockMismatchError,
)
from support import EPOCH_MS as T

from .helpers import claim_one, lock_token, stored_job


async def _event_names(queue: JobQueue, job_id: str) -> list[str]:
    return [ev.event for ev in await queue.read_events() if ev.job_id == job_id]


async def test_claim_locks_the_job(queue: JobQueue) -> None:
    added = await queue.add("send", {"to": "ops"}, now=T)
    assert added.attempts_made == 0 and added.processed_on is None and added.lock_token is None

    job = await claim_one(queue, T + 10, lease=5.0, worker="worker-a")
    assert job.id == added.id
    assert job.state == "active"
    assert job.attempts_started == 1
    assert job.processed_on == T + 10
    assert job.data == {"to": "ops"}

    stored = await stored_job(queue, job.id)
    assert stored.state == "active"
    assert stored.lock_token == lock_token(job)
    assert stored.attempts_started == 1 and stored.processed_on == T + 10
    assert await queue.get_state(job.id) == "active"
    assert await queue.get_job_counts("waiting", "active") == {"waiting": 0, "active": 1}

    # Each claim gets its own token.
    await queue.add("send", {"to": "dev"}, now=T)
    other = await claim_one(queue, T + 10)
    assert lock_token(other) != lock_token(job)


async def test_claim_max_jobs_locks_each(queue: JobQueue) -> None:
    for i in range(3):
        await queue.add("j", i, now=T)
    jobs = await queue.claim("w", lease=5.0, max_jobs=5, now=T + 1)
    assert [job.data for job in jobs] == [0, 1, 2]
    assert len({lock_token(job) for job in jobs}) == 3
    assert all(job.state == "active" and job.attempts_started == 1 for job in jobs)


async def test_scenario_18_stalled_worker_loses_the_job(queue: JobQueue) -> None:
    job = await queue.add("report", {"day": 1}, now=T)
    held_by_a = await claim_one(queue, T, lease=1.0, worker="A")
    token_a = lock_token(held_by_a)

    # A stalls. Before expiry nothing is recovered.
    assert await queue.recover_stalled(now=T + 999) == ([], [])
    assert await queue.recover_stalled(now=T + 1500) == ([job.id], [])
    recovered = await stored_job(queue, job.id)
    assert recovered.state == "waiting"
    assert recovered.stalled_count == 1
    assert recovered.lock_token is None

    held_by_b = await claim_one(queue, T + 1600, lease=30.0, worker="B")
    token_b = lock_token(held_by_b)
    assert held_by_b.id == job.id and token_b != token_a
    assert held_by_b.attempts_started == 1  # the stalled attempt was given back

    with pytest.raises(LockMismatchError):
        await queue.complete(job.id, token_a, "from A", now=T + 1700)
    with pytest.raises(LockMismatchError):
        await queue.fail(job.id, token_a, "from A", now=T + 1700)
    with pytest.raises(LockMismatchError):
        await queue.renew(job.id, token_a, 30.0, now=T + 1700)
    assert (await stored_job(queue, job.id)).lock_token == token_b

    await queue.complete(job.id, token_b, "from B", now=T + 1800)
    result = await queue.finished_result(job.id)
    assert (result.status, result.value) == ("completed", "from B")


async def test_complete_and_fail_errors_are_distinct(queue: JobQueue) -> None:
    waiting = await queue.add("w", None, now=T)
    active_added = await queue.add("a", None, now=T + 1)
    await queue.add("padding", None, now=T + 2)
    active = await claim_one(queue, T + 5)
    assert active.id == waiting.id
    token = lock_token(active)
    # `waiting` is now active; `active_added` is still waiting.
    still_waiting = active_added

    # Not active -> JobStateError (whatever the token).
    for attempt in (
        queue.complete(still_waiting.id, token, None, now=T + 6),
        queue.fail(still_waiting.id, token, "boom", now=T + 6),
    ):
        with pytest.raises(JobStateError) as caught:
            await attempt
        assert not isinstance(caught.value, (LockMismatchError, JobNotFoundError))
    assert await queue.get_state(still_waiting.id) == "waiting"

    # Wrong token on an active job -> LockMismatchError.
    for attempt in (
        queue.complete(active.id, token + "x", None, now=T + 6),
        queue.fail(active.id, "not-a-token", "boom", now=T + 6),
    ):
        with pytest.raises(LockMismatchError) as mismatch:
            await attempt
        assert not isinstance(mismatch.value, (JobStateError, JobNotFoundError))
    stored = await stored_job(queue, active.id)
    assert (stored.state, stored.lock_token, stored.attempts_started) == ("active", token, 1)

    # Missing job -> JobNotFoundError (a LookupError).
    for attempt in (
        queue.complete("no-such-job", token, None, now=T + 6),
        queue.fail("no-such-job", token, "boom", now=T + 6),
    ):
        with pytest.raises(JobNotFoundError) as missing:
            await attempt
        assert isinstance(missing.value, LookupError)
        assert not isinstance(missing.value, (JobStateError, LockMismatchError))

    # Once completed, the job is no longer active: completing or failing again is a state error.
    await queue.complete(active.id, token, "done", now=T + 7)
    with pytest.raises(JobStateError):
        await queue.complete(active.id, token, "again", now=T + 8)
    with pytest.raises(JobStateError):
        await queue.fail(active.id, token, "late", now=T + 8)
    result = await queue.finished_result(active.id)
    assert (result.status, result.value) == ("completed", "done")


async def test_renew_moves_expiry_to_now_plus_lease(queue: JobQueue) -> None:
    job = await queue.add("long", None, now=T)
    claimed = await claim_one(queue, T, lease=1.0)  # expires at T + 1000
    token = lock_token(claimed)

    await queue.renew(job.id, token, 2.0, now=T + 500)  # now expires at T + 2500
    assert (await stored_job(queue, job.id)).lock_token == token

    assert await queue.recover_stalled(now=T + 1000) == ([], [])
    assert await queue.recover_stalled(now=T + 2499) == ([], [])
    assert await queue.get_state(job.id) == "active"
    assert await queue.recover_stalled(now=T + 2500) == ([job.id], [])
    assert await queue.get_state(job.id) == "waiting"


async def test_renewed_lease_lets_the_holder_finish_after_the_old_expiry(queue: JobQueue) -> None:
    job = await queue.add("long", None, now=T)
    token = lock_token(await claim_one(queue, T, lease=1.0))
    await queue.renew(job.id, token, 1.0, now=T + 900)  # T + 1900
    await queue.renew(job.id, token, 1.0, now=T + 1800)  # T + 2800
    await queue.complete(job.id, token, "ok", now=T + 2700)
    assert (await queue.finished_result(job.id)).value == "ok"


async def test_renew_can_shorten_the_lease(queue: JobQueue) -> None:
    job = await queue.add("j", None, now=T)
    token = lock_token(await claim_one(queue, T, lease=60.0))
    await queue.renew(job.id, token, 1.0, now=T + 100)  # now + lease, not max(old, new)
    assert await queue.recover_stalled(now=T + 1100) == ([job.id], [])


async def test_renew_many_returns_the_lost_ids(queue: JobQueue) -> None:
    for name in ("a", "b", "c", "d"):
        await queue.add(name, None, now=T)
    a, b, c, d = await queue.claim("w", lease=1.0, max_jobs=4, now=T)
    # d's lease expires and is recovered; b is presented with a wrong token.
    await queue.renew(a.id, lock_token(a), 5.0, now=T + 500)
    await queue.renew(c.id, lock_token(c), 5.0, now=T + 500)
    await queue.renew(b.id, lock_token(b), 5.0, now=T + 500)
    assert await queue.recover_stalled(now=T + 1000) == ([d.id], [])

    lost = await queue.renew_many(
        [
            (a.id, lock_token(a)),
            (b.id, "wrong"),
            (c.id, lock_token(c)),
            (d.id, lock_token(d)),
            ("missing", "t"),
        ],
        10.0,
        now=T + 2000,
    )
    assert sorted(lost) == sorted([b.id, d.id, "missing"])
    # a and c are held until T + 12000; b still expires at T + 5500.
    assert await queue.recover_stalled(now=T + 5500) == ([b.id], [])
    assert await queue.recover_stalled(now=T + 11_999) == ([], [])
    recovered, failed = await queue.recover_stalled(now=T + 12_000)
    assert (sorted(recovered), failed) == (sorted([a.id, c.id]), [])


async def test_renew_many_with_expired_lease(queue: JobQueue) -> None:
    job = await queue.add("j", None, now=T)
    token = lock_token(await claim_one(queue, T, lease=1.0))
    assert await queue.renew_many([(job.id, token)], 5.0, now=T + 1000) == [job.id]
    assert await queue.renew_many([], 5.0, now=T + 1000) == []


async def test_expired_lock_refused_before_recovery(queue: JobQueue) -> None:
    job = await queue.add("j", None, now=T)
    token = lock_token(await claim_one(queue, T, lease=1.0))  # expires at T + 1000

    for now in (T + 1000, T + 5000):
        with pytest.raises(LockMismatchError):
            await queue.complete(job.id, token, "late", now=now)
        with pytest.raises(LockMismatchError):
            await queue.fail(job.id, token, "late", now=now)
        with pytest.raises(LockMismatchError):
            await queue.renew(job.id, token, 30.0, now=now)
        with pytest.raises(LockMismatchError):
            await queue.move_to_delayed(job.id, token, 1.0, now=now)
    # Nothing recovered it yet, and the refused calls changed nothing.
    stored = await stored_job(queue, job.id)
    assert (stored.state, stored.lock_token, stored.attempts_started) == ("active", token, 1)
    assert await queue.recover_stalled(now=T + 5000) == ([job.id], [])

    # One millisecond before expiry the holder may still finish.
    other = await queue.add("k", None, now=T)
    assert other.id != job.id
    claimed = await claim_one(queue, T + 6000, lease=1.0)
    await queue.complete(claimed.id, lock_token(claimed), "in time", now=T + 6999)
    assert (await queue.finished_result(claimed.id)).status == "completed"


async def test_scenario_21_max_stalled_count(queue: JobQueue) -> None:
    job = await queue.add("flaky", None, max_stalled_count=1, attempts=5, now=T)

    await claim_one(queue, T, lease=1.0)
    assert await queue.recover_stalled(now=T + 1000) == ([job.id], [])
    first = await stored_job(queue, job.id)
    assert (first.state, first.stalled_count) == ("waiting", 1)

    await claim_one(queue, T + 1000, lease=1.0)
    assert await queue.recover_stalled(now=T + 2000) == ([], [job.id])
    second = await stored_job(queue, job.id)
    assert (second.state, second.stalled_count) == ("failed", 2)
    assert second.failed_reason is not None and "stalled" in second.failed_reason
    result = await queue.finished_result(job.id)
    assert result.status == "failed" and result.reason is not None and "stalled" in result.reason
    assert await queue.claim("w", now=T + 3000) == []

    stalled = [ev for ev in await queue.read_events() if ev.event == "stalled"]
    assert [ev.fields.get("stalledCount") for ev in stalled] == ["1", "2"]
    assert (await _event_names(queue, job.id))[-1] in ("failed", "retries-exhausted")
    assert "failed" in await _event_names(queue, job.id)


async def test_max_stalled_count_zero_fails_on_first_stall(queue: JobQueue) -> None:
    job = await queue.add("fragile", None, max_stalled_count=0, now=T)
    await claim_one(queue, T, lease=1.0)
    assert await queue.recover_stalled(now=T + 1000) == ([], [job.id])
    stored = await stored_job(queue, job.id)
    assert (stored.state, stored.stalled_count) == ("failed", 1)


async def test_recovered_job_goes_to_front_of_its_priority(queue: JobQueue) -> None:
    job = await queue.add("stalls", None, priority=2, now=T)
    await claim_one(queue, T, lease=1.0)
    await queue.add("newer", None, priority=2, now=T + 10)
    await queue.add("urgent", None, priority=1, now=T + 20)
    assert await queue.recover_stalled(now=T + 1000) == ([job.id], [])
    claimed = await queue.claim("w", max_jobs=3, now=T + 1001)
    assert [c.name for c in claimed] == ["urgent", "stalls", "newer"]
    assert claimed[1].attempts_started == 1  # the stalled attempt was given back


async def test_recover_stalled_twice_back_to_back_recovers_once(queue: JobQueue) -> None:
    for name in ("a", "b"):
        await queue.add(name, None, now=T)
    jobs = await queue.claim("w", lease=1.0, max_jobs=2, now=T)
    ids = sorted(job.id for job in jobs)

    first = await queue.recover_stalled(now=T + 1000)
    second = await queue.recover_stalled(now=T + 1000)
    assert (sorted(first[0]), first[1]) == (ids, [])
    assert second == ([], [])
    for job_id in ids:
        assert (await stored_job(queue, job_id)).stalled_count == 1
    assert [ev.event for ev in await queue.read_events()].count("stalled") == 2
    assert await queue.get_job_counts("waiting", "active") == {"waiting": 2, "active": 0}
    assert len(await queue.claim("w", max_jobs=5, now=T + 1001)) == 2


async def test_recover_stalled_gathered_recovers_once(queue: JobQueue) -> None:
    for name in ("a", "b", "c"):
        await queue.add(name, None, now=T)
    jobs = await queue.claim("w", lease=1.0, max_jobs=3, now=T)
    ids = sorted(job.id for job in jobs)

    results = await asyncio.gather(
        queue.recover_stalled(now=T + 1000), queue.recover_stalled(now=T + 1000)
    )
    recovered = [job_id for found, _ in results for job_id in found]
    assert sorted(recovered) == ids  # each exactly once across both calls
    assert [failed for _, failed in results] == [[], []]
    for job_id in ids:
        stored = await stored_job(queue, job_id)
        assert (stored.state, stored.stalled_count) == ("waiting", 1)
    assert [ev.event for ev in await queue.read_events()].count("stalled") == 3


async def test_move_to_delayed_uses_no_attempt(queue: JobQueue) -> None:
    job = await queue.add("later", None, attempts=1, now=T)
    claimed = await claim_one(queue, T)
    token = lock_token(claimed)

    await queue.move_to_delayed(job.id, token, 2.0, now=T + 100)
    parked = await stored_job(queue, job.id)
    assert (parked.state, parked.delay_until, parked.lock_token) == ("delayed", T + 2100, None)
    with pytest.raises(JobStateError):
        await queue.complete(job.id, token, None, now=T + 200)

    assert await queue.claim("w", now=T + 2099) == []
    again = await claim_one(queue, T + 2100)
    assert again.id == job.id
    assert again.attempts_started == 1

    # With attempts=1 the attempt in hand is still the first: a failure now is final, and
    # `retries-exhausted` says attemptsMade 1.
    assert await queue.fail(job.id, lock_token(again), "boom", now=T + 2200) is False
    exhausted = [ev for ev in await queue.read_events() if ev.event == "retries-exhausted"]
    assert [ev.fields.get("attemptsMade") for ev in exhausted] == ["1"]


async def test_move_to_delayed_until_timestamp(queue: JobQueue) -> None:
    job = await queue.add("later", None, now=T)
    token = lock_token(await claim_one(queue, T))
    await queue.move_to_delayed(job.id, token, delay_until=T + 60_000, now=T + 10)
    assert (await stored_job(queue, job.id)).delay_until == T + 60_000
    assert await queue.claim("w", now=T + 59_999) == []
    assert (await claim_one(queue, T + 60_000)).id == job.id


async def test_release_after_the_lease_ran_out_gives_back_until_recovery_took_it(
    queue: JobQueue,
) -> None:
    # A worker gives back a job whose lease ran out before it could start it (its loop was
    # blocked): while the token still holds the job, that counts no stall and uses no attempt.
    job = await queue.add("j", None, now=T)
    token = lock_token(await claim_one(queue, T, lease=1.0))  # expires at T + 1000
    await queue.release(job.id, token, now=T + 5000)
    stored = await stored_job(queue, job.id)
    assert (stored.state, stored.lock_token, stored.attempts_made, stored.stalled_count) == (
        "waiting",
        None,
        0,
        0,
    )
    assert await queue.recover_stalled(now=T + 5000) == ([], [])

    # Once stalled recovery took the job, the old token gives back nothing.
    token = lock_token(await claim_one(queue, T + 6000, lease=1.0))
    assert await queue.recover_stalled(now=T + 8000) == ([job.id], [])
    with pytest.raises(JobStateError, match="waiting, not active"):
        await queue.release(job.id, token, now=T + 8000)
    retaken = await claim_one(queue, T + 9000, lease=1.0)
    with pytest.raises(LockMismatchError):
        await queue.release(job.id, token, now=T + 9000)
    await queue.release(job.id, lock_token(retaken), now=T + 9000)
    stored = await stored_job(queue, job.id)
    assert (stored.state, stored.stalled_count) == ("waiting", 1)


async def test_release_goes_to_front_without_using_an_attempt(queue: JobQueue) -> None:
    job = await queue.add("first", None, attempts=2, now=T)
    await queue.add("second", None, now=T + 1)

    for i in range(3):
        claimed = await claim_one(queue, T + 10 + i)
        assert claimed.id == job.id  # back at the front, ahead of "second"
        assert claimed.attempts_started == 1
        await queue.release(job.id, lock_token(claimed), now=T + 10 + i)
        stored = await stored_job(queue, job.id)
        assert (stored.state, stored.lock_token, stored.attempts_made) == ("waiting", None, 0)

    # Three releases used no attempt: the first failure is still retried.
    claimed = await claim_one(queue, T + 20)
    assert await queue.fail(job.id, lock_token(claimed), "boom", now=T + 21) is True
    assert await queue.get_state(job.id) == "waiting"
