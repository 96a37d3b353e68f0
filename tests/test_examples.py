"""Every file in examples/ runs as a user would run it (a subprocess, in a fresh directory) and
prints what it claims to show; producer and worker examples run as two processes."""

from __future__ import annotations

import asyncio
import importlib.util
import itertools
import os
import re
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from types import ModuleType

import lanemq
import pytest
from redis_support import MakeServer
from support import CHILD_WAIT, Child, kill_all

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
RUN_WAIT = 60.0  # upper bound for an example to finish; never reached when things work

Start = Callable[..., Awaitable[Child]]


@pytest.fixture
async def start(tmp_path: Path) -> AsyncIterator[Start]:
    """Starts ``python examples/<name> args...`` in ``tmp_path`` (``env``: extra variables);
    every child still running at teardown is killed."""
    children: list[Child] = []
    numbers = itertools.count(1)

    async def start_example(name: str, *args: str, env: dict[str, str] | None = None) -> Child:
        stderr_path = tmp_path / f"{name}-{next(numbers)}.stderr"
        with stderr_path.open("wb") as stderr:
            proc = await asyncio.create_subprocess_exec(
                sys.executable,
                str(EXAMPLES / name),
                *args,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=stderr,
                cwd=tmp_path,
                env={**os.environ, **(env or {})},
            )
        child = Child(proc, stderr_path)
        children.append(child)
        return child

    try:
        yield start_example
    finally:
        await kill_all(children)


async def finish(child: Child) -> str:
    """The rest of the child's output, once it exited with status 0."""
    assert child.proc.stdout is not None
    out = await asyncio.wait_for(child.proc.stdout.read(), RUN_WAIT)
    status = await child.wait(RUN_WAIT)
    assert status == 0, f"exit status {status}; stderr:\n{child.stderr()}"
    return out.decode()


async def lines_until(child: Child, marker: str) -> list[str]:
    """The child's lines up to and including the first that contains ``marker``."""
    lines = [await child.line()]
    while marker not in lines[-1]:
        lines.append(await child.line())
    return lines


async def run(start: Start, name: str, *args: str, env: dict[str, str] | None = None) -> str:
    return await finish(await start(name, *args, env=env))


def test_every_example_has_a_test_here() -> None:
    tested = {
        "quickstart.py",
        "local_producer.py",
        "local_worker.py",
        "sync_producer.py",
        "redis_producer.py",
        "redis_worker.py",
        "fastapi_app.py",
        "schedulers.py",
        "flow.py",
        "lanes_priorities.py",
    }
    assert {path.name for path in EXAMPLES.glob("*.py")} == tested


async def test_quickstart_shows_each_step_and_remembers_earlier_runs(start: Start) -> None:
    out = await run(start, "quickstart.py")
    lanes = "control-0, control-1, query-0, query-1, skill-0, skill-1, prompt-0, prompt-1"
    assert f"lanes started by priority: {lanes}\n" in out
    assert "flaky lane command: ok after 3 attempts\n" in out
    assert "broken lane command raised: always fails\n" in out
    assert "dead letter: main.<locals>.broken, 3 attempts: RuntimeError: always fails\n" in out
    assert "lane metrics: 1 completed, 4 retried\n" in out
    [ran] = re.findall(r"^jobs ran in this order: (.*)$", out, re.MULTILINE)
    runs = ran.split(", ")
    assert runs[:3] == [
        "ceo@example.com (priority 0)",
        "flaky@example.com (priority 0; failed: provider timed out)",
        "ops@example.com (priority 1)",
    ]
    # The retry waits out its backoff (50 ms): it may come before or after the last one.
    assert sorted(runs[3:]) == ["bulk@example.com (priority 10)", "flaky@example.com (retry)"]
    assert "flaky job result: {'sent': 'flaky@example.com'} after 2 attempts\n" in out
    assert "{'completed': 4, 'failed': 0} (0 completed by earlier runs)\n" in out
    again = await run(start, "quickstart.py")
    assert "{'completed': 8, 'failed': 0} (4 completed by earlier runs)\n" in again


async def test_local_producer_and_worker_processes(start: Start) -> None:
    producer = await start("local_producer.py")
    added = await lines_until(producer, "waiting for a worker")
    assert added[:4] == [
        "producer: added job 1: resize avatar.png",
        "producer: added job 2: resize photo-1.jpg",
        "producer: added job 3: resize photo-2.jpg",
        "producer: added job 4: resize photo-3.jpg",
    ]
    worker = await run(start, "local_worker.py", "--until-idle")
    assert "worker: resized avatar.png to 64px" in worker
    assert worker.splitlines()[-1] == "worker: processed 4 jobs"
    results = (await finish(producer)).splitlines()
    assert results == [
        "producer: job 1 done: {'image': 'avatar.png', 'width': 64}",
        *(
            f"producer: job {n + 1} done: {{'image': 'photo-{n}.jpg', 'width': 640}}"
            for n in (1, 2, 3)
        ),
    ]


async def test_local_worker_without_until_idle_runs_until_ctrl_c(
    start: Start, tmp_path: Path
) -> None:
    queue = lanemq.LocalJobQueue("thumbnails", tmp_path / "lanemq-data")
    job = await queue.add("resize", {"image": "a.png", "width": 10})
    worker = await start("local_worker.py")
    assert await worker.line() == "worker: resized a.png to 10px"
    assert await job.wait(timeout=CHILD_WAIT) == {"image": "a.png", "width": 10}
    worker.proc.send_signal(signal.SIGINT)
    assert await finish(worker) == "worker: stopped\n"
    await queue.close()


