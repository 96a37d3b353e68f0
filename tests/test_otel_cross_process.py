"""lanemq.otel across processes: a producer process adds jobs to a local (SQLite) queue and to
a Redis queue inside a span, a consumer process runs workers on both, and the consumer's
``process`` spans are the children of (and link to) the producer's ``send`` spans. Both
processes set a global SDK provider and never call `instrument`: the automatic activation,
at import (producer) and at worker start (consumer, whose provider is set after lanemq is
imported). And a process with the API imported but no provider records nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from redis_support import MakeServer

_SDK = """
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
"""

PRODUCER = (
    _SDK
    + """
import asyncio, json, sys

trace.set_tracer_provider(provider)
import lanemq  # a real provider is set already: tracing turns on by itself
from lanemq import LocalJobQueue, RedisJobQueue, otel

def ids(span):
    return [format(span.context.trace_id, "032x"), format(span.context.span_id, "016x")]

async def main():
    out = {"instrumented": otel.is_instrumented()}
    queues = {
        "local": LocalJobQueue("orders", sys.argv[1]),
        "redis": RedisJobQueue("orders", sys.argv[2], prefix="otel-xp"),
    }
    with trace.get_tracer("shop").start_as_current_span("checkout") as checkout:
        for backend, queue in queues.items():
            job = await queue.add("ship", {"backend": backend})
            send = exporter.get_finished_spans()[-1]
            out[backend] = {"job": job.id, "send": ids(send), "span": send.name}
    out["checkout"] = format(checkout.get_span_context().span_id, "016x")
    await queues["redis"].close()
    print(json.dumps(out))

asyncio.run(main())
"""
)

CONSUMER = """
import asyncio, json, sys

import lanemq  # imported before any provider is set: tracing is off here
from lanemq import JobWorker, LocalJobQueue, RedisJobQueue, otel

before = otel.is_instrumented()
"""

CONSUMER += (
    _SDK
    + """
trace.set_tracer_provider(provider)  # the next worker start turns tracing on

def ids(context):
    return [format(context.trace_id, "032x"), format(context.span_id, "016x")]

async def main():
    out = {"before": before}
    queues = {
        "local": LocalJobQueue("orders", sys.argv[1]),
        "redis": RedisJobQueue("orders", sys.argv[2], prefix="otel-xp"),
    }
    for backend, queue in queues.items():
        seen = []

        async def ship(job):
            seen.append(ids(trace.get_current_span().get_span_context()))
            return job.data["backend"]

        processed = await JobWorker(queue, ship).run_until_idle()
        process = [s for s in exporter.get_finished_spans() if s.name == "process orders"][-1]
        out[backend] = {
            "processed": processed,
            "job": process.attributes["messaging.message.id"],
            "span": ids(process.context),
            "parent": ids(process.parent),
            "links": [ids(link.context) for link in process.links],
            "current": seen,
        }
    out["after"] = otel.is_instrumented()
    await queues["redis"].close()
    print(json.dumps(out))

asyncio.run(main())
"""
)

NO_PROVIDER = """
import asyncio, json, sys

from opentelemetry import trace  # the API is loaded (as FastAPI loads it), no provider set
import lanemq
from lanemq import JobWorker, LocalJobQueue, otel

async def main():
    queue = LocalJobQueue("plain", sys.argv[1])
    seen = []

    async def work(job):
        seen.append(trace.get_current_span().get_span_context().is_valid)

    job = await queue.add("x", None)
    bulk = await queue.add_bulk([("y", 1), ("z", 2)])
    processed = await JobWorker(queue, work, concurrency=3).run_until_idle()
    stored = [await queue.get_job(j.id) for j in [job, *bulk]]
    print(json.dumps({
        "instrumented": otel.is_instrumented(),
        "telemetry": [s.options.telemetry for s in stored],
        "options": [s.options.to_json() for s in stored],
        "processed": processed,
        "current_span_valid": seen,
    }))

asyncio.run(main())
"""

#: The usual manual set-up: imports at the top (lanemq first, as isort orders them, or the API
#: first), the provider set in main() once the queue exists, then adds.
LATE_PROVIDER = """
import asyncio, json, sys

