"""Correct uses of lanemq's typed options and submits: mypy --strict must accept every line
(tests/typing_check/test_typing.py checks it). It is type-checked, not run."""

from __future__ import annotations

import functools
from collections.abc import Awaitable
from typing import Any, TypedDict

import lanemq
from lanemq import (
    Backoff,
    Dedup,
    InMemoryJobQueue,
    Job,
    JobOptions,
    JobWorker,
    KeepJobs,
    QueueManager,
)
from lanemq.sync import LocalJobQueue, SyncJob
from lanemq.wiring import Entrypoint, ServiceConfig, build_service


async def cancel_session(session_id: str, *, force: bool = False) -> int:
    return len(session_id) + force


def render(template: str, count: int) -> str:  # a plain function: runs in a worker thread
    return template * count


class Reindex:
    command_type = "reindex"

    async def execute(self) -> list[str]:
        return ["done"]


async def jobs() -> None:
    queue = InMemoryJobQueue("email")
    await queue.add(
        "send",
        {"to": "ops@example.com"},
        job_id="welcome:ops",
        priority=10,
        lifo=True,
        delay=5.0,
        attempts=3,
        backoff=Backoff.exponential(1.0),
        timeout=30.0,
        remove_on_complete=KeepJobs(count=1000),
        remove_on_fail=True,
        max_stalled_count=2,
        dedup=Dedup("user:42", ttl=60.0),
    )
    await queue.add("send", None, JobOptions(priority=1))
    await queue.add("send", None, {"priority": 1, "parent_policy": None})
    await queue.add("tick", None, repeat=lanemq.Repeat(every=60.0), priority=2)
    await queue.add("report", None, repeat={"pattern": "0 9 * * *", "tz": "Europe/Berlin"})
    await queue.add_bulk([("a", 1), ("b", 2, JobOptions(delay=1.0)), ("c", 3, {"lifo": True})])


async def queue_contexts(directory: str) -> None:
    # ``async with`` gives the queue's own class, not the base JobQueue.
    async with lanemq.LocalJobQueue("email", directory) as local:
        kept_local: lanemq.LocalJobQueue = local
    async with InMemoryJobQueue("email") as memory:
        kept_memory: InMemoryJobQueue = memory
    async with lanemq.RedisJobQueue("email", "redis://localhost:6379") as redis:
        kept_redis: lanemq.RedisJobQueue = redis
    print(kept_local, kept_memory, kept_redis)


def sync_jobs() -> int:
    with LocalJobQueue("email", "./lanemq-data") as queue:
        job = queue.add("send", {"to": "ops@example.com"}, priority=3, attempts=2)
        queue.add_bulk([("a", 1), ("b", 2, JobOptions(priority=4))])
        return job.priority


async def lanes() -> None:
    async with QueueManager.with_default_lanes() as manager:
        count: int = await manager.submit("control", cancel_session, "s-42", force=True)
        text: str = await manager.submit("query", render, "ab", 3)
        names: list[str] = await manager.submit("system", Reindex())
        partial: int = await manager.submit("control", functools.partial(cancel_session, "s"))
        handle = manager.submit_nowait("prompt", cancel_session, "s-43")
        later: int = await handle
        print(count, text, names, partial, later)


def processors(queue: InMemoryJobQueue) -> None:
    worker = JobWorker(queue)

    @worker.processor  # bare: registered under its name, "send"
    async def send(job: Job) -> str:
        return job.id

    @worker.processor("resize")
    def resize(job: Job) -> int:
        return len(job.id)

    @worker.processor()
    async def anything(job: Job) -> None:
        return None

    # The decorators give the functions back with their types.
    sent: Awaitable[str] = send(Job.__new__(Job))
    size: int = resize(Job.__new__(Job))
    print(sent, size, anything)


class EmailData(TypedDict):
    to: str


class SendResult(TypedDict):
    message_id: str


async def typed_jobs(queue: InMemoryJobQueue) -> None:
    # add gives Job[<the data's type>, Any]; an annotation names the result type.
    job = await queue.add("send", EmailData(to="ops@example.com"))
    address: str = job.data["to"]
    typed: Job[EmailData, SendResult] = await queue.add("send", {"to": "ops@example.com"})
    result: SendResult = await typed.wait(timeout=5)
    again: Job[EmailData, SendResult] = await typed.refresh()
    data_only: Job[EmailData] = job  # the result type defaults to Any
    bare: Job = typed  # a bare Job is Job[Any, Any]
    await typed.update_data({"to": "dev@example.com"})
    untyped = await queue.add("ping")
    anything: int = untyped.data  # no data given: Any
    print(address, result["message_id"], again, data_only, bare, anything)


def typed_processors(queue: InMemoryJobQueue) -> None:
    worker = JobWorker(queue)

    @worker.processor("send")
    async def send(job: Job[EmailData, SendResult]) -> SendResult:
        return {"message_id": job.data["to"]}

    @worker.processor("report")
    def report(job: Job[dict[str, Any], list[int]]) -> list[int]:
        return [len(job.data)]

    print(send, report)


def typed_retry_rules(queue: InMemoryJobQueue) -> None:
    async def linear(attempts_made: int, error: BaseException, job: Job) -> float:
        return 5.0 * attempts_made

    worker = JobWorker(
        queue,
        retry_on=(ConnectionError, TimeoutError),
        no_retry_on=KeyError,
        backoff_strategies={"linear": linear, "fixed": lambda n, error, job: 1},
    )

    @worker.processor("charge", no_retry_on=(ValueError,))
    async def charge(job: Job) -> None:
        raise ConnectionError("down")

    backoff: Backoff = Backoff.custom("linear")
    print(charge, backoff.name)


def typed_sync_jobs() -> str:
    with LocalJobQueue("email", "./lanemq-data") as queue:
        job: SyncJob[EmailData, SendResult] = queue.add("send", EmailData(to="ops@example.com"))
        address: str = job.data["to"]
        return address + job.wait(timeout=5)["message_id"]


def typed_wiring() -> None:
    async def send(job: Job[EmailData, SendResult]) -> SendResult:
        return {"message_id": job.data["to"]}

    def bury(job: Job, error: BaseException) -> None:
        print(job.id, error)

    service = build_service(ServiceConfig("mailer", ["emails"], url="memory://"), consume=[])
    served: bool = service.serve("emails", Entrypoint({"send": send}, on_dead=bury))
    print(served, service.producer("emails").name)
