"""``lanemq worker --metrics-port``, run as a real subprocess: its endpoint, scraped over HTTP,
counts the jobs the worker completed and failed and shows its queue and the process; SIGTERM
still exits 0; a port in use exits 1 and a missing prometheus-client exits 2, both saying
why."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sys
import textwrap
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
from lanemq import LocalJobQueue
from prometheus_support import Scrape, scrape
from redis_support import free_port
from support import CHILD_WAIT, eventually

EXIT_WAIT = 30.0  # upper bound for the command to exit; never reached when things work

APP = """
import lanemq

queue = lanemq.LocalJobQueue("jobs", "./data")
worker = lanemq.JobWorker(queue, concurrency=2)


@worker.processor("ok")
async def ok(job: lanemq.Job) -> str:
    return "done"


@worker.processor("boom")
async def boom(job: lanemq.Job) -> None:
    raise lanemq.UnrecoverableError("boom")
"""


Run = Callable[..., Awaitable[asyncio.subprocess.Process]]


@pytest.fixture
async def run(tmp_path: Path) -> AsyncIterator[Run]:
    """Starts ``python -m lanemq worker args...`` in ``tmp_path`` (where ``app.py`` is),
    stderr to ``tmp_path/stderr``; a child still running at teardown is killed, by PID."""
    (tmp_path / "app.py").write_text(APP)
    await LocalJobQueue("jobs", tmp_path / "data").close()  # the file exists before the child
    children: list[asyncio.subprocess.Process] = []

    async def start(*args: str, env: dict[str, str] | None = None) -> asyncio.subprocess.Process:
        with (tmp_path / "stderr").open("wb") as err:
            child = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "lanemq",
                "worker",
                *args,
                cwd=tmp_path,
                env={**os.environ, **(env or {})},
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=err,
            )
        children.append(child)
        return child

    try:
        yield start
    finally:
        for child in children:
            if child.returncode is None:
                os.kill(child.pid, signal.SIGKILL)
                await child.wait()


def stderr(tmp_path: Path) -> str:
    return (tmp_path / "stderr").read_text(errors="replace")


async def exit_code(child: asyncio.subprocess.Process, tmp_path: Path) -> int:
    try:
        return await asyncio.wait_for(child.wait(), EXIT_WAIT)
    except asyncio.TimeoutError:
        raise AssertionError(f"still running; stderr:\n{stderr(tmp_path)}") from None


async def test_the_endpoint_counts_the_workers_jobs_and_sigterm_exits_0(
    tmp_path: Path, run: Run
) -> None:
    jobs = LocalJobQueue("jobs", tmp_path / "data")
    try:
        for i in range(3):
            await jobs.add("ok", i)
        await jobs.add("boom", None)
    finally:
        await jobs.close()
    port = free_port()
    child = await run("app:worker", "--metrics-port", str(port))
    url = f"http://127.0.0.1:{port}/metrics"
    last: list[Scrape] = []

    async def all_counted() -> bool:
        if child.returncode is not None:
            raise AssertionError(f"the worker exited; stderr:\n{stderr(tmp_path)}")
        try:
            seen = await scrape(url)
        except OSError:
            return False  # not listening yet
        last[:] = [seen]
        done = seen.value("lanemq_jobs_completed_total", queue="jobs", name="ok")
        failed = seen.value("lanemq_jobs_failed_total", queue="jobs", name="boom")
        return (done, failed) == (3, 1)

    await eventually(all_counted, "the worker's jobs on its metrics endpoint", CHILD_WAIT)
    seen = last[0]
    assert seen.value("lanemq_job_duration_seconds_count", queue="jobs", name="ok") == 3
    assert seen.value("lanemq_queue_up", queue="jobs") == 1
    assert seen.total("lanemq_queue_jobs", queue="jobs") == 4  # every job, in some state
    assert "process_cpu_seconds_total" in seen.names()  # the default registry's own
    assert f"serving metrics at http://127.0.0.1:{port}/metrics" in stderr(tmp_path)

    os.kill(child.pid, signal.SIGTERM)
    assert await exit_code(child, tmp_path) == 0, stderr(tmp_path)


async def test_a_port_in_use_exits_1_saying_so(tmp_path: Path, run: Run) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        child = await run("app:worker", "--metrics-port", str(port))
        assert await exit_code(child, tmp_path) == 1
    assert f"cannot serve metrics at 127.0.0.1:{port}" in stderr(tmp_path)


async def test_without_prometheus_client_it_exits_2_saying_what_to_install(
    tmp_path: Path, run: Run
) -> None:
    # A package that shadows the installed one and fails to import, as a missing one does.
    shadow = tmp_path / "shadow" / "prometheus_client"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text(
        textwrap.dedent("""
            raise ImportError("No module named 'prometheus_client'")
        """)
    )
    child = await run(
        "app:worker", "--metrics-port", str(free_port()), env={"PYTHONPATH": str(shadow.parent)}
    )
    assert await exit_code(child, tmp_path) == 2
    assert "pip install 'lanemq[prometheus]'" in stderr(tmp_path)
