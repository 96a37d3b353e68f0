"""``GET /api/counts``: the job counts per state of the queues as JSON, which the overview,
a queue's page and a job list read every few seconds to update their numbers in place (no
reload). ``?queue=NAME`` reads that queue only (the pages of one queue need no other).
It sits behind the same host check and access token as the pages, and is never cached
(the guard's ``cache-control: no-store``)."""

from __future__ import annotations

from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ..queue import JobQueue
from ._source import QueueSource


async def _entry(queue: JobQueue) -> dict[str, Any]:
    stats = await queue.get_stats()
    return {
        "name": queue.name,
        "counts": dict(stats.counts),
        "paused": stats.paused,
        "workers": len(await queue.get_workers()),
    }


class LiveCounts:
    def __init__(self, source: QueueSource) -> None:
        self.source = source

    async def endpoint(self, request: Request) -> Response:
        name = request.query_params.get("queue")
        try:
            queues = await self.source.all() if name is None else [await self.source.get(name)]
        except HTTPException as refusal:  # (an unknown queue: JSON, as the script expects)
            return JSONResponse({"error": refusal.detail}, status_code=refusal.status_code)
        return JSONResponse({"queues": [await _entry(queue) for queue in queues]})
