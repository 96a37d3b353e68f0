"""``lanemq queue URL NAME`` for groups and cancellation, run as a subprocess against a
LocalJobQueue in the test's directory: ``groups`` (text and JSON, paging), ``pause-group``,
``resume-group``, ``remove-group``, ``cancel``, ``cancel-group``, and the GROUP column of
``jobs``; what each changes is read back through the API."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from cli_support import Result, lanemq
from lanemq import LocalJobQueue

URL = "local:./data"


@pytest.fixture
async def queue(tmp_path: Path) -> AsyncIterator[LocalJobQueue]:
    opened = LocalJobQueue("agents", tmp_path / "data")
    try:
        yield opened
    finally:
        await opened.close()


async def q(tmp_path: Path, *args: str) -> Result:
    return await lanemq("queue", URL, "agents", *args, cwd=tmp_path)


async def test_groups_lists_counts_text_and_json_with_paging(
    tmp_path: Path, queue: LocalJobQueue
) -> None:
    for n in range(3):
        await queue.add("prompt", n, group="tenant-a")
    await queue.add("prompt", 9, group="tenant-b", delay=3600)
    await queue.add("ungrouped", None)
    await queue.pause_group("tenant-b")

    found = (await q(tmp_path, "groups", "--json")).json()
    assert found["total"] == 2
    rows = {g["name"]: g for g in found["groups"]}
    assert rows["tenant-a"]["paused"] is False
    assert rows["tenant-a"]["counts"]["waiting"] == 3
    assert rows["tenant-b"] == {
        "name": "tenant-b",
        "paused": True,
        "counts": rows["tenant-b"]["counts"],
    }
    assert rows["tenant-b"]["counts"]["delayed"] == 1

    text = await q(tmp_path, "groups")
    assert text.code == 0, text.err
    header, *lines = text.out.strip().splitlines()
    assert header.split()[:3] == ["GROUP", "PAUSED", "WAITING"]
    assert lines[0].split()[:3] == ["tenant-a", "no", "3"]
    assert lines[1].split()[:2] == ["tenant-b", "yes"]

    page = await q(tmp_path, "groups", "--start", "1", "--limit", "1")
    assert page.code == 0, page.err
    assert "tenant-b" in page.out and "tenant-a" not in page.out
    assert "(2-2 of 2 groups)" in page.out


async def test_pause_resume_and_remove_group(tmp_path: Path, queue: LocalJobQueue) -> None:
    await queue.add("prompt", 1, group="tenant-a")
    await queue.add("prompt", 2, group="tenant-a", delay=3600)
    kept = await queue.add("prompt", 3, group="tenant-b")

    paused = (await q(tmp_path, "pause-group", "tenant-a", "--json")).json()
    assert paused == {"group": "tenant-a", "paused": True}
    assert await queue.is_group_paused("tenant-a")
    claimed = await queue.claim("w", 30, 5)
    assert [job.id for job in claimed] == [kept.id]  # the paused group's job stays

    resumed = await q(tmp_path, "resume-group", "tenant-a")
    assert resumed.code == 0 and resumed.out.strip() == "group tenant-a resumed"
    assert not await queue.is_group_paused("tenant-a")

    refused = await q(tmp_path, "remove-group", "tenant-a")  # asks first; no answer: abort
    assert refused.code == 1
    assert (await queue.get_group_counts("tenant-a", "waiting", "delayed")) == {
        "waiting": 1,
        "delayed": 1,
    }
    removed = (await q(tmp_path, "remove-group", "tenant-a", "--yes", "--json")).json()
    assert removed == {"group": "tenant-a", "removed": 2}
    assert (await queue.get_group_counts("tenant-a", "waiting", "delayed")) == {
        "waiting": 0,
        "delayed": 0,
    }


async def test_bad_group_name_exits_2_naming_it(tmp_path: Path, queue: LocalJobQueue) -> None:
    await queue.add("prompt", 1)
    result = await q(tmp_path, "pause-group", "x" * 300)
    assert result.code == 2 and "invalid group" in result.err


async def test_cancel_and_cancel_group(tmp_path: Path, queue: LocalJobQueue) -> None:
    waiting = await queue.add("prompt", 1, group="tenant-a")
    other = await queue.add("prompt", 2, group="tenant-a", delay=3600)
    elsewhere = await queue.add("prompt", 3, group="tenant-b")

    cancelled = (await q(tmp_path, "cancel", waiting.id, "--reason", "tab closed", "--json")).json()
    assert cancelled == {"id": waiting.id, "outcome": "failed"}
    job = await queue.get_job(waiting.id)
    assert job is not None and job.state == "failed" and job.failed_reason == "tab closed"

    again = await q(tmp_path, "cancel", waiting.id)
    assert again.code == 0 and "had already finished" in again.out

    unknown = await q(tmp_path, "cancel", "nope")
    assert unknown.code == 1 and "nope" in unknown.err

    group = (await q(tmp_path, "cancel-group", "tenant-a", "--yes", "--json")).json()
    assert group == {"group": "tenant-a", "cancelled": 1}
    assert await queue.get_state(other.id) == "failed"
    assert await queue.get_state(elsewhere.id) == "waiting"  # another group: untouched


async def test_jobs_table_has_a_group_column_only_where_groups_are_used(
    tmp_path: Path, queue: LocalJobQueue
) -> None:
    await queue.add("plain", None)
    plain = await q(tmp_path, "jobs")
    assert plain.code == 0 and "GROUP" not in plain.out
    await queue.add("prompt", None, group="tenant-a")
    grouped = await q(tmp_path, "jobs")
    assert grouped.code == 0
    header, *lines = grouped.out.strip().splitlines()
    assert header.split()[:3] == ["ID", "NAME", "GROUP"]
    assert any(line.split()[1:3] == ["prompt", "tenant-a"] for line in lines)
    summary = (await q(tmp_path, "jobs", "--json")).json()
    assert {job["group"] for job in summary["jobs"]} == {None, "tenant-a"}
