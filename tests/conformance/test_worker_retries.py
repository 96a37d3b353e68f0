"""Conformance on every backend of the worker's own retry rules: retries by exception type
(``retry_on`` / ``no_retry_on``, on the worker and on a processor) and custom backoff
strategies (``backoff_strategies`` with `Backoff.custom`), whose delay the worker computes and
every backend honours."""

from __future__ import annotations

import asyncio
import re
import time
from typing import Any

import pytest
from lanemq import Backoff, ConfigError, Job, JobQueue, JobWorker, UnrecoverableError
from support import EPOCH_MS as T

from .helpers import stored_job

LIMIT = 10.0


async def run_one(worker: JobWorker) -> tuple[int, int]:
    """Runs ``worker`` until idle; returns the time window (ms) it ran in."""
    before = int(time.time() * 1000)
    await asyncio.wait_for(worker.run_until_idle(), LIMIT)
    return before, int(time.time() * 1000)


def raising(error: BaseException) -> Any:
    async def fail(job: Job) -> None:
        raise error

    return fail


# ---------------------------------------------------------------- retries by exception type


@pytest.mark.parametrize(
    ("options", "error", "retried"),
    [
        ({"retry_on": KeyError}, KeyError("k"), True),
        ({"retry_on": (KeyError, OSError)}, FileNotFoundError("f"), True),  # a subclass
        ({"retry_on": (KeyError,)}, ValueError("v"), False),
        ({"retry_on": ()}, ValueError("v"), False),  # nothing is retried
        ({"no_retry_on": ValueError}, ValueError("v"), False),
        ({"no_retry_on": LookupError}, KeyError("k"), False),  # a subclass
        ({"no_retry_on": (ValueError,)}, KeyError("k"), True),
        ({"retry_on": Exception, "no_retry_on": ValueError}, ValueError("v"), False),
        ({"retry_on": Exception, "no_retry_on": ValueError}, KeyError("k"), True),
        ({"retry_on": UnrecoverableError}, UnrecoverableError("u"), False),  # always final
    ],
)
async def test_worker_retries_only_the_chosen_exception_types(
    queue: JobQueue, options: dict[str, Any], error: BaseException, retried: bool
) -> None:
    dead: list[str] = []
    worker = JobWorker(queue, raising(error), **options)
    worker.on("dead", lambda job, error: dead.append(job.id))
    job = await queue.add("x", None, attempts=3, backoff=Backoff.fixed(60))
    await run_one(worker)
    stored = await stored_job(queue, job.id)
    assert stored.attempts_made == 1
    assert type(error).__name__ in (stored.failed_reason or "")
    if retried:
        assert stored.state == "delayed"
        assert dead == []
    else:
        # Failed for good at once, the two attempts left unused, as UnrecoverableError does.
        assert stored.state == "failed"
        assert dead == [job.id]
        assert worker.failed == 1


async def test_a_processor_s_own_keywords_replace_the_worker_s(queue: JobQueue) -> None:
    worker = JobWorker(queue, retry_on=KeyError, no_retry_on=OSError)

    @worker.processor("own", retry_on=ValueError)  # no_retry_on stays the worker's
    async def own(job: Job) -> None:
        raise ValueError(job.data)

    @worker.processor("plain")
    async def plain(job: Job) -> None:
        raise ValueError(job.data)

    @worker.processor("own_os", retry_on=OSError, no_retry_on=())
    async def own_os(job: Job) -> None:
        raise FileNotFoundError(job.data)

    @worker.processor(no_retry_on=KeyError)  # the default processor: every other name
    async def default(job: Job) -> None:
        raise KeyError(job.data)

    jobs = {
        name: await queue.add(name, name, attempts=2, backoff=Backoff.fixed(60))
        for name in ["own", "plain", "own_os", "other"]
    }
    await run_one(worker)
    states = {name: (await stored_job(queue, job.id)).state for name, job in jobs.items()}
    assert states == {
        "own": "delayed",  # ValueError is in its own retry_on
        "plain": "failed",  # the worker's retry_on: KeyError only
        "own_os": "delayed",  # its own no_retry_on (none) replaced the worker's OSError
        "other": "failed",  # the default processor's own no_retry_on
    }


async def test_a_processor_registered_again_drops_its_own_keywords(queue: JobQueue) -> None:
    worker = JobWorker(queue)
    worker.processor("x", no_retry_on=ValueError)(raising(ValueError("v")))
    worker.processor("x")(raising(ValueError("v")))
    job = await queue.add("x", None, attempts=2, backoff=Backoff.fixed(60))
    await run_one(worker)
    assert (await stored_job(queue, job.id)).state == "delayed"


