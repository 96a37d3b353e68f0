"""``lanemq queue URL NAME <command>``, run as a subprocess against a LocalJobQueue in the
test's directory (``stats`` and ``jobs`` against Redis too): what each command prints (text
and the documented JSON shapes), what it changes (read back through the API), and its exit
codes: 1 for an unknown job or a refused operation (the message on stderr), 2 for bad
arguments."""

from __future__ import annotations

import time
from datetime import datetime, timezone
from pathlib import Path

from cli_support import EMAIL_URL as URL
from cli_support import email_cli as q
from cli_support import (
    email_queue,  # noqa: F401 (the `queue` fixture)
    lanemq,
)
from lanemq import Job, LocalJobQueue, RedisJobQueue, list_queue_names
from redis_support import MakeServer, Resp, free_port
from support import redis_prefix

SUMMARY_KEYS = {
    "id",
    "name",
    "state",
    "priority",
    "attempts_made",
    "created_at",
    "processed_on",
    "finished_on",
    "failed_reason",
    "group",
}
DETAIL_KEYS = SUMMARY_KEYS | {
    "attempts",
    "stalled_count",
    "delay_until",
    "timeout",
    "progress",
    "data",
    "return_value",
    "stacktrace",
    "parent_key",
    "scheduler_key",
    "dedup_id",
    "logs",
    "log_times",
    "log_count",
}
SCHEDULER_KEYS = {
    "key",
    "name",
    "data",
    "every",
    "cron",
    "tz",
    "limit",
    "start",
    "end",
    "iteration_count",
    "next_run",
    "job_id",
}


async def _fill(queue: LocalJobQueue) -> dict[str, Job]:
    """One job in each of waiting, delayed, active, completed and failed."""
    waiting = await queue.add("send", {"to": "a@example.com"}, priority=4)
    delayed = await queue.add("later", [1, 2], delay=3600)
    done = await queue.add("send", {"to": "b@example.com"}, job_id="welcome:b")
    broken = await queue.add("flaky", "x", attempts=3)
    running = await queue.add("slow", None)
    claimed = {job.id: job for job in await queue.claim("test", 60, 3)}
    assert set(claimed) == {done.id, broken.id, running.id}  # (priority 4 goes last)
    await queue.complete(done.id, claimed[done.id].lock_token or "", {"sent": True})
    await queue.add_log(broken.id, "first line")
    await queue.add_log(broken.id, "second line")
    await queue.fail(
        broken.id, claimed[broken.id].lock_token or "", "ValueError: boom", retry=False
    )
    return {
        "waiting": waiting,
        "delayed": delayed,
        "active": running,
        "completed": done,
        "failed": broken,
    }


# ------------------------------------------------------------------------ reading


async def test_stats_text_and_json(tmp_path: Path, queue: LocalJobQueue) -> None:
    await _fill(queue)
    await queue.upsert_scheduler("tick", every=60, template=("tick", None))
    await queue.pause()
    text = await q(tmp_path, "stats")
    assert text.code == 0, text.err
    lines = text.out.splitlines()
    assert lines[:3] == ["queue       email", "paused      yes", "schedulers  1"]
    # (the scheduler's first occurrence is waiting: an every= schedule runs at once)
    assert "waiting              2" in lines and "delayed              1" in lines
    assert "failed               1" in lines
    document = (await q(tmp_path, "stats", "--json")).json()
    assert document == {
        "queue": "email",
        "counts": {
            "waiting": 2,
            "delayed": 1,
            "active": 1,
            "waiting_children": 0,
            "completed": 1,
            "failed": 1,
        },
        "paused": True,
        "schedulers": 1,
    }
    # --json is accepted before the URL as well
    before = await lanemq("queue", "--json", URL, "email", "stats", cwd=tmp_path)
    assert before.json() == document


