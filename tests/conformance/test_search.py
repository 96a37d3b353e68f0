"""Search and purge by criteria (`search_jobs`, `remove_jobs`): by name, by text (an id prefix or
a part of the name), by a value at a dotted path of the data, by age; a bounded page at a time
with a cursor; removal by `remove`'s rules."""

from __future__ import annotations

import pytest
from lanemq import ConfigError, FlowJob, JobQueue
from support import EPOCH_MS as T

from .helpers import claim_one


async def _ids(queue: JobQueue, *states: str, **criteria: object) -> list[str]:
    """Every job found, page after page."""
    found: list[str] = []
    cursor: int | None = 0
    while cursor is not None:
        page = await queue.search_jobs(*states, cursor=cursor, **criteria)  # type: ignore[arg-type]
        found += [job.id for job in page.jobs]
        cursor = page.cursor
    return found


async def test_search_by_name_keeps_list_jobs_order_across_states(queue: JobQueue) -> None:
    await queue.add("mail", None, now=T)
    claimed = await claim_one(queue, T)
    await queue.complete(claimed.id, claimed.lock_token or "", None, now=T)
    await queue.add("sms", None, now=T)
    await queue.add("mail", None, now=T)
    await queue.add("mail", None, delay=60, now=T)
    listed = [j.id for j in await queue.list_jobs() if j.name == "mail"]
    page = await queue.search_jobs(name="mail", now=T)
    assert [j.id for j in page.jobs] == listed == ["3", "4", "1"]
    assert page.cursor is None
    assert [j.id for j in (await queue.search_jobs("delayed", name="mail")).jobs] == ["4"]
    descending = await queue.search_jobs("waiting", "completed", name="mail", ascending=False)
    assert [j.id for j in descending.jobs] == ["3", "1"]


async def test_search_by_data_path_compares_json_scalars(queue: JobQueue) -> None:
    rows = [
        {"user": {"id": 7}, "tags": ["a", "b"], "ok": True, "note": None},
        {"user": {"id": 7.0}, "tags": ["b"], "ok": 1},
        {"user": {"id": "7"}, "tags": [], "ok": False, "note": "x"},
        ["not", "an", "object"],
    ]
    await queue.add_bulk([("j", row) for row in rows], now=T)
    assert await _ids(queue, data={"user.id": 7}) == ["1", "2"]
    assert await _ids(queue, data={"user.id": "7"}) == ["3"]
    assert await _ids(queue, data={"tags.1": "b"}) == ["1"]
    assert await _ids(queue, data={"tags.0": "b"}) == ["2"]
    assert await _ids(queue, data={"0": "not"}) == ["4"]
    # A bool is not a number; None finds a null that is there, not a missing key.
    assert await _ids(queue, data={"ok": True}) == ["1"]
    assert await _ids(queue, data={"ok": 1}) == ["2"]
    assert await _ids(queue, data={"note": None}) == ["1"]
    # Every path must match.
    assert await _ids(queue, data={"user.id": 7, "ok": 1}) == ["2"]
    assert await _ids(queue, data={"user.id.deeper": 7}) == []


async def test_search_by_text_is_an_id_prefix_or_a_part_of_the_name(queue: JobQueue) -> None:
    await queue.add("send-report", None, job_id="order-1", now=T)
    await queue.add("resize", None, job_id="order-2", now=T)
    await queue.add("send-mail", None, job_id="x-order", now=T)
    assert await _ids(queue, text="order") == ["order-1", "order-2"]
    assert await _ids(queue, text="send") == ["order-1", "x-order"]
    assert await _ids(queue, text="order-2") == ["order-2"]
    assert await _ids(queue, text="send", name="send-mail") == ["x-order"]


async def test_search_by_age_uses_the_finish_time_of_finished_jobs(queue: JobQueue) -> None:
    await queue.add("old", None, now=T)
    job = await claim_one(queue, T + 50_000)
    await queue.complete(job.id, job.lock_token or "", None, now=T + 50_000)
    await queue.add("mid", None, now=T + 10_000)
    await queue.add("new", None, now=T + 60_000)
    at = T + 70_000
    # Ages at `at`: "old" finished 20 s ago (created 70 s ago), "mid" 60 s, "new" 10 s.
    assert await _ids(queue, older_than=30, now=at) == ["2"]
    assert await _ids(queue, older_than=20, now=at) == ["2", "1"]
    assert await _ids(queue, newer_than=20, now=at) == ["3"]
    assert await _ids(queue, older_than=5, newer_than=30, now=at) == ["3", "1"]