@pytest.mark.parametrize(
    ("keyword", "bad"),
    [
        ("retry_on", "ValueError"),
        ("retry_on", ValueError("not a class")),
        ("retry_on", (ValueError, 3)),
        ("retry_on", [ValueError]),
        ("no_retry_on", int),
        ("no_retry_on", (KeyError, object)),
    ],
)
async def test_bad_exception_types_are_refused_naming_the_value(
    queue: JobQueue, keyword: str, bad: Any
) -> None:
    with pytest.raises(ConfigError, match=f"invalid {keyword}: {re.escape(repr(bad))}"):
        JobWorker(queue, raising(ValueError()), **{keyword: bad})
    worker = JobWorker(queue)
    with pytest.raises(ConfigError, match=f"invalid {keyword}"):
        worker.processor("x", **{keyword: bad})
    with pytest.raises(ConfigError, match=f"invalid {keyword}"):
        worker.processor(**{keyword: bad})
    job = await queue.add("x", None, attempts=2, backoff=Backoff.fixed(60))
    # Nothing was registered: the job has no processor and fails as such.
    await run_one(worker)
    stored = await stored_job(queue, job.id)
    assert stored.state == "failed"
    assert "no processor" in (stored.failed_reason or "")


# ------------------------------------------------------------------------ custom backoff


async def test_a_custom_backoff_delays_each_retry_as_its_strategy_says(queue: JobQueue) -> None:
    calls: list[tuple[int, str, str]] = []

    def linear(attempts_made: int, error: BaseException, job: Job) -> float:
        calls.append((attempts_made, repr(error), job.id))
        return 10.0 * attempts_made

    worker = JobWorker(queue, raising(ValueError("down")), backoff_strategies={"linear": linear})
    job = await queue.add("x", None, attempts=3, backoff=Backoff.custom("linear"))
    stored = await stored_job(queue, job.id)
    backoff = stored.options.backoff
    assert backoff is not None and (backoff.kind, backoff.name) == ("custom", "linear")
    assert '"name":"linear"' in stored.options.to_json()  # stored as JSON, like other backoffs

    for retry, seconds in [(1, 10_000), (2, 20_000)]:
        before, after = await run_one(worker)
        stored = await stored_job(queue, job.id)
        assert stored.state == "delayed"  # not waiting: delayed until its due time
        assert before + seconds <= stored.delay_until <= after + seconds
        assert calls[-1] == (retry, "ValueError('down')", job.id)
        # Not claimable before it is due; claimable at the due time.
        assert await queue.claim("w", now=stored.delay_until - 1) == []
        await queue.promote_due(now=stored.delay_until)
        assert await queue.get_state(job.id) == "waiting"

    # The last attempt fails for good with its own error: the strategy is not asked.
    await run_one(worker)
    stored = await stored_job(queue, job.id)
    assert stored.state == "failed"
    assert stored.failed_reason == "ValueError: down"
    assert len(calls) == 2


async def test_an_async_strategy_is_awaited_and_zero_retries_at_once(queue: JobQueue) -> None:
    runs: list[int] = []

    async def processor(job: Job) -> str:
        runs.append(job.attempts_started)
        if job.attempts_started == 1:
            raise ValueError("first")
        return "ok"

    async def at_once(attempts_made: int, error: BaseException, job: Job) -> int:
        await asyncio.sleep(0)
        return 0

    worker = JobWorker(queue, processor, backoff_strategies={"now": at_once})
    job = await queue.add("x", None, attempts=2, backoff=Backoff.custom("now"))
    await run_one(worker)
    assert runs == [1, 2]
    assert (await stored_job(queue, job.id)).state == "completed"


async def test_an_unknown_strategy_fails_the_job_at_its_first_retry(queue: JobQueue) -> None:
    dead: list[BaseException] = []
    worker = JobWorker(
        queue, raising(ValueError("boom")), backoff_strategies={"b": lambda *a: 1, "a": min}
    )
    worker.on("dead", lambda job, error: dead.append(error))
    job = await queue.add("x", None, attempts=5, backoff=Backoff.custom("missing"))
    await run_one(worker)
    stored = await stored_job(queue, job.id)
    assert stored.state == "failed"
    assert stored.attempts_made == 1
    reason = stored.failed_reason or ""
    assert "unknown backoff strategy 'missing'" in reason
    assert "knows: a, b" in reason
    assert "ValueError('boom')" in reason
    assert len(dead) == 1 and isinstance(dead[0], ConfigError)


