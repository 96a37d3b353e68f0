"""The dashboard's pages (GET): the queues, one queue, its jobs in a state, one job, its
schedulers, its workers. Every bad value in the path or the query is a 4xx page naming it."""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from ..job import Job
from ..queue import STATES, JobQueue, QueueStats
from ._logs import log_rows
from ._render import Renderer, path_part, pretty
from ._source import QueueSource

PAGE_SIZE = 25
LOG_LINES = 200
CHILDREN_SHOWN = 100
#: The minutes the charts show (the newest of the per-minute metrics).
CHART_MINUTES = 60
#: The states whose list reads best newest first (by finish time); the others show the next
#: job to run first.
NEWEST_FIRST = ("completed", "failed")

#: What an action's redirect may ask a page to say (``?done=``), so a link cannot make the
#: dashboard show text of its choosing.
NOTICES = {
    "retried": "The job is waiting again.",
    "retried-failed": "{n} failed job(s) are waiting again.",
    "removed": "The job was removed.",
    "promoted": "The job is waiting now.",
    "cleaned": "{n} job(s) were removed.",
    "paused": "The queue is paused: workers take no more jobs from it.",
    "resumed": "The queue is resumed.",
    "group-paused": "The group is paused: workers take no more of its jobs.",
    "group-resumed": "The group is resumed.",
    "group-removed": "{n} waiting or delayed job(s) of the group were removed.",
    "cancelled": "The job was cancelled.",
    "cancel-requested": "The job is running: its worker was told to stop it.",
}


@dataclass(frozen=True)
class Chart:
    """A queue's per-minute chart: ``spec`` is what the page's script draws (JSON: the
    newest `CHART_MINUTES` of the completed and failed metrics, each newest first from the
    minute ``newest``, and the server's time, so the chart's "now" is the server's whatever
    the browser's clock says); the totals ever recorded; whether anything was."""

    spec: str
    completed: int
    failed: int
    recorded: bool


async def chart(queue: JobQueue) -> Chart:
    series = {
        kind: await queue.get_metrics(kind, start=0, end=CHART_MINUTES - 1)
        for kind in ("completed", "failed")
    }
    spec = {
        "minutes": CHART_MINUTES,
        "now": int(time.time() * 1000),
        **{k: {"data": m.data, "newest": m.newest_minute} for k, m in series.items()},
    }
    return Chart(
        json.dumps(spec),
        series["completed"].count,
        series["failed"].count,
        any(m.newest_minute is not None for m in series.values()),
    )


@dataclass(frozen=True)
class QueueRow:
    name: str
    stats: QueueStats
    workers: int
    chart: Chart


def whole_number(request: Request, field: str, default: int, low: int, high: int) -> int:
    """The query parameter ``field`` as an int from ``low`` to ``high`` (``default`` when
    absent); anything else is a 400 naming it."""
    raw = request.query_params.get(field)
    if raw is None or raw == "":
        return default
    if not (raw.isascii() and raw.isdigit()) or not low <= int(raw) <= high:
        raise HTTPException(400, f"invalid {field} {raw!r}: a whole number from {low} to {high}")
    return int(raw)


def check_state(state: str, status: int = 404) -> str:
    """``state`` if it is a job state; else a 404 (in a path) or ``status`` naming it."""
    if state not in STATES:
        raise HTTPException(status, f"unknown state {state!r} (states: {', '.join(STATES)})")
    return state


def notice(request: Request) -> str | None:
    template = NOTICES.get(request.query_params.get("done", ""))
    if template is None:
        return None
    count = request.query_params.get("n", "")
    return template.format(n=int(count) if count.isascii() and count.isdigit() else "Some")


