"""`LocalJobQueue(..., sync="normal")`: the choice is checked before anything is made, is
reachable from a ``local:`` URL (and so from the CLI), carries over to sibling queues, and
keeps what a killed process acknowledged. What it gives up (the newest commits on an OS crash
or power loss) cannot be shown without crashing the machine; the README says it. The job
contract itself runs on it in the conformance suite (``[local-normal]``)."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path
from typing import Any

import pytest
from cli_support import lanemq
from lanemq import ConfigError, FlowJob, LocalJobQueue, from_url, list_queue_names
from lanemq.urls import local_queue_file
from support import Spawn

WAIT = 10.0  # upper bound for anything awaited in a test; never reached when things work


def _tree(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


def _contents(path: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in path.iterdir()}


# ------------------------------------------------------------------------- bad values


@pytest.mark.parametrize("bad", ["fast", "FULL", "", "off", 1, True, None, b"normal"])
def test_a_bad_sync_is_refused_by_name_before_anything_is_made(tmp_path: Path, bad: Any) -> None:
    before = _tree(tmp_path)
    with pytest.raises(ConfigError) as raised:
        LocalJobQueue("email", tmp_path / "data", sync=bad)
    assert repr(bad) in str(raised.value)
    assert "'full' or 'normal'" in str(raised.value)
    assert _tree(tmp_path) == before, "no directory or file may be created"


async def test_a_bad_sync_leaves_an_existing_file_unchanged(tmp_path: Path) -> None:
    queue = LocalJobQueue("email", tmp_path)
    await queue.add("send", {"to": "a"})
    await queue.close()
    before = _contents(tmp_path)
    with pytest.raises(ConfigError, match="'fast'"):
        LocalJobQueue("email", tmp_path, sync="fast")
    assert _contents(tmp_path) == before


# ------------------------------------------------------------------------- the option


async def test_normal_and_full_share_one_file(tmp_path: Path) -> None:
    normal = LocalJobQueue("email", tmp_path, sync="normal")
    assert normal.sync == "normal"
    assert (
        repr(normal)
        == f"LocalJobQueue('email', path={str(tmp_path / 'email.sqlite3')!r}, sync='normal')"
    )
    job = await normal.add("send", {"to": "a"})
    await normal.close()
    # The level belongs to the opener, not to the file: a full opener reads the same jobs.
    full = LocalJobQueue("email", tmp_path)
    assert full.sync == "full"
    found = await full.get_job(job.id)
    assert found is not None and found.data == {"to": "a"}
    await full.close()


async def test_a_sibling_inherits_sync_and_a_flow_across_files_completes(tmp_path: Path) -> None:
    parents = LocalJobQueue("parents", tmp_path, sync="normal")
    kids = parents.sibling("kids")
    assert isinstance(kids, LocalJobQueue) and kids.sync == "normal"
    node = await parents.add_flow(
        FlowJob("report", {"n": 1}, children=[FlowJob("part", {"i": 0}, queue="kids")])
    )
    assert await parents.get_state(node.job.id) == "waiting_children"
    [child] = node.children
    [claimed] = await kids.claim("w", max_jobs=1)
    assert claimed.id == child.job.id
    await kids.complete(claimed.id, claimed.lock_token, {"part": 0})
    assert await parents.get_state(node.job.id) == "waiting"
    [parent] = await parents.claim("w", max_jobs=1)
    assert await parent.get_children_values() == {f"kids:{child.job.id}": {"part": 0}}
    await kids.close()
    await parents.close()


async def test_a_flow_across_files_opened_at_different_levels_completes(tmp_path: Path) -> None:
    parents = LocalJobQueue("parents", tmp_path, sync="full")
    kids = LocalJobQueue("kids", tmp_path, sync="normal")
    node = await parents.add_flow(
        FlowJob(
            "report", None, children=[FlowJob("part", {"i": i}, queue="kids") for i in range(3)]
        )
    )
    for _ in range(3):
        [claimed] = await kids.claim("w", max_jobs=1)
        assert claimed.lock_token is not None
        await kids.complete(claimed.id, claimed.lock_token, claimed.data["i"])
    assert await parents.get_state(node.job.id) == "waiting"
    values = await parents.get_children_values(node.job.id)
    assert sorted(values.values()) == [0, 1, 2]
    [report] = await parents.claim("w", max_jobs=1)
    assert report.id == node.job.id and report.lock_token is not None
    await parents.complete(report.id, report.lock_token, "done")
    # And back: the parents' file, opened "normal" now, reaches a parent of its own.
    await parents.close()
    parents = LocalJobQueue("parents", tmp_path, sync="normal")
    top = await kids.add_flow(FlowJob("sum", None, children=[FlowJob("n", 5, queue="parents")]))
    [claimed] = await parents.claim("w", max_jobs=1)
    assert claimed.lock_token is not None
    await parents.complete(claimed.id, claimed.lock_token, 5)
    assert await kids.get_state(top.job.id) == "waiting"
    await parents.close()
    await kids.close()


# ----------------------------------------------------------------------------- URLs


async def test_a_local_url_takes_sync(tmp_path: Path) -> None:
    normal = from_url(f"local:{tmp_path}?sync=normal", "email")
    assert isinstance(normal, LocalJobQueue)
    assert (normal.sync, normal.path) == ("normal", tmp_path / "email.sqlite3")
    await normal.close()
    for url in (f"local://{tmp_path}?sync=full", f"local://{tmp_path}"):
        full = from_url(url, "email")
        assert isinstance(full, LocalJobQueue)
        assert (full.sync, full.path) == ("full", tmp_path / "email.sqlite3")
        await full.close()
    one_file = from_url(f"local:{tmp_path / 'one.db'}?sync=normal", "email")
    assert isinstance(one_file, LocalJobQueue)
    assert (one_file.sync, one_file.path) == ("normal", tmp_path / "one.db")
    await one_file.close()
    # The query is not part of the path, for the helpers that read one either.
    assert local_queue_file(f"local:{tmp_path}?sync=normal", "email") == tmp_path / "email.sqlite3"
    assert await list_queue_names(f"local:{tmp_path}?sync=normal") == ["email"]


@pytest.mark.parametrize(
    ("query", "named"),
    [
        ("sync=fast", "'fast'"),
        ("sync=", "''"),
        ("sync=FULL", "'FULL'"),
        ("mode=normal", "'mode=normal'"),
        ("sync", "'sync'"),
        ("sync=normal&sync=full", "twice"),
        ("sync=normal&db=1", "'db=1'"),
    ],
)
def test_a_bad_local_url_query_is_refused_by_name_before_anything_is_made(
    tmp_path: Path, query: str, named: str
) -> None:
    url = f"local:{tmp_path / 'data'}?{query}"
    with pytest.raises(ConfigError) as raised:
        from_url(url, "email")
    assert named in str(raised.value)
    assert url in str(raised.value)
    assert _tree(tmp_path) == []


def test_sync_in_the_url_and_as_an_option_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="twice"):
        from_url(f"local:{tmp_path}?sync=normal", "email", sync="full")
    assert _tree(tmp_path) == []
    # Without one in the URL, the option goes through (and is checked as usual).
    with pytest.raises(ConfigError, match="'fast'"):
        from_url(f"local:{tmp_path}", "email", sync="fast")
    assert _tree(tmp_path) == []


async def test_the_cli_opens_a_local_url_with_sync(tmp_path: Path) -> None:
    queue = LocalJobQueue("email", tmp_path / "data")
    await queue.add("send", {"to": "a"})
    await queue.close()
    ok = await lanemq("queue", "--json", "local:./data?sync=normal", "email", "stats", cwd=tmp_path)
    assert ok.json()["counts"]["waiting"] == 1
    bad = await lanemq("queue", "local:./data?sync=fast", "email", "stats", cwd=tmp_path)
    assert bad.code == 2, bad.err  # a usage error
    assert "'fast'" in bad.err


# ------------------------------------------------------------ a killed process (SIGKILL)

ADDER = """
import asyncio, sys, time
from lanemq import LocalJobQueue