async def test_a_worker_without_strategies_names_none(queue: JobQueue) -> None:
    job = await queue.add("x", None, attempts=2, backoff=Backoff.custom("missing"))
    await run_one(JobWorker(queue, raising(ValueError("boom"))))
    stored = await stored_job(queue, job.id)
    assert stored.state == "failed"
    assert "unknown backoff strategy 'missing' (this worker knows: none)" in (
        stored.failed_reason or ""
    )


def _raises(attempts_made: int, error: BaseException, job: Job) -> float:
    raise RuntimeError("strategy broke")


@pytest.mark.parametrize(
    ("strategy", "said"),
    [
        (_raises, "raised RuntimeError('strategy broke')"),
        (lambda *a: -1, "returned -1"),
        (lambda *a: "5", "returned '5'"),
        (lambda *a: float("nan"), "returned nan"),
        (lambda *a: True, "returned True"),
        (lambda *a: None, "returned None"),
    ],
)
async def test_a_strategy_that_raises_or_returns_a_bad_value_fails_the_job(
    queue: JobQueue, strategy: Any, said: str
) -> None:
    worker = JobWorker(queue, raising(ValueError("boom")), backoff_strategies={"s": strategy})
    job = await queue.add("x", None, attempts=3, backoff=Backoff.custom("s"))
    await run_one(worker)
    stored = await stored_job(queue, job.id)
    assert stored.state == "failed"
    assert stored.attempts_made == 1
    assert f"backoff strategy 's' {said}" in (stored.failed_reason or "")


@pytest.mark.parametrize(
    ("bad", "named"),
    [
        ({"s": 3}, "backoff_strategies['s']: 3"),
        ({"": min}, "backoff_strategies name: ''"),
        ({1: min}, "backoff_strategies name: 1"),
        ([("s", min)], "backoff_strategies: [('s', <built-in function min>)]"),
    ],
)
def test_bad_backoff_strategies_are_refused_naming_the_value(
    queue: JobQueue, bad: Any, named: str
) -> None:
    with pytest.raises(ConfigError, match=re.escape(f"invalid {named}")):
        JobWorker(queue, backoff_strategies=bad)


@pytest.mark.parametrize("bad", ["", 3, None])
async def test_a_bad_custom_backoff_name_is_refused_and_adds_nothing(
    queue: JobQueue, bad: Any
) -> None:
    with pytest.raises(ConfigError, match="invalid backoff strategy name"):
        await queue.add("x", None, backoff=Backoff.custom(bad))
    assert await queue.count_pending() == 0


async def test_a_failure_reported_without_a_worker_retries_a_custom_backoff_at_once(
    queue: JobQueue,
) -> None:
    # Only a worker knows the strategies: `queue.fail` without `delay=` retries at once,
    # with `delay=` after it, alike on every backend (the Lua script included).
    job = await queue.add("x", None, attempts=3, backoff=Backoff.custom("s"), now=T)
    (claimed,) = await queue.claim("w", now=T)
    assert claimed.lock_token is not None
    assert await queue.fail(job.id, claimed.lock_token, "down", now=T) is True
    assert await queue.get_state(job.id) == "waiting"
    (again,) = await queue.claim("w", now=T + 1)
    assert again.lock_token is not None
    assert await queue.fail(job.id, again.lock_token, "down", delay=3.0, now=T + 1) is True
    stored = await stored_job(queue, job.id)
    assert (stored.state, stored.delay_until) == ("delayed", T + 1 + 3000)


async def test_batch_processors_follow_the_worker_s_rule(queue: JobQueue) -> None:
    worker = JobWorker(queue, no_retry_on=KeyError)

    @worker.processor(no_retry_on=())  # the default processor's rule is its own
    async def default(job: Job) -> None:
        raise KeyError(job.name)

    @worker.batch_processor("many", size=2, min_size=1, timeout=0)
    async def many(jobs: list[Job]) -> list[None]:
        raise KeyError("batch")

    batched = await queue.add("many", None, attempts=2, backoff=Backoff.fixed(60))
    other = await queue.add("other", None, attempts=2, backoff=Backoff.fixed(60))
    await run_one(worker)
    assert (await stored_job(queue, batched.id)).state == "failed"
    assert (await stored_job(queue, other.id)).state == "delayed"