class Pages:
    def __init__(self, source: QueueSource, render: Renderer) -> None:
        self.source = source
        self.render = render

    async def _queue(self, request: Request) -> JobQueue:
        return await self.source.get(request.path_params["queue"])

    async def overview(self, request: Request) -> Response:
        rows = []
        for queue in await self.source.all():
            workers = len(await queue.get_workers())
            rows.append(QueueRow(queue.name, await queue.get_stats(), workers, await chart(queue)))
        return self.render.page(
            request, "overview.html", queues=rows, states=STATES, notice=notice(request)
        )

    async def queue(self, request: Request) -> Response:
        queue = await self._queue(request)
        stats = await queue.get_stats()
        return self.render.page(
            request,
            "queue.html",
            queue=queue,
            stats=stats,
            states=STATES,
            schedulers=await queue.count_schedulers(),
            groups=await queue.count_groups(),
            workers=len(await queue.get_workers()),
            chart=await chart(queue),
            notice=notice(request),
        )

    async def jobs(self, request: Request) -> Response:
        queue = await self._queue(request)
        state = check_state(request.path_params["state"])
        page = whole_number(request, "page", 1, 1, 10**9)
        order = request.query_params.get("order", "desc" if state in NEWEST_FIRST else "asc")
        if order not in ("asc", "desc"):
            raise HTTPException(400, f"invalid order {order!r}: asc or desc")
        start = (page - 1) * PAGE_SIZE
        jobs, total = await queue.list_jobs_with_total(
            state, start, start + PAGE_SIZE - 1, ascending=order == "asc"
        )
        last = max(1, math.ceil(total / PAGE_SIZE))
        if page > last:
            raise HTTPException(
                404, f"page {page} is past the last page ({last}) of the {state} jobs"
            )
        return self.render.page(
            request,
            "jobs.html",
            queue=queue,
            state=state,
            jobs=jobs,
            total=total,
            page=page,
            last=last,
            order=order,
            first_index=start + 1,
            notice=notice(request),
        )

    async def lookup(self, request: Request) -> Response:
        """The form "job by id": to the job's page, or a 404 naming the id."""
        queue = await self._queue(request)
        job_id = request.query_params.get("id", "").strip()
        if not job_id:
            raise HTTPException(400, "give a job id to look up")
        if await queue.get_job(job_id) is None:
            raise HTTPException(404, f"no job {job_id!r} in queue {queue.name!r}")
        base = str(request.scope.get("root_path", ""))
        target = f"{base}/queues/{path_part(queue.name)}/job/{path_part(job_id)}"
        return RedirectResponse(target, status_code=303)

    async def job(self, request: Request) -> Response:
        queue = await self._queue(request)
        job_id = request.path_params["job_id"]
        job = await queue.get_job(job_id)
        if job is None:
            raise HTTPException(404, f"no job {job_id!r} in queue {queue.name!r}")
        entries, log_count = await queue.get_log_entries(job.id, 0, LOG_LINES - 1, ascending=False)
        logs = log_rows(entries[::-1])  # the newest lines, oldest first, with their times
        return self.render.page(
            request,
            "job.html",
            queue=queue,
            job=job,
            options=_options(job),
            logs=logs,
            log_count=log_count,
            parent=await self._link(job.parent_queue, job.parent_id),
            children=await self._children(queue, job),
            notice=notice(request),
        )

    async def schedulers(self, request: Request) -> Response:
        queue = await self._queue(request)
        page = whole_number(request, "page", 1, 1, 10**9)
        total = await queue.count_schedulers()
        last = max(1, math.ceil(total / PAGE_SIZE))
        if page > last:
            raise HTTPException(404, f"page {page} is past the last page ({last}) of schedulers")
        start = (page - 1) * PAGE_SIZE
        found = await queue.list_schedulers(start, start + PAGE_SIZE - 1)
        return self.render.page(
            request,
            "schedulers.html",
            queue=queue,
            schedulers=found,
            total=total,
            page=page,
            last=last,
        )

    async def groups(self, request: Request) -> Response:
        queue = await self._queue(request)
        page = whole_number(request, "page", 1, 1, 10**9)
        total = await queue.count_groups()
        last = max(1, math.ceil(total / PAGE_SIZE))
        if page > last:
            raise HTTPException(404, f"page {page} is past the last page ({last}) of groups")
        found = await queue.list_groups((page - 1) * PAGE_SIZE, PAGE_SIZE)
        return self.render.page(
            request,
            "groups.html",
            queue=queue,
            groups=found,
            states=STATES,
            total=total,
            page=page,
            last=last,
            notice=notice(request),
        )

    async def workers(self, request: Request) -> Response:
        queue = await self._queue(request)
        return self.render.page(
            request, "workers.html", queue=queue, workers=await queue.get_workers()
        )

    async def _link(self, queue_name: str | None, job_id: str | None) -> dict[str, Any] | None:
        """A job of another (or this) queue, with whether the dashboard shows its queue."""
        if queue_name is None or job_id is None:
            return None
        return {"queue": queue_name, "id": job_id, "known": await self.source.known(queue_name)}

    async def _children(self, queue: JobQueue, job: Job) -> dict[str, Any] | None:
        """The job's children in a flow, by what became of them (None: it has none)."""
        # (without "missing", which reads every child)
        counts = await queue.get_dependencies_count(
            job.id, "processed", "unprocessed", "failed", "ignored"
        )
        if not any(counts.values()):
            return None
        page = await queue.get_dependencies(job.id, count=CHILDREN_SHOWN)
        names = await self.source.names()

        async def link(key: str) -> dict[str, Any]:
            # A child key is "<queue>:<id>"; the queue name may hold ":" itself.
            for name in names:
                if key.startswith(name + ":"):
                    return await self._link(name, key[len(name) + 1 :]) or {}
            return {"queue": None, "id": key, "known": False}

        return {
            "counts": counts,
            "processed": [(await link(k), v) for k, v in page.processed.items()],
            "unprocessed": [(await link(k), None) for k in page.unprocessed],
            "failed": [(await link(k), v) for k, v in page.failed.items()],
            "ignored": [(await link(k), v) for k, v in page.ignored.items()],
        }

    async def sign_in(
        self, request: Request, problem: str | None = None, status: int = 401
    ) -> Response:
        """The form asking for the access token (401 for a page asked without it)."""
        return self.render.page(request, "sign_in.html", status, problem=problem)


def _options(job: Job) -> dict[str, Any]:
    """The job's options: the ones a reader looks for, in words, and all of them as stored
    (JSON, only those set; times in milliseconds)."""
    options = job.options
    shown: list[tuple[str, object]] = [
        ("group", options.group or "none"),
        ("attempts", options.attempts),
        ("backoff", options.backoff or "none"),
        ("timeout", "none" if options.timeout is None else f"{options.timeout:g} s"),
        ("priority", f"{options.priority}{' (lifo)' if options.lifo else ''}"),
        ("stalls allowed", options.max_stalled_count),
    ]
    if options.dedup is not None:
        shown.append(("dedup", options.dedup))
    if options.parent_policy is not None:
        shown.append(("parent policy", options.parent_policy))
    return {"shown": shown, "stored": pretty(json.loads(options.to_json()))}