async def test_sync_producer_threads_and_a_worker_process(start: Start) -> None:
    producer = await start("sync_producer.py")
    lines = await lines_until(producer, "waiting for a worker")
    ids = lines[0].removeprefix("sync producer: added jobs ").split(", ")
    assert sorted(ids) == ["1", "2", "3", "4"]
    assert lines[1] == "sync producer: counts {'waiting': 4, 'active': 0}"
    worker = await run(start, "local_worker.py", "--until-idle")
    assert worker.splitlines()[-1] == "worker: processed 4 jobs"
    results = (await finish(producer)).splitlines()
    images = [re.search(r"'image': '([^']+)'", line) for line in results[:4]]
    assert [m[1] for m in images if m] == [f"upload-{n}.png" for n in range(1, 5)]
    assert results[-1] == "sync producer: state of the first job now: completed"


async def test_redis_producer_and_worker_processes(start: Start, own_redis: MakeServer) -> None:
    server = own_redis()
    server.start()
    env = {"LANEMQ_REDIS_URL": server.url}
    producer = await start("redis_producer.py", env=env)
    lines = await lines_until(producer, "waiting for a worker")
    assert lines[0] == (
        "producer: added invoice:101, invoice:102, invoice:103; the same id again: invoice:101"
    )
    assert lines[1] == "producer: key customer:7 is held by job 1; a duplicate got 1"
    worker = await run(start, "redis_worker.py", "--until-idle", env=env)
    assert "worker: rendered invoice 104" in worker and "invoice 105" not in worker
    assert worker.splitlines()[-1] == "worker: processed 4 jobs"
    results = (await finish(producer)).splitlines()
    assert results == [
        "producer: invoice:101 -> {'pdf': 'invoice-101.pdf'}",
        "producer: invoice:102 -> {'pdf': 'invoice-102.pdf'}",
        "producer: invoice:103 -> {'pdf': 'invoice-103.pdf'}",
        "producer: 1 -> {'pdf': 'invoice-104.pdf'}",
    ]


async def test_fastapi_app_as_a_script(start: Start) -> None:
    out = (await run(start, "fastapi_app.py")).splitlines()
    assert out == [
        "POST /word-count: 200 {'job_id': '1', 'result': {'words': 3, 'longest': 6}}",
        "GET /jobs/1: {'job_id': '1', 'state': 'completed', 'result': {'words': 3, 'longest': 6}}",
        "POST /word-count (empty): 422 {'detail': 'ValueError: no words to count'}",
    ]


def _import_example(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_fastapi_app_through_the_test_client(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fastapi.testclient import TestClient

    monkeypatch.setenv("LANEMQ_DATA", str(tmp_path))
    app = _import_example("fastapi_app").app
    assert not list(tmp_path.iterdir()), "importing the app opened the queue"
    with TestClient(app) as client:
        replies = [client.post("/word-count", json={"text": "a bb ccc " * n}) for n in (1, 2)]
        assert [r.json() for r in replies] == [
            {"job_id": "1", "result": {"words": 3, "longest": 3}},
            {"job_id": "2", "result": {"words": 6, "longest": 3}},
        ]
        assert client.get("/jobs/2").json()["state"] == "completed"
        failed = client.post("/word-count", json={"text": ""})
        assert (failed.status_code, failed.json()) == (
            422,
            {"detail": "ValueError: no words to count"},
        )
        assert client.get("/jobs/3").json()["state"] == "failed"
        missing = client.get("/jobs/nope")
        assert (missing.status_code, missing.json()) == (404, {"detail": "no job 'nope'"})
    assert (tmp_path / "word-counts.sqlite3").exists()


async def test_schedulers_example(start: Start) -> None:
    out = (await run(start, "schedulers.py")).splitlines()
    assert re.fullmatch(r"pending occurrence: repeat:heartbeat:\d+ waiting", out[0])
    assert re.fullmatch(
        r"weekday-report: next run (Mon|Tue|Wed|Thu|Fri) \d{4}-\d\d-\d\d 0[78]:00 UTC "
        r"\(cron 0 9 \* \* 1-5\)",
        out[1],
    )
    assert [re.sub(r"\d+", "N", line) for line in out[2:5]] == ["ran repeat:heartbeat:N (api)"] * 3
    assert out[5:] == [
        "seconds between run times: [0.2, 0.2]",
        "heartbeat scheduler after its limit: None",
        "schedulers left: ['weekday-report']",
        "after remove_scheduler: 0 schedulers",
    ]


async def test_flow_example(start: Start) -> None:
    out = (await run(start, "flow.py")).splitlines()
    assert out[0] == "parent books:1: waiting_children, children pages:1, pages:2, pages:3"
    assert sorted(out[1:4]) == [f"child pages:{n}: rendered page {n}" for n in (1, 2, 3)]
    assert out[4:] == [
        "parent books:1: children done, assembling ['pages:1', 'pages:2', 'pages:3']",
        "result: {'pages': 3, 'characters': 52}",
        "dependencies: {'processed': 3, 'unprocessed': 0, 'failed': 0, 'ignored': 0, 'missing': 0}",
    ]


async def test_lanes_priorities_example(start: Start) -> None:
    out = (await run(start, "lanes_priorities.py")).splitlines()
    assert out == [
        "submitted: batch, batch, batch, interactive, interactive, interactive",
        "started:   click-0, click-1, batch-0, batch-1, batch-2, click-2",
        "results:   BATCH-0, BATCH-1, BATCH-2, CLICK-0, CLICK-1, CLICK-2",
        "peak concurrency: 5 (each lane has its own cap, no global one)",
        "with a global cap: click-0, nightly, click-1, click-2, click-3 | peak 2",
        "retried: ok after 3 attempts",
        "batch lane metrics: completed 1 retried 2",
    ]
