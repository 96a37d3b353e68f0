"""``add(..., repeat=...)``, BullMQ's legacy repeat option: it makes a job scheduler keyed by
BullMQ's repeat key and returns its first occurrence; adding the same repeat again makes no
second scheduler; ``remove_scheduler`` stops it; ``add_bulk`` and flows refuse it."""

from __future__ import annotations

from typing import Any

import pytest
from lanemq import ConfigError, FlowJob, JobQueue, Repeat
from support import EPOCH_MS as T


def rid(key: str, run: int) -> str:
    return f"repeat:{key}:{run}"


async def nothing_written(queue: JobQueue) -> None:
    assert await queue.count_schedulers() == 0
    assert sum((await queue.get_job_counts()).values()) == 0
    assert await queue.read_events() == []


async def test_repeat_makes_a_scheduler_and_returns_its_first_occurrence(queue: JobQueue) -> None:
    job = await queue.add("tick", {"n": 1}, repeat=Repeat(every=1.0), priority=3, now=T)
    key = "tick::::1000"  # name : job_id : end : tz : every (ms), as BullMQ's repeat key
    assert Repeat(every=1.0).scheduler_key("tick") == key
    assert (job.id, job.state, job.name, job.data) == (rid(key, T), "waiting", "tick", {"n": 1})
    assert (job.scheduler_key, job.priority) == (key, 3)
    [listed] = await queue.list_schedulers()
    assert (listed.key, listed.every, listed.name, listed.job_id) == (key, 1.0, "tick", job.id)
    assert listed.options.priority == 3

    # The same repeat again: the same scheduler, its pending occurrence, nothing added.
    again = await queue.add("tick", {"n": 1}, repeat={"every": 1.0}, priority=3, now=T + 5)
    assert again.id == job.id
    assert await queue.count_schedulers() == 1
    assert await queue.get_job_counts("waiting") == {"waiting": 1}

    # Its occurrences follow the schedule, as any scheduler's.
    claimed = await queue.claim("w", lease=60.0, max_jobs=5, now=T)
    assert [j.id for j in claimed] == [rid(key, T)]
    assert (await queue.get_scheduler(key)) is not None
    assert [j.id for j in await queue.list_jobs(["delayed"])] == [rid(key, T + 1000)]

    assert await queue.remove_scheduler(job.scheduler_key or "", now=T + 10) is True
    assert await queue.count_schedulers() == 0
    assert await queue.list_jobs(["waiting", "delayed"]) == []


async def test_a_cron_repeat_with_a_job_id_and_a_zone(queue: JobQueue) -> None:
    berlin_nine = 1_700_035_200_000  # 2023-11-15 09:00 in Berlin (08:00 UTC), after T
    repeat = {"pattern": "0 9 * * *", "tz": "Europe/Berlin", "limit": 2}
    job = await queue.add("report", None, {"repeat": repeat, "attempts": 2}, job_id="daily", now=T)
    key = "report:daily::Europe/Berlin:0 9 * * *"
    assert (job.id, job.state, job.delay_until) == (rid(key, berlin_nine), "delayed", berlin_nine)
    # The job id names the scheduler; the occurrences carry none of their own.
    assert job.options.job_id == job.id and job.options.attempts == 2
    got = await queue.get_scheduler(key)
    assert got is not None
    assert (got.cron, got.tz, got.limit, got.options.job_id) == (
        "0 9 * * *",
        "Europe/Berlin",
        2,
        None,
    )
    # Another job id is another scheduler, as in BullMQ.
    other = await queue.add("report", None, repeat=Repeat(**repeat), job_id="other", now=T)
    assert other.scheduler_key == "report:other::Europe/Berlin:0 9 * * *"
    assert await queue.count_schedulers() == 2


REFUSED: list[tuple[dict[str, Any], str]] = [
    ({"repeat": Repeat(every=1.0), "delay": 5.0}, "invalid delay: 5.0"),
    ({"repeat": {"every": 1.0, "cron": "* * * * *"}}, "invalid repeat option 'cron'"),
    ({"repeat": Repeat()}, "neither every nor cron"),
    ({"repeat": Repeat(every=1.0, pattern="* * * * *")}, "give exactly one"),
    ({"repeat": Repeat(pattern="0 9 * * *", tz="Mars/Olympus")}, "Mars/Olympus"),
    ({"repeat": Repeat(every=1.0, limit=0)}, "invalid limit: 0"),
]


@pytest.mark.parametrize(("kwargs", "fragment"), REFUSED, ids=[f for _, f in REFUSED])
async def test_a_bad_repeat_is_refused_and_writes_nothing(
    queue: JobQueue, kwargs: dict[str, Any], fragment: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        await queue.add("x", None, **kwargs, now=T)
    assert fragment in str(raised.value)
    await nothing_written(queue)


async def test_add_bulk_and_flows_refuse_repeat(queue: JobQueue) -> None:
    with pytest.raises(ConfigError, match="repeat"):
        await queue.add_bulk([("a", 1), ("b", 2, {"repeat": {"every": 1.0}})], now=T)
    with pytest.raises(ConfigError, match="repeat"):
        await queue.add_flow(FlowJob("root", None, {"repeat": {"every": 1.0}}), now=T)
    with pytest.raises(ConfigError, match="repeat"):
        await queue.upsert_scheduler(
            "k", every=1.0, template=("x", None, {"repeat": {"every": 1.0}}), now=T
        )
    await nothing_written(queue)
