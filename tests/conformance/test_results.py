"""Job results on every backend: each is encoded on its own, so one the queue cannot take
fails that job alone (retried by its policy) and the others completed with it keep their
values; a result over the queue's ``max_payload_bytes`` is refused as data over it is,
before anything is written."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from lanemq import Job, JobQueue, JobWorker

LIMIT = 30.0  # the oversized result is encoded once per attempt: 16 MiB of JSON


def oversized(queue: JobQueue) -> str:
    return "x" * (queue.max_payload_bytes + 1)


async def test_one_bad_result_fails_only_its_job_and_is_retried(queue: JobQueue) -> None:
    results: dict[str, Any] = {
        "dict": {"n": 1},
        "set": {1, 2},
        "none": None,
        "big": oversized(queue),
        "surrogate": {"text": "\ud800"},
        "list": [1, "two"],
        "accents": "d\u00e9j\u00e0 vu",
    }
    runs: dict[str, int] = dict.fromkeys(results, 0)
    all_started = asyncio.Event()

    async def give(job: Job) -> Any:
        runs[job.name] += 1
        if sum(runs.values()) == len(results):
            all_started.set()
        # The first attempts end together, so their completions are reported together.
        await all_started.wait()
        return results[job.name]

    jobs = {name: await queue.add(name, None, attempts=2) for name in results}
    worker = JobWorker(queue, give, concurrency=len(results))
    dead: list[str] = []
    worker.on("dead", lambda job, error: dead.append(job.name))
    # The seven first attempts and the three retries.
    assert await asyncio.wait_for(worker.run_until_idle(), LIMIT) == 10

    assert runs == {
        "dict": 1,
        "set": 2,
        "none": 1,
        "big": 2,
        "surrogate": 2,
        "list": 1,
        "accents": 1,
    }
    for name in ("dict", "none", "list", "accents"):
        assert (await queue.finished_result(jobs[name].id)).value == results[name], name
    assert worker.processed == 4 and worker.failed == 3 and worker.attempts_failed == 6
    assert sorted(dead) == ["big", "set", "surrogate"]

    size = queue.max_payload_bytes + 3  # the big string's JSON: its quotes too
    reasons = {
        "set": "TypeError: return value of job {id!r} is not JSON-serialisable: "
        "Object of type set is not JSON serializable",
        "surrogate": "ValueError: return value of job {id!r} holds a lone surrogate, "
        "which is not valid Unicode text",
        "big": "ValueError: return value of job {id!r} is "
        f"{size} bytes of JSON, over the queue's max_payload_bytes ({queue.max_payload_bytes})",
    }
    for name, reason in reasons.items():
        bad = await queue.get_job(jobs[name].id)
        assert bad is not None, name
        assert (bad.state, bad.attempts_made) == ("failed", 2), name
        assert bad.failed_reason == reason.format(id=bad.id), name


async def test_complete_refuses_a_result_over_the_limit_and_writes_nothing(
    queue: JobQueue,
) -> None:
    await queue.add("big", None)
    await queue.add("fine", None)
    big, fine = await queue.claim("w", 30.0, 2)
    assert big.lock_token is not None and fine.lock_token is not None
    size = queue.max_payload_bytes + 3
    with pytest.raises(ValueError, match=rf"job {big.id!r} is {size} bytes of JSON, over"):
        await queue.complete(big.id, big.lock_token, oversized(queue))
    with pytest.raises(TypeError, match=rf"job {big.id!r} is not JSON-serialisable"):
        await queue.complete(big.id, big.lock_token, {1})
    with pytest.raises(ValueError, match=rf"job {big.id!r} is {size} bytes"):
        await queue.complete_many(
            [(fine.id, fine.lock_token, "ok"), (big.id, big.lock_token, oversized(queue))]
        )
    # Nothing was written: both are still held, and complete once their results fit.
    assert [await queue.get_state(j.id) for j in (big, fine)] == ["active", "active"]
    assert (
        await queue.complete_many(
            [(fine.id, fine.lock_token, "ok"), (big.id, big.lock_token, "small")]
        )
        == []
    )
    assert (await queue.finished_result(big.id)).value == "small"
    assert (await queue.finished_result(fine.id)).value == "ok"