async def test_a_page_reads_at_most_1000_jobs_and_returns_its_cursor(queue: JobQueue) -> None:
    await queue.add_bulk([("filler", None)] * 1200 + [("needle", None)], now=T)
    first = await queue.search_jobs(name="needle")
    assert (first.jobs, first.cursor) == ([], 1000)
    second = await queue.search_jobs(name="needle", cursor=first.cursor or 0)
    assert [j.id for j in second.jobs] == ["1201"]
    assert second.cursor is None


async def test_pages_of_count_jobs_follow_one_another(queue: JobQueue) -> None:
    await queue.add_bulk([("even" if i % 2 == 0 else "odd", {"i": i}) for i in range(9)], now=T)
    first = await queue.search_jobs(name="even", count=2)
    assert [j.data["i"] for j in first.jobs] == [0, 2]
    assert first.cursor == 3
    second = await queue.search_jobs(name="even", count=2, cursor=3)
    assert [j.data["i"] for j in second.jobs] == [4, 6]
    last = await queue.search_jobs(name="even", count=2, cursor=second.cursor or 0)
    assert [j.data["i"] for j in last.jobs] == [8]
    assert last.cursor is None


async def test_bad_criteria_are_refused_naming_the_value(queue: JobQueue) -> None:
    await queue.add("j", {"a": 1}, now=T)
    cases: list[tuple[dict[str, object], str]] = [
        ({"data": {"a..b": 1}}, "'a..b'"),
        ({"data": {"": 1}}, "data path: ''"),
        ({"data": {"a": [1]}}, r"\[1\]"),
        ({"data": {"a": float("nan")}}, "nan"),
        ({"data": [("a", 1)]}, "data criteria"),
        ({"name": 3}, "name: 3"),
        ({"older_than": -1}, "older_than: -1"),
        ({"newer_than": True}, "newer_than: True"),
        ({"count": 0}, "count: 0"),
        ({"count": 1001}, "count: 1001"),
        ({"cursor": -1}, "cursor: -1"),
    ]
    for criteria, named in cases:
        with pytest.raises(ConfigError, match=named):
            await queue.search_jobs(**criteria)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="paused"):
        await queue.search_jobs("paused")
    for criteria, named in cases[:8]:
        with pytest.raises(ConfigError, match=named):
            await queue.remove_jobs(**criteria)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="limit: 0"):
        await queue.remove_jobs(name="j", limit=0)
    with pytest.raises(ConfigError, match="needs a state or a criterion"):
        await queue.remove_jobs()
    assert await queue.get_job_count() == 1


async def test_remove_jobs_follows_the_rules_of_remove(queue: JobQueue) -> None:
    await queue.add("purge", {"n": 1}, now=T)
    held = await claim_one(queue, T)
    await queue.add_bulk([("purge", {"n": 2}), ("keep", {"n": 3}), ("purge", {"n": 4})], now=T)
    # The job a worker holds stays, and is not counted.
    assert await queue.remove_jobs(name="purge", now=T) == 2
    assert [j.id for j in await queue.list_jobs()] == ["3", held.id]
    removed = [e.job_id for e in await queue.read_events() if e.event == "removed"]
    assert removed == ["2", "4"]


async def test_remove_jobs_takes_a_parent_with_its_children(queue: JobQueue) -> None:
    root = await queue.add_flow(
        FlowJob("parent", {"kind": "report"}, children=[FlowJob("child"), FlowJob("child")]),
        now=T,
    )
    await queue.add("other", {"kind": "other"}, now=T)
    assert await queue.remove_jobs(data={"kind": "report"}, now=T) == 1
    assert await queue.get_job(root.job.id) is None
    assert [j.name for j in await queue.list_jobs()] == ["other"]


async def test_remove_jobs_with_a_limit_and_across_pages(queue: JobQueue) -> None:
    await queue.add_bulk([("old", None)] * 1500 + [("new", None)] * 10, now=T)
    assert await queue.remove_jobs("waiting", name="old", limit=5, now=T) == 5
    assert await queue.get_job_count() == 1505
    assert await queue.remove_jobs("waiting", older_than=0, name="old", now=T) == 1495
    assert [j.name for j in await queue.list_jobs()] == ["new"] * 10


async def test_remove_jobs_leaves_a_schedulers_pending_occurrence(queue: JobQueue) -> None:
    occurrence = await queue.upsert_scheduler("tick", every=60.0, template=("tick", None), now=T)
    await queue.add("tick", None, delay=60, now=T)
    # Both are "tick" jobs; `remove` refuses the occurrence, so this leaves it.
    assert await queue.remove_jobs(name="tick", now=T) == 1
    assert [j.id for j in await queue.list_jobs()] == [occurrence.id]
