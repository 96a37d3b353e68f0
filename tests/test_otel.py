"""lanemq.otel in one process, with an SDK of the test's own (`otel_support`): span names, kinds,
attributes, errors, links and parentage of the send / create / process / settle spans, the
metrics, lanes, and uninstrument."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from conformance.backends import queue_fixture
from lanemq import (
    DelayedError,
    FlowJob,
    InMemoryJobQueue,
    Job,
    JobOptions,
    JobQueue,
    JobWorker,
    LaneConfig,
    QueueManager,
    otel,
)
from opentelemetry import trace
from opentelemetry.trace import SpanKind, StatusCode
from otel_support import Sdk, ids, instrumented, link_ids, parent_ids, sdk

__all__ = ["sdk"]  # the fixture, used by name

queue = queue_fixture("memory", "local", "redis")

BASE = {"messaging.system": "lanemq"}


def _tracer(sdk: Sdk) -> trace.Tracer:
    return sdk.tracer_provider.get_tracer("test")


async def _noop(job: Job) -> str:
    return "ok"


async def test_add_sends_a_producer_span_whose_context_the_job_carries(
    sdk: Sdk, queue: JobQueue
) -> None:
    with _tracer(sdk).start_as_current_span("request") as request:
        job = await queue.add("mail", {"to": "ops"})
    send = sdk.span(f"send {queue.name}")
    assert send.kind == SpanKind.PRODUCER
    assert dict(send.attributes or {}) == {
        **BASE,
        "messaging.destination.name": queue.name,
        "messaging.operation.name": "send",
        "messaging.operation.type": "send",
        "messaging.message.id": job.id,
        "messaging.lanemq.job.name": "mail",
    }
    assert parent_ids(send) == (
        request.get_span_context().trace_id,
        request.get_span_context().span_id,
    )
    trace_id, span_id = ids(send)
    stored = await queue.get_job(job.id)
    assert stored is not None
    carrier = stored.options.telemetry
    assert carrier is not None
    assert carrier["traceparent"].split("-")[1:3] == [f"{trace_id:032x}", f"{span_id:016x}"]
    assert stored.data == {"to": "ops"}  # the context is metadata, never data
    sent = sdk.metric("messaging.client.sent.messages")
    assert sent == {
        frozenset(
            {
                **BASE,
                "messaging.destination.name": queue.name,
                "messaging.operation.name": "send",
            }.items()
        ): 1
    }


async def test_process_span_is_the_child_of_send_links_to_it_and_is_current(
    sdk: Sdk, queue: JobQueue
) -> None:
    job = await queue.add("mail", None)
    seen: list[Any] = []

    async def processor(job: Job) -> str:
        seen.append(trace.get_current_span().get_span_context())
        return "sent"

    worker = JobWorker(queue, processor, name="w-1")
    assert await worker.run_until_idle() == 1
    send = sdk.span(f"send {queue.name}")
    process = sdk.span(f"process {queue.name}")
    assert process.kind == SpanKind.CONSUMER
    assert parent_ids(process) == ids(send)
    assert link_ids(process) == [ids(send)]
    assert seen == [process.context]
    attributes = dict(process.attributes or {})
    assert attributes == {
        **BASE,
        "messaging.destination.name": queue.name,
        "messaging.operation.name": "process",
        "messaging.operation.type": "process",
        "messaging.message.id": job.id,
        "messaging.lanemq.job.name": "mail",
        "messaging.lanemq.job.attempt": 1,
        "messaging.client.id": "w-1",
    }
    settle = sdk.span(f"settle {queue.name}")
    assert settle.kind == SpanKind.CLIENT
    assert link_ids(settle) == [ids(process)]
    assert dict(settle.attributes or {})["messaging.lanemq.settle.outcome"] == "completed"
    assert dict(settle.attributes or {})["messaging.batch.message_count"] == 1
    key = frozenset(
        {
            **BASE,
            "messaging.destination.name": queue.name,
            "messaging.operation.name": "process",
        }.items()
    )
    assert sdk.metric("messaging.client.consumed.messages") == {key: 1}
    assert sdk.metric("messaging.process.duration") == {key: 1}


async def test_process_span_under_another_current_span_keeps_it_and_links_to_send(
    sdk: Sdk,
) -> None:
    queue = InMemoryJobQueue("ambient")
    await queue.add("mail", None)
    worker = JobWorker(queue, _noop)
    with _tracer(sdk).start_as_current_span("supervisor") as supervisor:
        assert await worker.run_until_idle() == 1
    process = sdk.span("process ambient")
    context = supervisor.get_span_context()
    assert parent_ids(process) == (context.trace_id, context.span_id)
    assert link_ids(process) == [ids(sdk.span("send ambient"))]


async def test_a_failing_processor_sets_error_type_and_retries_count_attempts(
    sdk: Sdk, queue: JobQueue
) -> None:
    await queue.add("mail", None, attempts=2)

    async def broken(job: Job) -> None:
        raise ValueError(f"smtp down (attempt {job.attempts_started})")

    worker = JobWorker(queue, broken)
    assert await worker.run_until_idle() == 2
    first, second = sdk.spans(f"process {queue.name}")
    for span, attempt in ((first, 1), (second, 2)):
        attributes = dict(span.attributes or {})
        assert (attributes["error.type"], attributes["messaging.lanemq.job.attempt"]) == (
            "ValueError",
            attempt,
        )
        assert span.status.status_code == StatusCode.ERROR
        assert [event.name for event in span.events] == ["exception"]
    settles = sdk.spans(f"settle {queue.name}")
    assert [dict(s.attributes or {})["messaging.lanemq.settle.outcome"] for s in settles] == [
        "failed",
        "failed",
    ]
    assert [link_ids(s) for s in settles] == [[ids(first)], [ids(second)]]
    key = frozenset(
        {
            **BASE,
            "messaging.destination.name": queue.name,
            "messaging.operation.name": "process",
            "error.type": "ValueError",
        }.items()
    )
    assert sdk.metric("messaging.client.consumed.messages") == {key: 2}


async def test_delayed_error_is_not_a_processing_error(sdk: Sdk) -> None:
    queue = InMemoryJobQueue("later")
    await queue.add("mail", None)

    async def later(job: Job) -> None:
        await job.move_to_delayed(60.0)
        raise DelayedError()

    assert await JobWorker(queue, later).run_until_idle() == 0
    process = sdk.span("process later")
    assert "error.type" not in dict(process.attributes or {})
    assert process.status.status_code == StatusCode.UNSET
    assert await queue.get_state("1") == "delayed"


async def test_add_bulk_has_a_create_span_per_job_and_one_linked_send_span(
    sdk: Sdk, queue: JobQueue
) -> None:
    with _tracer(sdk).start_as_current_span("import"):
        jobs = await queue.add_bulk([("a", 1), ("b", 2), ("c", 3)])
    creates = sdk.spans(f"create {queue.name}")
    send = sdk.span(f"send {queue.name}")
    assert [c.kind for c in creates] == [SpanKind.PRODUCER] * 3
    assert send.kind == SpanKind.CLIENT
    assert dict(send.attributes or {})["messaging.batch.message_count"] == 3
    assert link_ids(send) == [ids(c) for c in creates]
    by_id = {dict(c.attributes or {})["messaging.message.id"]: c for c in creates}
    assert sorted(by_id) == sorted(j.id for j in jobs)
    assert await JobWorker(queue, _noop, concurrency=3).run_until_idle() == 3
    for process in sdk.spans(f"process {queue.name}"):
        created = by_id[dict(process.attributes or {})["messaging.message.id"]]
        assert parent_ids(process) == ids(created)
        assert link_ids(process) == [ids(created)]
    assert sum(sdk.metric("messaging.client.sent.messages").values()) == 3


async def test_add_bulk_without_create_spans_shares_one_producer_send_span() -> None:
    with instrumented(bulk_create_spans=False) as sdk:
        queue = InMemoryJobQueue("bulk")
        jobs = await queue.add_bulk([("a", 1), ("b", 2)])
        send = sdk.span("send bulk")
        assert (send.kind, sdk.spans("create bulk")) == (SpanKind.PRODUCER, [])
        carriers = {j.options.telemetry["traceparent"] for j in jobs if j.options.telemetry}
        assert len(carriers) == 1
        trace_id, span_id = ids(send)
        assert carriers.pop().split("-")[1:3] == [f"{trace_id:032x}", f"{span_id:016x}"]


async def test_flow_nodes_send_spans_follow_the_tree(sdk: Sdk) -> None:
    queue = InMemoryJobQueue("flows")
    kids = queue.sibling("flows-kids")
    node = await queue.add_flow(
        FlowJob("report", children=[FlowJob("part", {"n": 1}, queue=kids.name), FlowJob("sum")])
    )
    by_name = {dict(s.attributes or {})["messaging.lanemq.job.name"]: s for s in sdk.spans()}
    root_send, kid_send, sum_send = by_name["report"], by_name["part"], by_name["sum"]
    assert (root_send.name, kid_send.name, sum_send.name) == (
        "send flows",
        "send flows-kids",
        "send flows",
    )
    assert dict(root_send.attributes or {})["messaging.message.id"] == node.job.id
    assert parent_ids(kid_send) == parent_ids(sum_send) == ids(root_send)
    assert root_send.parent is None  # no span was current: the flow is a trace of its own
    assert await JobWorker(kids, _noop).run_until_idle() == 1
    assert parent_ids(sdk.span("process flows-kids")) == ids(kid_send)


async def test_children_added_by_a_processor_are_sent_under_its_process_span(sdk: Sdk) -> None:
    queue = InMemoryJobQueue("spawn")

    spawned: list[str] = []

    async def parent(job: Job) -> None:
        if job.name == "parent" and not spawned:  # (it runs again once its child is done)
            spawned.append(job.id)
            await job.add_children([FlowJob("child")])

    await queue.add("parent", None)
    assert await JobWorker(queue, parent).run_until_idle() == 2  # the child, the parent again
    first_process = sdk.spans("process spawn")[0]
    child_send = [
        s
        for s in sdk.spans("send spawn")
        if dict(s.attributes or {})["messaging.lanemq.job.name"] == "child"
    ]
    assert [parent_ids(s) for s in child_send] == [ids(first_process)]


async def test_a_creation_context_given_by_the_caller_is_kept_and_linked(sdk: Sdk) -> None:
    queue = InMemoryJobQueue("custom")
    carrier = {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
    job = await queue.add("mail", None, JobOptions(telemetry=carrier))
    assert job.options.telemetry == carrier
    send = sdk.span("send custom")
    assert send.kind == SpanKind.CLIENT
    assert link_ids(send) == [(0x0AF7651916CD43DD8448EB211C80319C, 0xB7AD6B7169203331)]
    await JobWorker(queue, _noop).run_until_idle()
    assert parent_ids(sdk.span("process custom")) == link_ids(send)[0]


async def test_a_plain_def_processor_sees_the_process_span_in_its_thread(sdk: Sdk) -> None:
    queue = InMemoryJobQueue("threads")
    await queue.add("mail", None)
    seen: list[Any] = []

    def blocking(job: Job) -> None:
        seen.append(trace.get_current_span().get_span_context())

    assert await JobWorker(queue, blocking).run_until_idle() == 1
    assert seen == [sdk.span("process threads").context]


async def test_uninstrument_stops_spans_and_telemetry_even_for_a_running_worker() -> None:
    with instrumented() as sdk:
        queue = InMemoryJobQueue("off")
        worker = JobWorker(queue, _noop)
        processed = asyncio.Event()
        worker.on("completed", lambda job, result: processed.set())
        async with worker:
            await queue.add("one", None)
            await asyncio.wait_for(processed.wait(), 10)
            otel.uninstrument()
            assert not otel.is_instrumented()
            processed.clear()
            job = await queue.add("two", None)
            await asyncio.wait_for(processed.wait(), 10)
        assert job.options.telemetry is None
        names = [s.name for s in sdk.spans()]
        assert names.count("process off") == 1
        assert names.count("send off") == 1


async def test_lane_commands_get_a_span_under_the_submitter() -> None:
    with instrumented() as sdk:
        lanes = [LaneConfig("io", 0, 1, 2)]
        seen: list[Any] = []

        async def fetch(n: int) -> int:
            seen.append(trace.get_current_span().get_span_context())
            return n * 2

        async with QueueManager(lanes, tracing=True) as manager:
            with _tracer(sdk).start_as_current_span("handler") as handler:
                assert await manager.submit("io", fetch, 21) == 42
            assert manager.metrics()["io"]["completed"] == 1
        lane = sdk.span("lane io")
        assert lane.kind == SpanKind.INTERNAL
        context = handler.get_span_context()
        assert parent_ids(lane) == (context.trace_id, context.span_id)
        assert seen == [lane.context]
        attributes = dict(lane.attributes or {})
        assert (attributes["lanemq.lane.id"], attributes["lanemq.lane.command.attempt"]) == (
            "io",
            1,
        )
        assert str(attributes["lanemq.lane.command.type"]).endswith("fetch")


async def test_lanes_follow_instrument_and_are_off_by_default(sdk: Sdk) -> None:
    lanes = [LaneConfig("io", 0, 1, 2)]

    async def work() -> str:
        return "done"

    async with QueueManager(lanes) as manager:
        assert await manager.submit("io", work) == "done"
    assert sdk.spans("lane io") == []
    with instrumented(lanes=True) as traced:
        async with QueueManager(lanes) as manager:
            assert await manager.submit("io", work) == "done"
        assert len(traced.spans("lane io")) == 1


@pytest.fixture(autouse=True)
def _no_instrumentation_left() -> Iterator[None]:
    yield
    assert not otel.is_instrumented(), "a test left lanemq.otel instrumented"


async def test_an_add_under_a_parent_sends_a_span_the_job_carries(sdk: Sdk) -> None:
    queue = InMemoryJobQueue("adopted")
    parent = await queue.add("parent", None)
    child = await queue.add("child", None, parent={"id": parent.id})
    send = [
        s
        for s in sdk.spans("send adopted")
        if dict(s.attributes or {})["messaging.lanemq.job.name"] == "child"
    ]
    assert [dict(s.attributes or {})["messaging.message.id"] for s in send] == [child.id]
    assert child.options.telemetry


async def test_a_flow_whose_existing_root_has_more_children_is_traced(sdk: Sdk) -> None:
    queue = InMemoryJobQueue("again")
    root = FlowJob("root", options={"job_id": "r"}, children=[FlowJob("a")])
    await queue.add_flow(root, now=1)
    again = await queue.add_flow(root, now=2)  # r gains a second "a": three rows, two nodes
    assert len(again.children) == 2
    assert len(sdk.spans("send again")) == 4