async def main() -> None:
    queue = LocalJobQueue("durable", sys.argv[1], sync="normal")
    done = await queue.add("done", {"i": -1})
    [claimed] = await queue.claim("child", max_jobs=1)
    await queue.complete(claimed.id, claimed.lock_token, {"ok": True})
    print(done.id, "completed", flush=True)
    i = 0
    deadline = time.monotonic() + 20  # never reached: the test kills this process
    while time.monotonic() < deadline:
        job = await queue.add("more", {"i": i})
        print(job.id, "waiting", i, flush=True)
        i += 1

asyncio.run(main())
"""


async def test_acknowledged_writes_survive_sigkill_with_normal_sync(
    tmp_path: Path, spawn: Spawn
) -> None:
    child = await spawn(ADDER, str(tmp_path))
    done_id, state = (await child.line()).split()
    assert state == "completed"
    acknowledged: dict[str, int] = {}
    while len(acknowledged) < 20:
        job_id, _, i = (await child.line()).split()
        acknowledged[job_id] = int(i)
    assert child.proc.returncode is None, "the child must still be adding when killed"
    child.kill()  # by PID, right after an add returned
    assert child.proc.stdout is not None
    rest = await asyncio.wait_for(child.proc.stdout.read(), WAIT)
    assert await child.wait() == -signal.SIGKILL
    for line in rest.decode().split("\n")[:-1]:  # a last line without newline is dropped
        job_id, _, i = line.split()
        acknowledged[job_id] = int(i)

    queue = LocalJobQueue("durable", tmp_path, sync="normal")  # the child left its -wal behind
    done = await queue.get_job(done_id)
    assert done is not None
    assert (done.state, done.return_value) == ("completed", {"ok": True})
    missing = []
    for job_id, i in acknowledged.items():
        job = await queue.get_job(job_id)
        if job is None:
            missing.append(job_id)
            continue
        assert (job.name, job.data, job.state) == ("more", {"i": i}, "waiting")
    assert missing == [], f"acknowledged adds lost after SIGKILL: {missing}"
    # At most the add in flight when the child died is there without having been printed.
    waiting = (await queue.get_job_counts("waiting"))["waiting"]
    assert waiting in (len(acknowledged), len(acknowledged) + 1)
    await queue.close()
