"""``lanemq queue URL NAME search`` and ``purge``, run as a subprocess against a LocalJobQueue in
the test's directory: the jobs found (text and JSON, page by page with the cursor), what a
purge removes (read back through the API), its confirmation, and the refusals of bad
criteria (exit 2)."""

from __future__ import annotations

from pathlib import Path

from cli_support import email_cli as q
from cli_support import (
    email_queue,  # noqa: F401 (the `queue` fixture)
)
from lanemq import LocalJobQueue


async def _fill(queue: LocalJobQueue) -> None:
    await queue.add("send", {"user": {"id": 7}, "to": "a@example.com"}, job_id="order-1")
    await queue.add("send", {"user": {"id": "7"}, "to": "b@example.com"}, job_id="order-2")
    await queue.add("resize", {"user": {"id": 7}}, job_id="img-1")


async def test_search_by_name_data_and_text(tmp_path: Path, queue: LocalJobQueue) -> None:
    await _fill(queue)
    found = (await q(tmp_path, "search", "--name", "send", "--json")).json()
    assert [job["id"] for job in found["jobs"]] == ["order-1", "order-2"]
    assert found["cursor"] is None
    # A JSON scalar is read as JSON (7, "7"), anything else as text.
    by_number = (await q(tmp_path, "search", "--data", "user.id=7", "--json")).json()
    assert [job["id"] for job in by_number["jobs"]] == ["order-1", "img-1"]
    by_text = (await q(tmp_path, "search", "--data", 'user.id="7"', "--json")).json()
    assert [job["id"] for job in by_text["jobs"]] == ["order-2"]
    mail = await q(tmp_path, "search", "--data", "to=b@example.com", "--state", "waiting")
    assert mail.code == 0, mail.err
    assert "order-2" in mail.out and "order-1" not in mail.out
    texts = (await q(tmp_path, "search", "--text", "order", "--desc", "--json")).json()
    assert [job["id"] for job in texts["jobs"]] == ["order-2", "order-1"]


async def test_search_pages_follow_the_printed_cursor(tmp_path: Path, queue: LocalJobQueue) -> None:
    await _fill(queue)
    first = await q(tmp_path, "search", "--name", "send", "--count", "1")
    assert first.code == 0, first.err
    assert "order-1" in first.out and "--cursor 1" in first.out
    rest = (await q(tmp_path, "search", "--name", "send", "--cursor", "1", "--json")).json()
    assert [job["id"] for job in rest["jobs"]] == ["order-2"]
    assert rest["cursor"] is None
    nothing = await q(tmp_path, "search", "--name", "none")
    assert nothing.code == 0 and nothing.out.strip() == "(no jobs)"


async def test_purge_asks_first_and_removes_what_search_finds(
    tmp_path: Path, queue: LocalJobQueue
) -> None:
    await _fill(queue)
    declined = await q(tmp_path, "purge", "--data", "user.id=7", stdin="n\n")
    assert declined.code == 1 and "Aborted" in declined.err
    assert await queue.get_job_count() == 3
    done = await q(tmp_path, "purge", "--data", "user.id=7", stdin="y\n")
    assert done.code == 0, done.err
    assert done.out.strip() == "2 job(s) removed"
    assert [job.id for job in await queue.list_jobs()] == ["order-2"]
    assert (await q(tmp_path, "purge", "--yes", "--json", "--text", "order")).json() == {
        "removed": 1
    }
    assert await queue.get_job_count() == 0


async def test_bad_criteria_exit_2_and_change_nothing(tmp_path: Path, queue: LocalJobQueue) -> None:
    await _fill(queue)
    for args in (
        ("search", "--data", "user.id"),
        ("search", "--data", "a..b=1"),
        ("search", "--count", "0"),
        ("search", "--older-than", "-1"),
        ("purge", "--yes"),
        ("purge", "--yes", "--data", "=1"),
    ):
        result = await q(tmp_path, *args)
        assert result.code == 2, (args, result)
    refused = await q(tmp_path, "search", "--data", "a..b=1")
    assert "'a..b'" in refused.err
    assert await queue.get_job_count() == 3
