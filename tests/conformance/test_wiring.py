"""Conformance of `lanemq.wiring` on every backend: a service built from its config adds to its
queues and, where the process consumes them, runs its entrypoints (routed by job name, an
unknown name failing clearly), calls the dead-job hook once when a job fails for good, and
holds no worker where it consumes nothing."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from lanemq import Job, JobFailedError, JobQueue, LocalJobQueue, RedisJobQueue
from lanemq.wiring import Entrypoint, ServiceConfig, build_service

LIMIT = 5.0  # upper bound for anything awaited; a healthy run needs a small fraction of it


def service_config(queue: JobQueue, *names: str, **service: Any) -> ServiceConfig:
    """A service whose queues ``names`` live where the test's ``queue`` does (its backend:
    the same server and prefix, or directory)."""
    url, options = "memory://", {}
    if isinstance(queue, RedisJobQueue):
        url, options = queue.url, {"prefix": queue.prefix}
    elif isinstance(queue, LocalJobQueue):
        url = f"local:{queue.path.parent}"
    return ServiceConfig("svc", names, url=url, options=options, **service)


@pytest.fixture
def names(queue: JobQueue, sibling: Callable[[str], JobQueue]) -> tuple[str, str]:
    """Two queue names beside the test's queue, emptied after the test."""
    return sibling("emails").name, sibling("reports").name


async def test_a_service_produces_to_its_queues_and_runs_the_entrypoints_of_those_it_consumes(
    queue: JobQueue, names: tuple[str, str]
) -> None:
    emails, reports = names
    config = service_config(queue, emails, reports, consume=[emails, reports])

    async def send(job: Job) -> str:
        return f"sent to {job.data['to']}"

    async def weekly(job: Job) -> int:
        return int(job.data["week"]) * 2

    service = build_service(config)
    assert service.serve(emails, Entrypoint({"send": send}))
    assert service.serve(reports, Entrypoint({"weekly": weekly}))
    assert service.consuming == (emails, reports)
    async with service:
        sent = await service.producer(emails).add("send", {"to": "ops"})
        report = await service.producer(reports).add("weekly", {"week": 21})
        assert await sent.wait(timeout=LIMIT) == "sent to ops"
        assert await report.wait(timeout=LIMIT) == 42
        # Routed by name within its queue: "weekly" has no handler in the emails queue.
        stray = await service.producer(emails).add("weekly", {"week": 1})
        with pytest.raises(JobFailedError, match="no processor for job name 'weekly'"):
            await stray.wait(timeout=LIMIT)
        assert await service.producer(emails).get_state(stray.id) == "failed"


async def test_the_dead_job_hook_is_called_once_when_a_job_fails_for_good(
    queue: JobQueue, names: tuple[str, str]
) -> None:
    emails, _ = names
    dead: list[tuple[str, str, str]] = []
    failed: list[str] = []
    buried = asyncio.Event()

    async def send(job: Job) -> None:
        raise ValueError(f"mailbox {job.data['to']} is full")

    def on_dead(job: Job, error: BaseException) -> None:
        dead.append((job.id, job.name, str(error)))
        buried.set()

    def on_failed(job: Job, error: BaseException) -> None:
        failed.append(job.id)

    entrypoint = Entrypoint({"send": send}, on_dead=on_dead, on_failed=on_failed)
    service = build_service(service_config(queue, emails), consume=[emails])
    service.serve(emails, entrypoint)
    async with service:
        job = await service.producer(emails).add("send", {"to": "ops"}, attempts=2)
        await asyncio.wait_for(buried.wait(), LIMIT)
        with pytest.raises(JobFailedError, match="mailbox ops is full"):
            await job.wait(timeout=LIMIT)
    assert failed == [job.id, job.id]  # each attempt
    assert dead == [(job.id, "send", "mailbox ops is full")]  # once, at the last


async def test_an_unknown_job_name_is_dead_at_once(queue: JobQueue, names: tuple[str, str]) -> None:
    emails, _ = names
    dead: list[str] = []
    buried = asyncio.Event()

    def on_dead(job: Job, error: BaseException) -> None:
        dead.append(f"{job.name}: {error}")
        buried.set()

    async def send(job: Job) -> str:
        return "sent"

    service = build_service(
        service_config(queue, emails, consume=[emails]),
        entrypoints={emails: Entrypoint({"send": send}, on_dead=on_dead)},
    )
    async with service:
        job = await service.producer(emails).add("welcome", {}, attempts=3)
        await asyncio.wait_for(buried.wait(), LIMIT)
        with pytest.raises(JobFailedError, match="no processor for job name 'welcome'"):
            await job.wait(timeout=LIMIT)
    assert dead == ["welcome: no processor for job name 'welcome'"]


async def test_a_process_that_consumes_nothing_holds_no_worker(
    queue: JobQueue, names: tuple[str, str]
) -> None:
    emails, reports = names
    config = service_config(queue, emails, reports, consume=[emails])

    async def send(job: Job) -> str:
        return "sent"

    # The config's consume is the default; this process says it consumes nothing.
    service = build_service(config, consume=[], entrypoints={emails: Entrypoint({"send": send})})
    assert service.workers == {}
    assert service.consuming == ()
    assert not service.serve(emails, Entrypoint({"send": send}))  # not here: nothing attached
    async with service:
        job = await service.producer(emails).add("send", {})
        await service.producer(reports).add("weekly", {})
        # Nobody takes the jobs: they wait for a process that consumes their queues.
        assert await service.producer(emails).get_state(job.id) == "waiting"
        assert await service.producer(reports).count_pending() == 1