async def test_jobs_lists_by_state_with_limit_and_order(
    tmp_path: Path, queue: LocalJobQueue
) -> None:
    jobs = await _fill(queue)
    listed = (await q(tmp_path, "jobs", "--json")).json()
    assert set(listed) == {"jobs"}
    assert {row["id"] for row in listed["jobs"]} == {job.id for job in jobs.values()}
    assert all(set(row) == SUMMARY_KEYS for row in listed["jobs"])
    failed = (await q(tmp_path, "jobs", "--state", "failed", "--json")).json()["jobs"]
    assert [(row["id"], row["state"], row["failed_reason"]) for row in failed] == [
        (jobs["failed"].id, "failed", "ValueError: boom")
    ]
    two = (await q(tmp_path, "jobs", "--state", "waiting", "--state", "delayed", "--json")).json()
    assert {row["id"] for row in two["jobs"]} == {jobs["waiting"].id, jobs["delayed"].id}
    for _ in range(3):
        await queue.add("more", None)
    first = (await q(tmp_path, "jobs", "--state", "waiting", "--limit", "2", "--json")).json()
    last = (
        await q(tmp_path, "jobs", "--state", "waiting", "--limit", "2", "--desc", "--json")
    ).json()
    assert len(first["jobs"]) == len(last["jobs"]) == 2
    assert first["jobs"][0]["id"] != last["jobs"][0]["id"]
    text = await q(tmp_path, "jobs", "--state", "completed")
    assert text.code == 0
    header, row = text.out.splitlines()
    assert header.split()[:4] == ["ID", "NAME", "STATE", "PRIORITY"]
    assert row.split()[:5] == ["welcome:b", "send", "completed", "0", "1/1"]
    empty = await q(tmp_path, "jobs", "--state", "waiting_children")
    assert empty.out.strip() == "(no jobs)"


async def test_jobs_text_shows_the_failure_reason_cut_to_its_column(
    tmp_path: Path, queue: LocalJobQueue
) -> None:
    jobs = await _fill(queue)
    long = await queue.add("parse", None)
    (claimed,) = await queue.claim("test", 60, 1)
    assert claimed.id == long.id
    reason = "KeyError: " + "x" * 100 + "\nsecond line of the reason"
    await queue.fail(long.id, claimed.lock_token or "", reason, retry=False)
    text = await q(tmp_path, "jobs", "--state", "failed")
    assert text.code == 0, text.err
    header, *rows = text.out.splitlines()
    assert header.split()[-1] == "FAILURE"
    by_id = {row.split()[0]: row for row in rows}
    assert by_id[jobs["failed"].id].endswith("ValueError: boom")
    cut = "KeyError: " + "x" * 47 + "..."
    assert by_id[long.id].endswith(cut) and "second line" not in by_id[long.id]
    # a table without failures keeps its columns
    done = await q(tmp_path, "jobs", "--state", "completed")
    assert "FAILURE" not in done.out


