"""The add paths of `JobQueue` (add, add_bulk, add_flow, add_children) call the producer that
`lanemq._tracing` chooses when tracing is switched, rather than each testing whether it is on:
switching with `lanemq.otel` must reach every one of them, both ways."""

from __future__ import annotations

from lanemq import FlowJob, InMemoryJobQueue, otel
from otel_support import instrumented


async def test_every_add_path_follows_instrument_and_then_uninstrument() -> None:
    with instrumented() as sdk:
        queue = InMemoryJobQueue("switched")

        async def sends_per_path() -> list[int]:
            sent = []
            await queue.add("one", None)
            sent.append(len(sdk.spans("send switched")))
            await queue.add_bulk([("two", None)])
            sent.append(len(sdk.spans("send switched")))
            await queue.add_flow(FlowJob("three"))
            sent.append(len(sdk.spans("send switched")))
            [held] = await queue.claim("worker")
            await held.add_children([FlowJob("four")])
            sent.append(len(sdk.spans("send switched")))
            return sent

        assert await sends_per_path() == [1, 2, 3, 4]
        otel.uninstrument()
        assert await sends_per_path() == [4, 4, 4, 4]
        assert await queue.get_job_count() == 8
