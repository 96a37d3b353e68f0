"""A job's log lines carry when they were written (issue 33: the dashboard shows log lines with
timestamps), on every backend: `get_log_entries` reads each line's text and time, `get_logs`
still reads the texts alone, exactly as before; any text round-trips unchanged, even one that
looks like a stored time; `keep` trims whole lines."""

from __future__ import annotations

import time

import pytest
from lanemq import Job, JobNotFoundError, JobQueue, LogEntry
from support import EPOCH_MS as T

from .helpers import claim_one

#: Texts a store's encoding could trip on: digits first (as a time would be), whitespace at
#: the ends, what looks like a stored line (a JSON pair, a bare JSON string), escapes, unicode.
TRICKY = [
    "1765000000000 12:00 looks like a time",
    "  leading and trailing spaces  ",
    "\ttabbed\tcolumns\t",
    "a line\nwith a newline\r\n",
    '[1765000000000, "a stored pair"]',
    '"a quoted string"',
    'quote " slash / back \\ braces {} brackets []',
    "ünïcödé 😀 日本語 \u00a0nbsp",
    "0",
    "",
]


def wall_ms() -> int:
    return int(time.time() * 1000)


async def test_each_line_records_when_it_was_written(queue: JobQueue) -> None:
    job = await queue.add("w", now=T)
    before = wall_ms()
    for n, text in enumerate(TRICKY, 1):
        assert await queue.add_log(job.id, text) == n
    after = wall_ms()

    entries, total = await queue.get_log_entries(job.id)
    assert total == len(TRICKY)
    assert [e.text for e in entries] == TRICKY
    assert all(isinstance(e, LogEntry) and e.time is not None for e in entries)
    times = [e.time for e in entries if e.time is not None]
    # The backend's clock at the call (a whole millisecond may round either way).
    assert before - 1 <= times[0] and times[-1] <= after + 1
    assert times == sorted(times), "written one after the other"
    # `get_logs` answers as it always did: the texts alone.
    assert await queue.get_logs(job.id) == (TRICKY, len(TRICKY))


async def test_entries_page_as_get_logs_does(queue: JobQueue) -> None:
    job = await queue.add("w", now=T)
    for n in range(5):
        await queue.add_log(job.id, f"{n} line")
    for page in [(0, -1, True), (1, 2, True), (-2, -1, True), (0, 1, False), (7, 9, True)]:
        entries, total = await queue.get_log_entries(job.id, *page)
        lines, count = await queue.get_logs(job.id, *page)
        assert ([e.text for e in entries], total) == (lines, count), page
    newest, _ = await queue.get_log_entries(job.id, 0, 0, ascending=False)
    assert [e.text for e in newest] == ["4 line"]

    with pytest.raises(JobNotFoundError):
        await queue.get_log_entries("nope")
    assert await queue.get_log_entries((await queue.add("w", now=T)).id) == ([], 0)


async def test_keep_trims_whole_lines_with_their_times(queue: JobQueue) -> None:
    job = await queue.add("w", now=T)
    for n in range(5):
        assert await queue.add_log(job.id, f"{n}\t{n}", keep=3) == min(n + 1, 3)
    entries, total = await queue.get_log_entries(job.id)
    assert total == 3
    assert [e.text for e in entries] == ["2\t2", "3\t3", "4\t4"]
    assert all(e.time is not None for e in entries)

    await queue.clear_logs(job.id, keep=1)
    kept, total = await queue.get_log_entries(job.id)
    assert (total, [e.text for e in kept]) == (1, ["4\t4"])
    assert kept[0].time == entries[-1].time, "the kept line keeps its time"
    await queue.clear_logs(job.id)
    assert await queue.get_log_entries(job.id) == ([], 0)


async def test_a_job_reads_its_entries_and_a_processor_writes_them(queue: JobQueue) -> None:
    await queue.add("w", now=T)
    # Claimed at the wall clock's now: `job.log` checks the lease against the real time.
    job: Job = await claim_one(queue, wall_ms())
    before = wall_ms()
    assert await job.log("from the processor") == 1
    entries, total = await job.get_log_entries()
    assert total == 1 and entries[0].text == "from the processor"
    assert entries[0].time is not None and before - 1 <= entries[0].time <= wall_ms() + 1
    assert await job.get_logs() == (["from the processor"], 1)
