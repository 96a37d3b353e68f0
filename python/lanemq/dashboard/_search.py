"""The queue's search page (GET ``/queues/{queue}/search``): the search box's query read as
criteria of `JobQueue.search_jobs`, and a page of the jobs found, listed as the job lists are,
with a link to the next page while the search has not reached the end."""

from __future__ import annotations

import json
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from ..exceptions import ConfigError
from ..queue import STATES
from ._pages import PAGE_SIZE, check_state, whole_number
from ._render import Renderer
from ._source import QueueSource

#: The longest query the box takes (a query is read into criteria, never run as code).
MAX_QUERY = 1000


def criteria(query: str) -> dict[str, Any]:
    """The criteria of a query: each word ``path=value`` is a data criterion (``user.id=7``;
    the value a JSON scalar, else text), the other words together the text an id starts with
    or a name contains (``order-1``, ``send``)."""
    data: dict[str, Any] = {}
    words = []
    for word in query.split():
        path, sep, raw = word.partition("=")
        if not sep or not path:
            words.append(word)
            continue
        try:
            value = json.loads(raw)
        except ValueError:
            value = raw
        data[path] = value if isinstance(value, str | int | float | bool | None) else raw
    found: dict[str, Any] = {}
    if words:
        found["text"] = " ".join(words)
    if data:
        found["data"] = data
    return found


class SearchPage:
    """The search page of a queue; bad criteria (`ConfigError`), a bad state or cursor are
    a 400 page naming them, the search box above keeping the query."""

    def __init__(self, source: QueueSource, render: Renderer) -> None:
        self.source = source
        self.render = render

    async def page(self, request: Request) -> Response:
        queue = await self.source.get(request.path_params["queue"])
        query = request.query_params.get("q", "").strip()
        state = request.query_params.get("state", "")
        page = None
        problem = None
        try:
            if len(query) > MAX_QUERY:
                raise HTTPException(400, f"the query is longer than {MAX_QUERY} characters")
            states = [check_state(state, 400)] if state else []
            cursor = whole_number(request, "cursor", 0, 0, 2**63 - 1)
            if query:
                found = criteria(query)
                page = await queue.search_jobs(*states, **found, cursor=cursor, count=PAGE_SIZE)
        except (HTTPException, ConfigError) as error:
            # A bad query is shown above the search box, which keeps it to be corrected.
            problem = error.detail if isinstance(error, HTTPException) else str(error)
        return self.render.page(
            request,
            "search.html",
            400 if problem else 200,
            queue=queue,
            query=query[:MAX_QUERY],
            state=state if state in STATES else "",
            states=STATES,
            page=page,
            problem=problem,
        )