{imports}
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

async def main():
    queue = InMemoryJobQueue("late")
    before = otel.is_instrumented()
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    job = await queue.add("mail", None)
    [bulk] = await queue.add_bulk([("digest", 1)])
    flow = await queue.add_flow(FlowJob("report", None, children=[FlowJob("part", None)]))
    spans = exporter.get_finished_spans()
    send = [s for s in spans if s.attributes.get("messaging.message.id") == job.id]
    print(json.dumps({{
        "before": before,
        "after": otel.is_instrumented(),
        "spans": sorted(s.name for s in spans),
        "send": [s.name for s in send],
        "carried": format(send[0].context.span_id, "016x") if send else None,
        "telemetry": (job.options.telemetry or {{}}).get("traceparent"),
        "bulk_telemetry": bulk.options.telemetry is not None,
        "flow_telemetry": flow.job.options.telemetry is not None,
    }}))

asyncio.run(main())
"""

LANEMQ_FIRST = """\
import lanemq
from lanemq import FlowJob, InMemoryJobQueue, otel
from opentelemetry import trace"""

API_FIRST = """\
from opentelemetry import trace
import lanemq
from lanemq import FlowJob, InMemoryJobQueue, otel"""

NO_API = """
import asyncio, json, sys

sys.modules["opentelemetry"] = None  # as if the otel extra were not installed
import lanemq

async def main():
    queue = lanemq.InMemoryJobQueue("plain")
    job = await queue.add("x", None)
    processed = await lanemq.JobWorker(queue, lambda job: None).run_until_idle()
    print(json.dumps({"telemetry": job.options.telemetry, "processed": processed}))

asyncio.run(main())
"""


def _run(script: str, *args: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        capture_output=True,
        text=True,
        timeout=120,  # a guard against a hang, not a timing assertion
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return out


def test_process_spans_of_another_process_are_children_of_the_send_spans(
    tmp_path: Path, own_redis: MakeServer
) -> None:
    server = own_redis()
    server.start()
    produced = _run(PRODUCER, str(tmp_path), server.url)
    assert produced["instrumented"] is True
    consumed = _run(CONSUMER, str(tmp_path), server.url)
    assert (consumed["before"], consumed["after"]) == (False, True)
    for backend in ("local", "redis"):
        sent, processed = produced[backend], consumed[backend]
        assert sent["span"] == "send orders"
        assert (processed["processed"], processed["job"]) == (1, sent["job"])
        assert processed["parent"] == sent["send"], backend
        assert processed["links"] == [sent["send"]], backend
        assert processed["current"] == [processed["span"]]  # the processor ran inside it
    # Both jobs belong to the checkout's trace.
    assert produced["local"]["send"][0] == produced["redis"]["send"][0]
    assert consumed["local"]["span"][0] == produced["local"]["send"][0]


def test_without_a_provider_nothing_is_recorded_and_jobs_carry_no_telemetry(
    tmp_path: Path,
) -> None:
    out = _run(NO_PROVIDER, str(tmp_path))
    assert out == {
        "instrumented": False,
        "telemetry": [None, None, None],
        "options": ["{}", "{}", "{}"],
        "processed": 3,
        "current_span_valid": [False, False, False],
    }


@pytest.mark.parametrize("imports", [LANEMQ_FIRST, API_FIRST], ids=["lanemq-first", "api-first"])
def test_a_provider_set_after_the_queue_is_made_traces_the_next_add(imports: str) -> None:
    out = _run(LATE_PROVIDER.format(imports=imports))
    assert (out["before"], out["after"]) == (False, True)
    assert out["send"] == ["send late"]
    assert out["telemetry"] is not None
    assert out["telemetry"].split("-")[2] == out["carried"]  # the job carries the send span
    assert (out["bulk_telemetry"], out["flow_telemetry"]) == (True, True)
    assert out["spans"] == sorted(
        ["send late", "create late", "send late", "send late", "send late"]
    )


def test_without_the_api_installed_lanemq_imports_and_adds() -> None:
    assert _run(NO_API) == {"telemetry": None, "processed": 1}
