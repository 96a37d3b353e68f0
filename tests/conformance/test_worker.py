"""Conformance of `JobWorker` on every backend: results and hooks, concurrency, failures
(scenario 26), lease loss (scenario 27), delays and rate limits, graceful and forced close
(scenario 42, in process), lease renewal, stalled recovery and configuration.

Every wait is bounded by `asyncio.wait_for(..., LIMIT)` so a broken worker fails a test
instead of hanging the suite; timing assertions keep margins of at least 3x."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from lanemq import (
    Backoff,
    ConfigError,
    DelayedError,
    Job,
    JobFailedError,
    JobQueue,
    JobWorker,
    LockLostWarning,
    LockMismatchError,
    RateLimitError,
    UnrecoverableError,
)

LIMIT = 5.0  # upper bound for anything awaited; a healthy run needs a small fraction of it


def now_ms() -> int:
    return int(time.time() * 1000)


@contextlib.asynccontextmanager
async def running(worker: JobWorker, *, force: bool = False) -> AsyncIterator[asyncio.Task[None]]:
    """Runs ``worker.run()`` in a task for the body, then closes it (bounded) and re-raises
    anything ``run()`` raised."""
    task = asyncio.get_running_loop().create_task(worker.run())
    await asyncio.sleep(0)
    try:
        yield task
    finally:
        try:
            await asyncio.wait_for(worker.close(force=force), LIMIT)
        finally:
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
    assert task.done()
    task.result()


# --------------------------------------------------------------------------- results


async def test_return_value_is_stored_and_completed_hook_fires(queue: JobQueue) -> None:
    async def calc(job: Job) -> dict[str, int]:
        return {"double": job.data["n"] * 2}

    completed: list[tuple[Job, Any]] = []
    completed_async: list[str] = []

    async def async_hook(job: Job, result: Any) -> None:
        completed_async.append(job.id)

    worker = JobWorker(queue, {"calc": calc})
    worker.on("completed", lambda job, result: completed.append((job, result)))
    worker.on("completed", async_hook)
    job = await queue.add("calc", {"n": 21})
    async with running(worker):
        assert await asyncio.wait_for(job.wait(), LIMIT) == {"double": 42}

    result = await queue.finished_result(job.id)
    assert result.status == "completed"
    assert result.value == {"double": 42}
    assert await queue.get_state(job.id) == "completed"
    assert [(j.id, r) for j, r in completed] == [(job.id, {"double": 42})]
    assert isinstance(completed[0][0], Job)
    assert completed_async == [job.id]
    assert worker.processed == 1
    assert worker.failed == 0


async def test_concurrency_peak_equals_setting(queue: JobQueue) -> None:
    active = 0
    peak = 0

    async def work(job: Job) -> Any:
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        try:
            await asyncio.sleep(0.02)
        finally:
            active -= 1
        return job.data

    jobs = await queue.add_bulk([("w", i) for i in range(12)])
    worker = JobWorker(queue, work, concurrency=3)
    async with running(worker):
        results = await asyncio.wait_for(asyncio.gather(*(j.wait() for j in jobs)), LIMIT)

    assert results == list(range(12))
    assert peak == 3
    assert worker.processed == 12
    counts = await queue.get_job_counts("completed", "active", "waiting")
    assert counts == {"completed": 12, "active": 0, "waiting": 0}


# ------------------------------------------------------------- failures (scenario 26)


async def test_unknown_job_name_fails_at_once_without_retries(queue: JobQueue) -> None:
    async def known(job: Job) -> str:
        return "ran"

    failed: list[tuple[str, BaseException]] = []
    dead: list[tuple[str, BaseException]] = []
    worker = JobWorker(queue, {"known": known})
    worker.on("failed", lambda job, error: failed.append((job.id, error)))
    worker.on("dead", lambda job, error: dead.append((job.id, error)))
    job = await queue.add("x", {"k": 1}, attempts=3)
    async with running(worker):
        with pytest.raises(JobFailedError) as caught:
            await asyncio.wait_for(job.wait(), LIMIT)

    assert "no processor for job name 'x'" in caught.value.reason
    stored = await queue.get_job(job.id)
    assert stored is not None
    assert stored.state == "failed"
    assert stored.attempts_made == 1
    assert stored.failed_reason is not None
    assert "no processor for job name 'x'" in stored.failed_reason
    result = await queue.finished_result(job.id)
    assert result.status == "failed"
    assert result.reason is not None and "no processor for job name 'x'" in result.reason
    assert [job_id for job_id, _ in failed] == [job.id]
    assert [job_id for job_id, _ in dead] == [job.id]
    assert isinstance(dead[0][1], UnrecoverableError)


async def test_job_timeout_fails_with_timeout_reason(queue: JobQueue) -> None:
    finished_work: list[str] = []
    cancelled: list[str] = []

    async def slow(job: Job) -> str:
        try:
            await asyncio.sleep(0.05)
        except asyncio.CancelledError:
            cancelled.append(job.id)
            raise
        finished_work.append(job.id)
        return "too late"

    worker = JobWorker(queue, {"slow": slow})
    job = await queue.add("slow", None, attempts=1, timeout=0.01)
    async with running(worker):
        with pytest.raises(JobFailedError) as caught:
            await asyncio.wait_for(job.wait(), LIMIT)

    assert "TimeoutError" in caught.value.reason
    assert "timed out" in caught.value.reason
    assert cancelled == [job.id]
    assert finished_work == []
    stored = await queue.get_job(job.id)
    assert stored is not None
    assert stored.state == "failed"
    assert stored.attempts_made == 1
    assert stored.failed_reason is not None and "timed out" in stored.failed_reason
    assert worker.processed == 0


async def test_job_timeout_is_retryable(queue: JobQueue) -> None:
    runs: list[int] = []

    async def flaky(job: Job) -> str:
        runs.append(job.attempts_started)
        if len(runs) == 1:
            await asyncio.sleep(0.05)  # past the 10 ms timeout: cancelled
        return "second try"

    worker = JobWorker(queue, {"flaky": flaky})
    job = await queue.add("flaky", None, attempts=2, timeout=0.01)
    async with running(worker):
        assert await asyncio.wait_for(job.wait(), LIMIT) == "second try"
    assert runs == [1, 2]


async def test_unrecoverable_error_is_terminal_despite_attempts(queue: JobQueue) -> None:
    runs = 0

    async def bad(job: Job) -> None:
        nonlocal runs
        runs += 1
        raise UnrecoverableError("bad input")

    dead: list[str] = []
    failed: list[str] = []
    worker = JobWorker(queue, {"bad": bad})
    worker.on("dead", lambda job, error: dead.append(job.id))
    worker.on("failed", lambda job, error: failed.append(job.id))
    job = await queue.add("bad", None, attempts=5, backoff=Backoff.fixed(0.01))
    async with running(worker):
        with pytest.raises(JobFailedError) as caught:
            await asyncio.wait_for(job.wait(), LIMIT)
        await asyncio.sleep(0.05)  # a retry (10 ms backoff) would have started by now

    assert "bad input" in caught.value.reason
    assert runs == 1
    stored = await queue.get_job(job.id)
    assert stored is not None
    assert stored.state == "failed"
    assert stored.attempts_made == 1
    assert dead == [job.id]
    assert failed == [job.id]
    assert worker.failed == 1


# ---------------------------------------------------------------------------- retries


async def test_retries_then_success(queue: JobQueue) -> None:
    runs: list[int] = []

    async def flaky(job: Job) -> str:
        runs.append(job.attempts_made)
        if len(runs) < 3:
            raise RuntimeError(f"boom {len(runs)}")
        return "finally"

    failed: list[tuple[str, BaseException]] = []
    dead: list[str] = []
    worker = JobWorker(queue, {"flaky": flaky})
    worker.on("failed", lambda job, error: failed.append((job.id, error)))
    worker.on("dead", lambda job, error: dead.append(job.id))
    job = await queue.add("flaky", None, attempts=3, backoff=Backoff.fixed(0.01))
    async with running(worker):
        assert await asyncio.wait_for(job.wait(), LIMIT) == "finally"

    assert runs == [0, 1, 2]  # BullMQ's attemptsMade: attempts that ended
    assert [job_id for job_id, _ in failed] == [job.id, job.id]
    assert [str(error) for _, error in failed] == ["boom 1", "boom 2"]
    assert dead == []
    stored = await queue.get_job(job.id)
    assert stored is not None
    assert stored.state == "completed"
    assert stored.attempts_made == 3
    assert stored.return_value == "finally"
    assert worker.processed == 1
    assert worker.failed == 0  # jobs failed for good
    assert worker.attempts_failed == 2


async def test_retries_exhausted_fire_dead_once(queue: JobQueue) -> None:
    runs = 0

    async def always(job: Job) -> None:
        nonlocal runs
        runs += 1
        raise RuntimeError("always broken")

    failed: list[str] = []
    dead: list[tuple[str, BaseException]] = []
    worker = JobWorker(queue, {"always": always})
    worker.on("failed", lambda job, error: failed.append(job.id))
    worker.on("dead", lambda job, error: dead.append((job.id, error)))
    job = await queue.add("always", None, attempts=2, backoff=Backoff.fixed(0.01))
    async with running(worker):
        with pytest.raises(JobFailedError) as caught:
            await asyncio.wait_for(job.wait(), LIMIT)

    assert "always broken" in caught.value.reason
    assert caught.value.job_id == job.id
    assert runs == 2
    assert failed == [job.id, job.id]
    assert [job_id for job_id, _ in dead] == [job.id]
    assert str(dead[0][1]) == "always broken"
    stored = await queue.get_job(job.id)
    assert stored is not None
    assert stored.state == "failed"
    assert stored.attempts_made == 2
    assert stored.failed_reason is not None and "always broken" in stored.failed_reason


# ------------------------------------------------------------------------- processors


async def test_default_processor_handles_every_name(queue: JobQueue) -> None:
    worker = JobWorker(queue)

    @worker.processor()
    async def anything(job: Job) -> str:
        return f"any:{job.name}"

    @worker.processor("special")
    async def special(job: Job) -> str:
        return "special"

    jobs = [await queue.add(name, None) for name in ("a", "b", "special", "c")]
    async with running(worker):
        results = await asyncio.wait_for(asyncio.gather(*(j.wait() for j in jobs)), LIMIT)
    assert results == ["any:a", "any:b", "special", "any:c"]


async def test_dict_of_processors(queue: JobQueue) -> None:
    async def add(job: Job) -> int:
        return int(job.data[0] + job.data[1])

    async def mul(job: Job) -> int:
        return int(job.data[0] * job.data[1])

    worker = JobWorker(queue, {"add": add, "mul": mul}, concurrency=2)
    a = await queue.add("add", [3, 4])
    m = await queue.add("mul", [3, 4])
    async with running(worker):
        assert await asyncio.wait_for(a.wait(), LIMIT) == 7
        assert await asyncio.wait_for(m.wait(), LIMIT) == 12


async def test_single_callable_handles_every_name(queue: JobQueue) -> None:
    async def echo(job: Job) -> str:
        return job.name

    worker = JobWorker(queue, echo)
    jobs = [await queue.add(name, None) for name in ("one", "two")]
    async with running(worker):
        results = await asyncio.wait_for(asyncio.gather(*(j.wait() for j in jobs)), LIMIT)
    assert results == ["one", "two"]


async def test_processor_registration_rejects_non_callable(queue: JobQueue) -> None:
    worker = JobWorker(queue)
    with pytest.raises(TypeError):
        worker.processor("x")(42)  # type: ignore[type-var]


async def test_progress_logs_and_data_inside_processor(queue: JobQueue) -> None:
    seen: dict[str, Any] = {}

    async def work(job: Job) -> int:
        await job.update_progress(50)
        count = await job.log("x")
        await job.update_data({"step": 2})
        fresh = await queue.get_job(job.id)
        assert fresh is not None
        seen["progress"] = fresh.progress
        seen["data"] = fresh.data
        seen["logs"] = await queue.get_logs(job.id)
        seen["local_data"] = job.data
        return count

    worker = JobWorker(queue, work)
    job = await queue.add("p", {"step": 1})
    async with running(worker):
        assert await asyncio.wait_for(job.wait(), LIMIT) == 1

    assert seen == {
        "progress": 50,
        "data": {"step": 2},
        "logs": (["x"], 1),
        "local_data": {"step": 2},
    }
    stored = await queue.get_job(job.id)
    assert stored is not None
    assert stored.progress == 50
    assert stored.data == {"step": 2}
    assert await stored.get_logs() == (["x"], 1)


# --------------------------------------------------------------- lease loss (scenario 27)


async def test_writes_refused_after_lease_loss(queue: JobQueue) -> None:
    seen: dict[str, Any] = {}
    refused: list[str] = []

    async def work(job: Job) -> str:
        # Everything this worker holds looks expired to a recovery run far in the future:
        # the job goes back to waiting, and a "thief" claims it under a new token.
        far = now_ms() + 3_600_000
        seen["recovered"] = await queue.recover_stalled(now=far)
        seen["state_after_recovery"] = await queue.get_state(job.id)
        [thief] = await queue.claim("thief", lease=30.0)
        seen["thief"] = thief
        writes: list[tuple[str, Callable[[], Awaitable[Any]]]] = [
            ("update_progress", lambda: job.update_progress(1)),
            ("log", lambda: job.log("late line")),
            ("update_data", lambda: job.update_data({"late": True})),
            ("ensure_lease", job.ensure_lease),
        ]
        for name, write in writes:
            try:
                await write()
            except LockMismatchError:
                refused.append(name)
        return "stale result"

    errors: list[BaseException] = []
    lost = asyncio.Event()
    completed: list[str] = []

    def on_error(error: BaseException) -> None:
        errors.append(error)
        lost.set()

    worker = JobWorker(queue, {"steal": work})
    worker.on("error", on_error)
    worker.on("completed", lambda job, result: completed.append(job.id))
    job = await queue.add("steal", {"orig": True})
    async with running(worker):
        await asyncio.wait_for(lost.wait(), LIMIT)

    assert seen["recovered"] == ([job.id], [])
    assert seen["state_after_recovery"] == "waiting"
    assert refused == ["update_progress", "log", "update_data", "ensure_lease"]
    assert len(errors) == 1
    assert isinstance(errors[0], LockLostWarning)
    assert errors[0].job_id == job.id
    assert completed == []
    assert worker.processed == 0

    # None of the refused writes landed, and the job belongs to the thief now.
    stored = await queue.get_job(job.id)
    assert stored is not None
    assert stored.state == "active"
    assert stored.stalled_count == 1
    assert stored.data == {"orig": True}
    assert stored.progress != 1
    assert await queue.get_logs(job.id) == ([], 0)
    assert (await queue.finished_result(job.id)).status == "pending"
    thief: Job = seen["thief"]
    assert thief.lock_token
    await queue.complete(job.id, thief.lock_token, "thief result")
    assert (await queue.finished_result(job.id)).value == "thief result"


# ---------------------------------------------------------------- delays, rate limits


async def test_delayed_error_parks_job_without_using_attempt(queue: JobQueue) -> None:
    runs: list[tuple[int, float]] = []
    seen: dict[str, str] = {}

    async def work(job: Job) -> str:
        runs.append((job.attempts_started, time.monotonic()))
        if len(runs) == 1:
            await job.move_to_delayed(0.05)
            seen["state"] = await queue.get_state(job.id)
            raise DelayedError("later")
        return "done"

    failed: list[str] = []
    worker = JobWorker(queue, {"d": work})
    worker.on("failed", lambda job, error: failed.append(job.id))
    job = await queue.add("d", None, attempts=1)
    async with running(worker):
        assert await asyncio.wait_for(job.wait(), LIMIT) == "done"

    assert seen["state"] == "delayed"
    assert [attempts for attempts, _ in runs] == [1, 1]
    assert runs[1][1] - runs[0][1] >= 0.04  # 50 ms delay, 1 ms rounding allowed
    assert failed == []
    assert worker.failed == 0
    stored = await queue.get_job(job.id)
    assert stored is not None
    assert stored.state == "completed"
    assert stored.attempts_made == 1


async def test_rate_limit_error_releases_job_and_pauses_claiming(queue: JobQueue) -> None:
    PAUSE = 0.4
    loop = asyncio.get_running_loop()
    runs: list[tuple[str, int, float]] = []
    first = asyncio.Event()

    async def work(job: Job) -> str:
        runs.append((job.id, job.attempts_started, loop.time()))
        if len(runs) == 1:
            first.set()
            raise RateLimitError(delay=PAUSE)
        return f"ok:{job.id}"

    failed: list[str] = []
    worker = JobWorker(queue, work, concurrency=1)
    worker.on("failed", lambda job, error: failed.append(job.id))
    a = await queue.add("r", None, attempts=1)
    b = await queue.add("r", None, attempts=1)
    async with running(worker):
        await asyncio.wait_for(first.wait(), LIMIT)
        # Both wait again inside the pause: the release may follow a claim already in flight
        # (claimed ahead, given back), so it is awaited, not read once after a fixed sleep.
        states: list[str] = []
        while loop.time() < runs[0][2] + PAUSE / 2:
            states = [await queue.get_state(a.id), await queue.get_state(b.id)]
            if states == ["waiting", "waiting"]:
                break
            await asyncio.sleep(0.005)
        assert states == ["waiting", "waiting"]
        assert await asyncio.wait_for(a.wait(), LIMIT) == f"ok:{a.id}"
        assert await asyncio.wait_for(b.wait(), LIMIT) == f"ok:{b.id}"

    # The released job went back to the front and ran again on the same attempt, and
    # nothing was claimed during the pause.
    assert [(job_id, attempts) for job_id, attempts, _ in runs] == [
        (a.id, 1),
        (a.id, 1),
        (b.id, 1),
    ]
    assert runs[1][2] - runs[0][2] >= PAUSE - 0.005
    assert failed == []
    stored = await queue.get_job(a.id)
    assert stored is not None
    assert stored.attempts_made == 1


async def test_rate_limit_pause_does_not_busy_poll(queue: JobQueue) -> None:
    """While paused by a RateLimitError the worker must sleep, not spin on the queue."""
    calls = {"wait_for_job": 0, "claim": 0, "wait_and_claim": 0}
    original_wait = queue.wait_for_job
    original_claim = queue.claim
    original_wait_and_claim = queue._wait_and_claim

    async def counting_wait(timeout: float | None = None) -> bool:
        calls["wait_for_job"] += 1
        return await original_wait(timeout)

    async def counting_claim(*args: Any, **kwargs: Any) -> list[Job]:
        calls["claim"] += 1
        return await original_claim(*args, **kwargs)

    def counting_wait_and_claim(*args: Any) -> Any:
        calls["wait_and_claim"] += 1
        return original_wait_and_claim(*args)

    queue.wait_for_job = counting_wait  # type: ignore[method-assign]
    queue.claim = counting_claim  # type: ignore[method-assign]
    queue._wait_and_claim = counting_wait_and_claim  # type: ignore[method-assign]
    runs = 0

    async def work(job: Job) -> str:
        nonlocal runs
        runs += 1
        if runs == 1:
            raise RateLimitError(delay=0.2)
        return "ok"

    worker = JobWorker(queue, work)
    job = await queue.add("r", None)
    async with running(worker):
        assert await asyncio.wait_for(job.wait(), LIMIT) == "ok"
    assert runs == 2
    # A sleeping worker needs a handful of calls; a spinning one makes thousands.
    assert calls["claim"] <= 10, calls
    assert calls["wait_for_job"] <= 10, calls
    assert calls["wait_and_claim"] <= 10, calls


# ------------------------------------------------------------------------------ close


async def test_graceful_close_finishes_and_reports_running_job(queue: JobQueue) -> None:
    started = asyncio.Event()
    ran: list[str] = []

    async def work(job: Job) -> str:
        ran.append(job.id)
        started.set()
        await asyncio.sleep(0.1)
        return f"done:{job.id}"

    completed: list[str] = []
    worker = JobWorker(queue, work, concurrency=1)
    worker.on("completed", lambda job, result: completed.append(job.id))
    a = await queue.add("s", "a")
    b = await queue.add("s", "b")
    task = asyncio.get_running_loop().create_task(worker.run())
    try:
        await asyncio.wait_for(started.wait(), LIMIT)
        assert await queue.get_state(a.id) == "active"
        await asyncio.wait_for(worker.close(), LIMIT)
        # close() returned only after the running job finished and was reported.
        assert task.done()
        assert await queue.get_state(a.id) == "completed"
        assert (await queue.finished_result(a.id)).value == f"done:{a.id}"
        assert completed == [a.id]
        assert worker.processed == 1
        # Nothing was claimed once close() was called, not even work added afterwards.
        c = await queue.add("s", "c")
        await asyncio.sleep(0.05)
        assert ran == [a.id]
        assert await queue.get_state(b.id) == "waiting"
        assert await queue.get_state(c.id) == "waiting"
        task.result()
    finally:
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


async def test_forced_close_abandons_job_to_stalled_recovery(queue: JobQueue) -> None:
    started = asyncio.Event()
    cancelled: list[str] = []

    async def slow(job: Job) -> str:
        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.append(job.id)
            raise
        return "never"

    reported: list[str] = []
    lease = 5.0
    worker = JobWorker(queue, {"slow": slow}, lease=lease)
    worker.on("completed", lambda job, result: reported.append(f"completed:{job.id}"))
    worker.on("failed", lambda job, error: reported.append(f"failed:{job.id}"))
    worker.on("dead", lambda job, error: reported.append(f"dead:{job.id}"))
    job = await queue.add("slow", None, attempts=1)
    task = asyncio.get_running_loop().create_task(worker.run())
    try:
        await asyncio.wait_for(started.wait(), LIMIT)
        before = now_ms()
        await asyncio.wait_for(worker.close(force=True), LIMIT)
        assert task.done()
        task.result()
    finally:
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    assert cancelled == [job.id]
    assert reported == []
    assert worker.processed == 0 and worker.failed == 0
    stored = await queue.get_job(job.id)
    assert stored is not None
    assert stored.state == "active"
    assert stored.lock_token  # still held by the abandoned lease
    assert (await queue.finished_result(job.id)).status == "pending"

    # The lease has not expired yet on the wall clock: nothing to recover.
    assert await queue.recover_stalled() == ([], [])
    # Past the lease, the job goes back to waiting with its attempt given back.
    past = before + int(lease * 1000) + 1000
    assert await queue.recover_stalled(now=past) == ([job.id], [])
    stored = await queue.get_job(job.id)
    assert stored is not None
    assert stored.state == "waiting"
    assert stored.stalled_count == 1
    assert stored.attempts_made == 0

    async def quick(job: Job) -> str:
        return f"rescued:{job.attempts_started}"

    second = JobWorker(queue, {"slow": quick})
    async with running(second):
        assert await asyncio.wait_for(job.wait(), LIMIT) == "rescued:1"
    assert await queue.get_state(job.id) == "completed"


# ------------------------------------------------------------- renewal and recovery


async def test_lease_is_renewed_while_job_runs(queue: JobQueue) -> None:
    started = asyncio.Event()

    async def long(job: Job) -> str:
        started.set()
        await asyncio.sleep(1.2)  # longer than the lease: only renewals keep it
        return "ok"

    # Margins wide enough for a loaded machine: a renewal may be late by up to 0.75 s.
    worker = JobWorker(queue, {"long": long}, lease=0.9, renew_every=0.15)
    job = await queue.add("long", None)
    stolen: list[str] = []
    async with running(worker):
        await asyncio.wait_for(started.wait(), LIMIT)

        async def watch() -> None:
            while await queue.get_state(job.id) == "active":
                recovered, failed = await queue.recover_stalled()
                stolen.extend(recovered + failed)
                await asyncio.sleep(0.05)

        await asyncio.wait_for(watch(), LIMIT)
        assert await asyncio.wait_for(job.wait(), LIMIT) == "ok"

    assert stolen == []
    stored = await queue.get_job(job.id)
    assert stored is not None
    assert stored.state == "completed"
    assert stored.stalled_count == 0
    assert worker.processed == 1


async def test_job_whose_lease_ran_out_before_it_started_is_released_unstarted(
    queue: JobQueue,
) -> None:
    # Two jobs of one claim: the first blocks the event loop past the lease, so when the
    # second's turn to start comes its lease has run out. Run, it would be taken by stalled
    # recovery and run a second time (a stall it never had counted); it is given back instead.
    runs = {"blocker": 0, "innocent": 0}

    async def work(job: Job) -> str:
        runs[job.name] += 1
        if job.name == "blocker" and runs["blocker"] == 1:
            time.sleep(2.0)  # noqa: ASYNC251 - the defect under test: the loop blocked past the lease
        return job.name

    await queue.add("blocker", None)
    innocent = await queue.add("innocent", None)
    # (no stalled recovery of its own meanwhile: it would race the release; one that wins
    # takes the job first, and the release is refused, as it should be)
    worker = JobWorker(queue, work, concurrency=4, lease=1.0, stalled_interval=60.0)
    async with running(worker):
        assert await asyncio.wait_for(innocent.wait(), LIMIT) == "innocent"

    # (the blocker's own lease ran out while it ran: its completion was refused, and stalled
    # recovery will give it back; that is the blocker's doing)
    assert runs == {"blocker": 1, "innocent": 1}
    stored = await queue.get_job(innocent.id)
    assert stored is not None
    assert (stored.state, stored.attempts_made, stored.stalled_count) == ("completed", 1, 0)


async def test_worker_recovers_stalled_job_of_dead_worker(queue: JobQueue) -> None:
    async def work(job: Job) -> str:
        return f"recovered:{job.attempts_started}"

    stalled: list[str] = []
    worker = JobWorker(queue, {"s": work}, stalled_interval=0.05)
    worker.on("stalled", stalled.append)
    job = await queue.add("s", None)
    [held] = await queue.claim("dead-worker", lease=0.05)  # never completed
    assert held.id == job.id
    async with running(worker):
        assert await asyncio.wait_for(job.wait(), LIMIT) == "recovered:1"

    assert stalled == [job.id]
    stored = await queue.get_job(job.id)
    assert stored is not None
    assert stored.state == "completed"
    assert stored.stalled_count == 1


async def test_worker_fails_job_stalled_past_limit(queue: JobQueue) -> None:
    ran: list[str] = []

    async def work(job: Job) -> str:
        ran.append(job.id)
        return "ran"

    stalled: list[str] = []
    dead: list[tuple[str, BaseException]] = []
    worker = JobWorker(queue, {"s": work}, stalled_interval=0.05)
    worker.on("stalled", stalled.append)
    worker.on("dead", lambda job, error: dead.append((job.id, error)))
    job = await queue.add("s", None, max_stalled_count=0)
    await queue.claim("dead-worker", lease=0.05)
    async with running(worker):
        with pytest.raises(JobFailedError) as caught:
            await asyncio.wait_for(job.wait(), LIMIT)

    assert "stalled" in caught.value.reason
    assert ran == []
    assert stalled == [job.id]
    assert [job_id for job_id, _ in dead] == [job.id]
    assert "stalled" in str(dead[0][1])
    assert await queue.get_state(job.id) == "failed"


# ------------------------------------------------------------------------------ hooks


async def test_raising_hook_is_logged_and_does_not_fail_job(
    queue: JobQueue, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="lanemq.worker")

    async def work(job: Job) -> str:
        return "fine"

    def bad_hook(job: Job, result: Any) -> None:
        raise RuntimeError("hook boom")

    async def bad_async_hook(job: Job, result: Any) -> None:
        raise RuntimeError("async hook boom")

    later: list[str] = []
    worker = JobWorker(queue, work)
    worker.on("completed", bad_hook)
    worker.on("completed", bad_async_hook)
    worker.on("completed", lambda job, result: later.append(job.id))
    job = await queue.add("h", None)
    async with running(worker):
        assert await asyncio.wait_for(job.wait(), LIMIT) == "fine"

    assert await queue.get_state(job.id) == "completed"
    assert worker.processed == 1
    assert worker.failed == 0
    assert later == [job.id]  # hooks after the raising ones still ran
    logged = [r for r in caplog.records if r.name == "lanemq.worker" and r.exc_info]
    messages = [str(r.exc_info[1]) for r in logged if r.exc_info]
    assert "hook boom" in messages
    assert "async hook boom" in messages


# ------------------------------------------------------------------------ lifecycle


async def test_async_with_runs_in_background_and_stops_on_exit(queue: JobQueue) -> None:
    async def work(job: Job) -> str:
        return f"bg:{job.id}"

    job = await queue.add("j", None)
    async with JobWorker(queue, work) as worker:
        assert isinstance(worker, JobWorker)
        assert await asyncio.wait_for(job.wait(), LIMIT) == f"bg:{job.id}"
        await asyncio.wait_for(worker.run(), LIMIT)  # running already: returns at once

    later = await queue.add("j", None)
    await asyncio.sleep(0.05)
    assert await queue.get_state(later.id) == "waiting"
    assert worker.processed == 1


async def test_run_and_close_from_another_task(queue: JobQueue) -> None:
    async def work(job: Job) -> int:
        return int(job.data) + 1

    worker = JobWorker(queue, work)
    task = asyncio.get_running_loop().create_task(worker.run())
    try:
        job = await queue.add("j", 41)
        assert await asyncio.wait_for(job.wait(), LIMIT) == 42
        assert not task.done()

        async def closer() -> None:
            await worker.close()

        await asyncio.wait_for(asyncio.get_running_loop().create_task(closer()), LIMIT)
        await asyncio.wait_for(task, LIMIT)
        assert task.result() is None
    finally:
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


async def test_run_twice_concurrently_starts_one_loop(queue: JobQueue) -> None:
    async def work(job: Job) -> str:
        return "ok"

    worker = JobWorker(queue, work)
    async with running(worker):
        await asyncio.wait_for(worker.run(), LIMIT)  # returns at once: one loop per worker
        # The first run is unaffected by the second one.
        job = await queue.add("j", None)
        assert await asyncio.wait_for(job.wait(), LIMIT) == "ok"


# ---------------------------------------------------------------------- configuration


@pytest.mark.parametrize(
    "settings",
    [
        {"concurrency": 0},
        {"concurrency": -1},
        {"lease": 0},
        {"lease": -1.0},
        {"lease": 1.0, "renew_every": 1.0},
        {"lease": 1.0, "renew_every": 2.0},
        {"lease": 1.0, "renew_every": 0},
        {"stalled_interval": 0},
    ],
    ids=lambda settings: ",".join(f"{k}={v}" for k, v in settings.items()),
)
async def test_invalid_settings_raise_config_error(
    queue: JobQueue, settings: dict[str, Any]
) -> None:
    with pytest.raises(ConfigError) as caught:
        JobWorker(queue, **settings)
    assert isinstance(caught.value, ValueError)
    assert any(name in str(caught.value) for name in settings)


async def test_unknown_hook_raises_value_error(queue: JobQueue) -> None:
    worker = JobWorker(queue)
    with pytest.raises(ValueError):
        worker.on("bogus", lambda *args: None)
