"""The dashboard's pages as HTML: the Jinja2 environment (autoescaping every value: job data
is user input), its filters, and the error pages."""

from __future__ import annotations

import json
import logging
import time
from datetime import datetime, timezone
from typing import Any
from urllib.parse import quote

import jinja2
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from .._core import __version__
from .._format import when
from ..exceptions import (
    ConfigError,
    JobNotFoundError,
    LanemqError,
    StorageError,
)
from ._security import Guard, asked_path
from ._times import duration, job_times

log = logging.getLogger("lanemq.dashboard")

#: The most characters of a JSON value a page shows (a payload may be megabytes).
SHOWN_CHARS = 100_000


def iso(ms: int) -> str:
    """Epoch milliseconds as an ISO 8601 UTC time (a ``<time datetime=...>``)."""
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def ago(ms: int | None, now: int) -> str:
    """How long before (or after) ``now`` the moment ``ms`` is, in words: "3 min ago",
    "in 5 s"."""
    if ms is None:
        return ""
    seconds = abs(now - ms) / 1000
    if seconds < 1:
        return "now"
    size, unit = next((size, unit) for size, unit in _UNITS if seconds >= size)
    text = f"{int(seconds // size)} {unit}"
    return f"in {text}" if ms > now else f"{text} ago"


_UNITS = ((86400, "d"), (3600, "h"), (60, "min"), (1, "s"))


def pretty(value: Any) -> str:
    """A JSON value, indented; cut at `SHOWN_CHARS` characters."""
    text = json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False, default=str)
    if len(text) > SHOWN_CHARS:
        text = text[:SHOWN_CHARS] + f"\n... ({len(text) - SHOWN_CHARS} more characters)"
    return text


def path_part(text: str) -> str:
    """``text`` as one segment of a URL path."""
    return quote(text, safe="")


class Renderer:
    """Renders the templates with what every page needs: ``base`` (the path the app is
    mounted at), the CSRF token of the forms, whether it is read-only."""

    def __init__(self, guard: Guard) -> None:
        self.guard = guard
        self.env = jinja2.Environment(
            loader=jinja2.PackageLoader("lanemq.dashboard", "templates"),
            autoescape=True,
            undefined=jinja2.StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self.env.filters.update(when=when, iso=iso, pretty=pretty, q=path_part, duration=duration)
        self.env.globals.update(version=__version__, ago=ago, job_times=job_times)

    def page(
        self, request: Request, template: str, status_code: int = 200, **context: Any
    ) -> Response:
        base = str(request.scope.get("root_path", ""))
        html = self.env.get_template(template).render(
            base=base,
            csrf=self.guard.csrf_token,
            read_only=self.guard.read_only,
            now=int(time.time() * 1000),
            notice=context.pop("notice", None),
            # (the page as asked for, for the forms' ``back`` field)
            here=asked_path(request.scope) + (f"?{request.url.query}" if request.url.query else ""),
            **context,
        )
        return HTMLResponse(html, status_code=status_code)

    def error(self, request: Request, status: int, message: str) -> Response:
        return self.page(request, "error.html", status, status=status, message=message)

    # Exception handlers: every refusal is a page saying why, with the status that fits.

    async def http_error(self, request: Request, error: Exception) -> Response:
        assert isinstance(error, HTTPException)
        if error.status_code in (204, 304):
            return Response(status_code=error.status_code)
        response = self.error(request, error.status_code, str(error.detail))
        if error.headers:
            response.headers.update(error.headers)
        return response

    async def lanemq_error(self, request: Request, error: Exception) -> Response:
        """lanemq's refusals: an unknown job is a 404, a bad value a 400, a backend that
        cannot serve a 503, and an operation the job's state refuses a 409."""
        if isinstance(error, JobNotFoundError):
            status = 404
        elif isinstance(error, ConfigError):
            status = 400
        elif isinstance(error, StorageError):  # BackendConnectionError included
            log.warning("the backend failed on %s: %s", request.url.path, error)
            status = 503
        else:
            status = 409
        return self.error(request, status, str(error))

    def handlers(self) -> dict[Any, Any]:
        return {HTTPException: self.http_error, LanemqError: self.lanemq_error}