async def test_show_prints_fields_data_result_failure_and_logs(
    tmp_path: Path, queue: LocalJobQueue
) -> None:
    jobs = await _fill(queue)
    failed = (await q(tmp_path, "show", jobs["failed"].id, "--json")).json()
    assert set(failed) == DETAIL_KEYS
    assert failed["state"] == "failed" and failed["data"] == "x"
    assert failed["failed_reason"] == "ValueError: boom"
    assert (failed["attempts_made"], failed["attempts"]) == (1, 3)
    assert failed["logs"] == ["first line", "second line"] and failed["log_count"] == 2
    first, second = failed["log_times"]
    assert isinstance(first, int) and first <= second <= int(time.time() * 1000)
    newest = (await q(tmp_path, "show", jobs["failed"].id, "--logs", "1", "--json")).json()
    assert newest["logs"] == ["second line"] and newest["log_count"] == 2
    text = (await q(tmp_path, "show", jobs["failed"].id)).out
    assert "failure:\n  ValueError: boom" in text
    stamps = [
        datetime.fromtimestamp(at // 1000, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
        + f".{at % 1000:03d}"
        for at in failed["log_times"]
    ]
    assert f"logs (2, UTC):\n  {stamps[0]}  first line\n  {stamps[1]}  second line" in text
    done = await q(tmp_path, "show", "welcome:b")
    assert done.code == 0
    assert '"to": "b@example.com"' in done.out
    assert 'result:\n  {\n    "sent": true\n  }' in done.out
    assert (await q(tmp_path, "show", "welcome:b", "--json")).json()["return_value"] == {
        "sent": True
    }


async def test_show_cuts_a_large_data_or_result_unless_full(
    tmp_path: Path, queue: LocalJobQueue
) -> None:
    many = await queue.add("big", {"items": list(range(1000))})
    [claimed] = await queue.claim("test", 60, 1)
    await queue.complete(claimed.id, claimed.lock_token or "", "r" * 50_000)
    text = await q(tmp_path, "show", many.id)
    assert text.code == 0, text.err
    # at most 40 lines of the data ({, "items": [, 0 to 37) and 4000 characters of the
    # result (its quote and 3999 r), then how much was left out
    assert "      37,\n" in text.out and "      38," not in text.out
    assert "r" * 3999 + "\n" in text.out and "r" * 4000 not in text.out
    assert text.out.count("--full shows all") == 2
    assert "(46002 more characters of 50002: --full shows all)" in text.out
    assert len(text.out) < 6000
    whole = await q(tmp_path, "show", many.id, "--full")
    assert "      999\n" in whole.out and "r" * 50_000 in whole.out
    assert "--full shows all" not in whole.out
    document = (await q(tmp_path, "show", many.id, "--json")).json()  # JSON: always whole
    assert document["data"] == {"items": list(range(1000))}
    assert document["return_value"] == "r" * 50_000
    small = await queue.add("small", {"to": "a@example.com"})
    assert "--full" not in (await q(tmp_path, "show", small.id)).out


async def test_json_may_follow_the_queue_name(tmp_path: Path, queue: LocalJobQueue) -> None:
    job = await queue.add("send", {"n": 1})
    after_name = await lanemq("queue", URL, "email", "--json", "stats", cwd=tmp_path)
    assert after_name.json() == (await q(tmp_path, "stats", "--json")).json()
    shown = await lanemq("queue", URL, "email", "--json", "show", job.id, cwd=tmp_path)
    assert shown.json()["data"] == {"n": 1}
    twice = await lanemq("queue", "--json", URL, "email", "--json", "jobs", "--json", cwd=tmp_path)
    assert [row["id"] for row in twice.json()["jobs"]] == [job.id]


async def test_unknown_job_id_exits_1_with_the_message_on_stderr(
    tmp_path: Path, queue: LocalJobQueue
) -> None:
    await queue.add("send", None)
    for command in ("show", "retry", "remove", "promote"):
        result = await q(tmp_path, command, "nope", "--json")
        assert result.code == 1, (command, result)
        assert result.out == ""
        assert result.err == "Error: job \"nope\" not found in queue 'email'\n", command


async def test_schedulers(tmp_path: Path, queue: LocalJobQueue) -> None:
    await queue.upsert_scheduler("tick", every=60, template=("tick", {"n": 1}), limit=5)
    await queue.upsert_scheduler(
        "report", cron="0 9 * * 1-5", tz="Europe/Berlin", template=("report", None)
    )
    listed = (await q(tmp_path, "schedulers", "--json")).json()
    assert set(listed) == {"schedulers"}
    by_key = {entry["key"]: entry for entry in listed["schedulers"]}
    assert set(by_key) == {"tick", "report"}
    assert all(set(entry) == SCHEDULER_KEYS for entry in by_key.values())
    assert (by_key["tick"]["every"], by_key["tick"]["limit"], by_key["tick"]["data"]) == (
        60.0,
        5,
        {"n": 1},
    )
    assert (by_key["report"]["cron"], by_key["report"]["tz"]) == ("0 9 * * 1-5", "Europe/Berlin")
    pending = await queue.get_job(by_key["tick"]["job_id"])
    assert pending is not None and pending.state in ("waiting", "delayed")
    text = (await q(tmp_path, "schedulers")).out
    assert "every 60s" in text and "cron 0 9 * * 1-5 (Europe/Berlin)" in text


# ------------------------------------------------------------------------ changing


async def test_remove_scheduler(tmp_path: Path, queue: LocalJobQueue) -> None:
    tick = await queue.upsert_scheduler("tick", every=60, template=("tick", None))
    await queue.upsert_scheduler("report", every=3600, template=("report", None))
    removed = (await q(tmp_path, "remove-scheduler", "tick", "--json")).json()
    assert removed == {"removed_scheduler": "tick"}
    assert await queue.get_scheduler("tick") is None
    assert tick.id is not None and await queue.get_job(tick.id) is None  # its next occurrence
    assert [s.key for s in await queue.list_schedulers()] == ["report"]
    text = await q(tmp_path, "remove-scheduler", "report")
    assert (text.code, text.out) == (0, "scheduler report removed\n")
    again = await q(tmp_path, "remove-scheduler", "tick")
    assert (again.code, again.out) == (1, "")
    assert again.err == "Error: no scheduler 'tick' in queue 'email'\n"


async def test_retry_one_job_and_all_failed(tmp_path: Path, queue: LocalJobQueue) -> None:
    first = await queue.add("flaky", 1, attempts=2)
    second = await queue.add("flaky", 2)
    done = await queue.add("fine", 3)
    for job in await queue.claim("test", 60, 3):
        if job.id == done.id:
            await queue.complete(job.id, job.lock_token or "", None)
        else:
            await queue.fail(job.id, job.lock_token or "", "boom", retry=False)
    one = (await q(tmp_path, "retry", first.id, "--json")).json()
    assert one == {"retried": [first.id]}
    again = await queue.get_job(first.id)
    # Its attempt stays counted (BullMQ's job.retry()), unless --reset-attempts.
    assert again is not None and again.state == "waiting" and again.attempts_made == 1
    [claimed] = await queue.claim("test", 60, 1)
    await queue.fail(claimed.id, claimed.lock_token or "", "boom", retry=False)
    reset = (await q(tmp_path, "retry", first.id, "--reset-attempts", "--json")).json()
    assert reset == {"retried": [first.id]}
    again = await queue.get_job(first.id)
    assert again is not None and again.state == "waiting" and again.attempts_made == 0
    refused = await q(tmp_path, "retry", first.id)
    assert refused.code == 1 and "not failed or completed" in refused.err
    everything = await q(tmp_path, "retry", "--failed")
    assert everything.code == 0 and everything.out.strip() == "1 failed job(s) waiting again"
    assert await queue.get_state(second.id) == "waiting"
    assert await queue.get_state(done.id) == "completed"  # --failed leaves completed jobs
    assert (await q(tmp_path, "retry", "--failed", "--json")).json() == {"retried": []}
    for wrong in ([], [first.id, "--failed"]):
        result = await q(tmp_path, "retry", *wrong)
        assert result.code == 2 and "give a job ID or --failed" in result.err


async def test_remove_and_promote(tmp_path: Path, queue: LocalJobQueue) -> None:
    jobs = await _fill(queue)
    promoted = (await q(tmp_path, "promote", jobs["delayed"].id, "--json")).json()
    assert promoted == {"promoted": [jobs["delayed"].id]}
    assert await queue.get_state(jobs["delayed"].id) == "waiting"
    removed = await q(tmp_path, "remove", jobs["delayed"].id)
    assert removed.code == 0 and removed.out.strip() == f"job {jobs['delayed'].id} removed"
    assert await queue.get_job(jobs["delayed"].id) is None
    held = await q(tmp_path, "remove", jobs["active"].id)
    assert held.code == 1 and "locked" in held.err
    assert await queue.get_state(jobs["active"].id) == "active"


async def test_clean_drain_pause_resume(tmp_path: Path, queue: LocalJobQueue) -> None:
    jobs = await _fill(queue)
    cleaned = (await q(tmp_path, "clean", "--state", "completed", "--grace", "0", "--json")).json()
    assert cleaned == {"removed": [jobs["completed"].id]}
    kept = (await q(tmp_path, "clean", "--state", "failed", "--grace", "3600", "--json")).json()
    assert kept == {"removed": []}
    assert (await queue.get_job_counts("failed"))["failed"] == 1
    missing = await q(tmp_path, "clean", "--state", "failed")
    assert missing.code == 2 and "--grace" in missing.err
    assert (await q(tmp_path, "pause", "--json")).json() == {"paused": True}
    assert await queue.is_paused()
    assert (await q(tmp_path, "resume", "--json")).json() == {"paused": False}
    assert not await queue.is_paused()
    assert (await q(tmp_path, "drain", "--json")).json() == {"drained": 1}
    assert (await queue.get_job_counts("waiting", "delayed")) == {"waiting": 0, "delayed": 1}
    assert (await q(tmp_path, "drain", "--delayed", "--json")).json() == {"drained": 1}
    assert (await queue.get_job_counts("delayed"))["delayed"] == 0


async def test_obliterate_asks_first_and_refuses_active_jobs(
    tmp_path: Path, queue: LocalJobQueue
) -> None:
    await _fill(queue)
    declined = await q(tmp_path, "obliterate", stdin="n\n")
    assert declined.code == 1 and "Aborted" in declined.err
    no_input = await q(tmp_path, "obliterate")
    assert no_input.code == 1
    assert (await queue.get_job_counts("failed"))["failed"] == 1 and not await queue.is_paused()
    refused = await q(tmp_path, "obliterate", "--yes")
    assert refused.code == 1
    assert "active" in refused.err and "left paused" in refused.err
    assert await queue.is_paused()
    assert (await queue.get_job_counts("failed"))["failed"] == 1
    forced = await q(tmp_path, "obliterate", "--force", stdin="y\n")
    assert forced.code == 0, forced.err
    assert forced.out.strip() == "queue email obliterated"
    counts = await queue.get_job_counts()
    assert sum(counts.values()) == 0


async def test_obliterate_with_yes_and_json(tmp_path: Path, queue: LocalJobQueue) -> None:
    await queue.add("send", None)
    assert (await q(tmp_path, "obliterate", "--yes", "--json")).json() == {"obliterated": True}
    assert sum((await queue.get_job_counts()).values()) == 0


# ------------------------------------------------------------------------ refusals


async def test_a_missing_local_queue_is_not_created(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    for command in (("stats",), ("pause",), ("retry", "--failed")):
        result = await lanemq("queue", URL, "emial", *command, cwd=tmp_path)
        assert result.code == 1, (command, result)
        # (as a Redis queue that is not there says it; then the file it looked for)
        assert result.err.startswith(f"Error: no queue 'emial' at {URL}: "), result.err
        assert "data/emial.sqlite3 does not exist" in result.err
    assert list((tmp_path / "data").iterdir()) == []


async def test_a_redis_queue_that_is_not_listed_is_refused_not_created(
    tmp_path: Path, own_redis: MakeServer
) -> None:
    # It used to show an empty queue (exit 0), and an action created it.
    server = own_redis()
    server.start()
    with Resp("127.0.0.1", server.port) as raw:
        raw.command("CONFIG", "SET", "requirepass", "hunter2-secret")
    url = f"redis://:hunter2-secret@127.0.0.1:{server.port}/0"
    shown = f"redis://:***@127.0.0.1:{server.port}/0"
    queue = RedisJobQueue("email", url)
    await queue.add("send", None)
    try:
        for command in (("stats",), ("pause",), ("jobs", "--json"), ("show", "1")):
            result = await lanemq("queue", url, "emial", *command, cwd=tmp_path)
            assert (result.code, result.out) == (1, ""), (command, result)
            assert result.err == f"Error: no queue 'emial' at {shown}\n", command
        prefixed = await lanemq("queue", "--prefix", "app", url, "email", "stats", cwd=tmp_path)
        assert prefixed.err == f"Error: no queue 'email' at {shown}\n"
        assert await list_queue_names(url) == ["email"]  # nothing created
        listed = await lanemq("queue", url, "email", "stats", "--json", cwd=tmp_path)
        assert listed.json()["counts"]["waiting"] == 1
    finally:
        await queue.close()


async def test_an_option_between_the_arguments_is_not_taken_for_a_name(tmp_path: Path) -> None:
    # `queue URL --json stats` read "--json" as the queue NAME and showed an empty queue.
    result = await lanemq("queue", URL, "--json", "stats", cwd=tmp_path)
    assert result.code == 2, result
    assert "'--json' is not a queue NAME" in result.err and "stats --json" in result.err
    # ... and another option between NAME and the command is not taken for the command.
    result = await lanemq("queue", URL, "email", "--prefix", "p", "stats", cwd=tmp_path)
    assert result.code == 2, result
    assert "'--prefix' is not a command" in result.err and "stats --json" in result.err
    result = await lanemq("queue", URL, "email", "--json", cwd=tmp_path)
    assert result.code == 2 and "Missing command" in result.err, result
    result = await lanemq("queue", URL, "", "stats", cwd=tmp_path)
    assert result.code == 2 and "the queue NAME is empty" in result.err, result


async def test_bad_urls_exit_2_without_the_password(tmp_path: Path) -> None:
    for url in ("bogus://:hunter2@host", "redis://:hunter2@host:99999/0", "memory://"):
        result = await lanemq("queue", url, "email", "stats", cwd=tmp_path)
        assert result.code == 2, (url, result)
        assert "hunter2" not in result.err + result.out
    prefix = await lanemq("queue", "--prefix", "app", URL, "email", "stats", cwd=tmp_path)
    assert prefix.code == 2 and "--prefix applies to Redis URLs only" in prefix.err


async def test_unreachable_redis_exits_1_without_the_password(tmp_path: Path) -> None:
    url = f"redis://:hunter2@127.0.0.1:{free_port()}/0"
    result = await lanemq("queue", url, "email", "stats", cwd=tmp_path)
    assert result.code == 1 and "cannot connect" in result.err
    assert "hunter2" not in result.err


# ------------------------------------------------------------------------ redis


async def test_stats_and_jobs_on_redis(tmp_path: Path, redis_url: str) -> None:
    prefix = redis_prefix()
    name = f"email-{prefix}"
    queue = RedisJobQueue(name, redis_url, prefix=prefix)
    try:
        await queue.add("send", {"to": "a@example.com"}, job_id="r1")
        await queue.add("send", None, delay=3600)
        args = ("queue", "--prefix", prefix, redis_url, name)
        stats = (await lanemq(*args, "stats", "--json", cwd=tmp_path)).json()
        assert stats["counts"]["waiting"] == 1 and stats["counts"]["delayed"] == 1
        assert stats["paused"] is False and stats["schedulers"] == 0
        listed = (await lanemq(*args, "jobs", "--state", "waiting", "--json", cwd=tmp_path)).json()
        assert [(row["id"], row["name"]) for row in listed["jobs"]] == [("r1", "send")]
        text = await lanemq(*args, "jobs", cwd=tmp_path)
        assert text.code == 0 and len(text.out.splitlines()) == 3  # header and two jobs
        # Under the default prefix there is no such queue: refused, not shown empty.
        other = await lanemq("queue", redis_url, name, "stats", "--json", cwd=tmp_path)
        assert (other.code, other.err) == (1, f"Error: no queue {name!r} at {redis_url}\n")
    finally:
        await queue.obliterate(force=True)
        await queue.close()


async def test_prefix_is_taken_with_cluster_and_sentinel_urls(tmp_path: Path) -> None:
    # Both are Redis: --prefix goes to the queue (which then fails to connect, exit 1), where
    # it used to be refused as "not a Redis URL".
    port = free_port()
    for url in (f"redis+cluster://127.0.0.1:{port}", f"redis+sentinel://127.0.0.1:{port}/m"):
        result = await lanemq("queue", "--prefix", "{app}", url, "email", "stats", cwd=tmp_path)
        assert "--prefix applies to Redis URLs only" not in result.err, (url, result)
        assert result.code == 1, (url, result)
