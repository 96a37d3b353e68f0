"""Log lines stored before lines carried times stay readable (issue 33): on Redis, a log
written raw in the old format (a JSON array of bare strings) reads with time None, takes new
lines after it and trims by `keep` across both kinds; a local queue file made before the
`logs.at` column gains it when opened, its old lines read with time None."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from lanemq import LocalJobQueue, LogEntry, RedisJobQueue
from redis_support import Resp, queue_key
from support import redis_prefix

NOW = 1_796_572_800_123


async def test_redis_lines_of_the_old_format_read_with_no_time(redis_url: str) -> None:
    queue = RedisJobQueue("old-logs", redis_url, prefix=redis_prefix())
    try:
        job = await queue.add("w", {})
        old = ["first old line", '[1796572800000, "looks new"]', "12 34\t5"]
        logs = queue_key(queue, "logs")
        with Resp.of(redis_url) as raw:
            raw.command("HSET", logs, job.id, json.dumps(old))
        assert await queue.get_logs(job.id) == (old, 3)
        assert await queue.get_log_entries(job.id) == ([LogEntry(None, t) for t in old], 3)

        assert await queue.add_log(job.id, "a new line", now=NOW) == 4
        entries, total = await queue.get_log_entries(job.id)
        assert total == 4 and entries[-1] == LogEntry(NOW, "a new line")
        assert entries[:3] == [LogEntry(None, t) for t in old]

        # `keep` trims whole lines whatever their kind: the newest two, one old and one new.
        assert await queue.add_log(job.id, "newest", keep=2, now=NOW + 1) == 2
        assert await queue.get_log_entries(job.id) == (
            [LogEntry(NOW, "a new line"), LogEntry(NOW + 1, "newest")],
            2,
        )
        await queue.clear_logs(job.id, keep=1)
        assert await queue.get_logs(job.id) == (["newest"], 1)
        with Resp.of(redis_url) as raw:  # a new line is stored as [time, text]
            assert json.loads(raw.command("HGET", logs, job.id)) == [[NOW + 1, "newest"]]
    finally:
        await queue.obliterate(force=True)
        await queue.close()


async def test_a_local_file_without_log_times_gains_them(tmp_path: Path) -> None:
    queue = LocalJobQueue("old-logs", tmp_path)
    job = await queue.add("w", {})
    await queue.add_log(job.id, "written before times", now=NOW)
    await queue.close()
    # The file as a version before the column left it: no `at`, so the line's time is gone.
    with sqlite3.connect(tmp_path / "old-logs.sqlite3") as conn:
        conn.execute("ALTER TABLE logs DROP COLUMN at")
    conn.close()

    reopened = LocalJobQueue("old-logs", tmp_path)
    try:
        assert await reopened.get_log_entries(job.id) == (
            [LogEntry(None, "written before times")],
            1,
        )
        await reopened.add_log(job.id, "written after", now=NOW)
        assert await reopened.get_log_entries(job.id) == (
            [LogEntry(None, "written before times"), LogEntry(NOW, "written after")],
            2,
        )
        assert await reopened.get_logs(job.id) == (["written before times", "written after"], 2)
    finally:
        await reopened.close()
