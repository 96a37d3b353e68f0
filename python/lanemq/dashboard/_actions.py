"""The dashboard's actions (POST only, each guarded by the `Guard`'s checks): retry a job or
every failed one, remove, promote, clean, pause and resume, cancel a job, pause, resume or
empty a group. Each answers with a redirect to
the page that shows its outcome (303, so a reload does not post again)."""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlencode, urlsplit

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from .._retry_failed import retry_failed
from ..queue import STATES, JobQueue
from ._pages import Pages, check_state
from ._render import path_part
from ._security import Guard, check_same_origin
from ._source import QueueSource

#: The largest form body read: the forms hold a few short fields.
MAX_FORM_BYTES = 16 * 1024
FORM_TYPE = "application/x-www-form-urlencoded"

Form = dict[str, str]


async def read_form(request: Request) -> Form:
    """The fields of a urlencoded form (what the dashboard's forms send). Parsed here rather
    than by python-multipart, which Starlette's ``request.form()`` would need: one dependency
    fewer for a few short fields."""
    kind = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if kind != FORM_TYPE:
        raise HTTPException(415, f"an action takes a form ({FORM_TYPE})")
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            raise HTTPException(413, "the form is too large")
    try:
        pairs = parse_qsl(body.decode("utf-8"), keep_blank_values=True, strict_parsing=False)
    except (UnicodeDecodeError, ValueError):
        raise HTTPException(400, "the form is not valid urlencoded UTF-8") from None
    return dict(pairs)


def field(form: Form, name: str) -> str:
    """The form's ``name``, as sent (a job id may hold spaces), which must not be empty."""
    value = form.get(name, "")
    if not value:
        raise HTTPException(400, f"the form has no {name}")
    return value


#: The largest grace and limit a form may give: far beyond any real one, and within what the
#: backends take (a larger value would overflow their integers).
MAX_SECONDS = 100 * 365 * 86400
MAX_COUNT = 10**9


def seconds(form: Form, name: str) -> float:
    raw = form.get(name, "").strip()
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not 0 <= value <= MAX_SECONDS:  # (NaN too)
        raise HTTPException(
            400, f"invalid {name} {raw!r}: a number of seconds from 0 to {MAX_SECONDS}"
        )
    return value


def count(form: Form, name: str) -> int:
    raw = form.get(name, "").strip() or "0"
    if not (raw.isascii() and raw.isdigit()) or int(raw) > MAX_COUNT:
        raise HTTPException(
            400, f"invalid {name} {raw!r}: a whole number from 0 to {MAX_COUNT} (0: all)"
        )
    return int(raw)


@dataclass(frozen=True)
class Outcome:
    """Where an action sends the browser: ``target`` (a path under the queue's page), with
    the notice ``done`` (a key of `NOTICES`) and its count ``n``."""

    target: str
    done: str
    n: int | None = None


Handler = Callable[[JobQueue, Form], Awaitable[Outcome]]


class Actions:
    def __init__(self, source: QueueSource, guard: Guard) -> None:
        self.source = source
        self.guard = guard

    def endpoint(self, handler: Handler) -> Callable[[Request], Awaitable[Response]]:
        """``handler`` as a route: the guard's checks first, then the handler. The browser
        goes back to the page the form was on (its ``back`` field, when that is a page of
        the dashboard), else to the handler's target."""

        async def run(request: Request) -> Response:
            self.guard.check_writable(request)
            form = await read_form(request)
            self.guard.check_csrf(form)
            queue = await self.source.get(request.path_params["queue"])
            outcome = await handler(queue, form)
            base = str(request.scope.get("root_path", ""))
            path, query = _back(form, base) or (
                f"{base}/queues/{path_part(queue.name)}{outcome.target}",
                [],
            )
            query.append(("done", outcome.done))
            if outcome.n is not None:
                query.append(("n", str(outcome.n)))
            return RedirectResponse(f"{path}?{urlencode(query)}", status_code=303)

        return run


def _on_job(change: Callable[[JobQueue, str], Awaitable[None]], done: str) -> Handler:
    """An action on the job of the form's ``job_id`` that keeps it: back to its page."""

    async def handler(queue: JobQueue, form: Form) -> Outcome:
        job_id = field(form, "job_id")
        await change(queue, job_id)
        return Outcome(f"/job/{path_part(job_id)}", done)

    return handler


async def _retry_failed(queue: JobQueue, form: Form) -> Outcome:
    retried, _ = await retry_failed(queue)
    return Outcome("/jobs/failed", "retried-failed", len(retried))


async def _remove(queue: JobQueue, form: Form) -> Outcome:
    job_id = field(form, "job_id")
    state = await queue.get_state(job_id)
    await queue.remove(job_id)
    return Outcome(f"/jobs/{state}" if state in STATES else "", "removed")


async def _clean(queue: JobQueue, form: Form) -> Outcome:
    state = check_state(field(form, "state"), 400)
    removed = await queue.clean(seconds(form, "grace"), count(form, "limit"), state)
    return Outcome(f"/jobs/{state}", "cleaned", len(removed))


async def _pause(queue: JobQueue, form: Form) -> Outcome:
    await queue.pause()
    return Outcome("", "paused")


async def _resume(queue: JobQueue, form: Form) -> Outcome:
    await queue.resume()
    return Outcome("", "resumed")


def _on_group(change: Callable[[JobQueue, str], Awaitable[object]], done: str) -> Handler:
    """An action on the group of the form's ``group``: back to the groups page, with the
    count it returns when it is one."""

    async def handler(queue: JobQueue, form: Form) -> Outcome:
        result = await change(queue, field(form, "group"))
        return Outcome("/groups", done, result if isinstance(result, int) else None)

    return handler


async def _cancel(queue: JobQueue, form: Form) -> Outcome:
    job_id = field(form, "job_id")
    outcome = await queue.cancel(job_id, form.get("reason") or "cancelled from the dashboard")
    return Outcome(
        f"/job/{path_part(job_id)}", "cancel-requested" if outcome == "requested" else "cancelled"
    )


#: The actions, by the last part of their path (``/queues/NAME/<action>``).
HANDLERS: dict[str, Handler] = {
    "retry": _on_job(JobQueue.retry_job, "retried"),
    "retry-failed": _retry_failed,
    "remove": _remove,
    "promote": _on_job(JobQueue.promote, "promoted"),
    "clean": _clean,
    "pause": _pause,
    "resume": _resume,
    "cancel": _cancel,
    "pause-group": _on_group(JobQueue.pause_group, "group-paused"),
    "resume-group": _on_group(JobQueue.resume_group, "group-resumed"),
    "remove-group": _on_group(JobQueue.remove_group, "group-removed"),
}


def _back(form: Form, base: str) -> tuple[str, list[tuple[str, str]]] | None:
    """The form's ``back`` field (the page it was posted from) as a path and its query
    without an earlier notice, when it is a page of this dashboard: never one of another
    site, which would make the dashboard an open redirect."""
    raw = form.get("back")
    if not raw or "\\" in raw:
        return None
    parts = urlsplit(raw)
    if parts.scheme or parts.netloc or parts.path.startswith("//"):
        return None
    if not parts.path.startswith(f"{base}/"):
        return None
    query = [(k, v) for k, v in parse_qsl(parts.query) if k not in ("done", "n")]
    return parts.path, query


class SignIn:
    """The sign-in form of a dashboard with an access token: a POST, so the token is in no
    URL (and no access log)."""

    def __init__(self, guard: Guard, pages: Pages) -> None:
        self.guard = guard
        self.pages = pages

    async def form(self, request: Request) -> Response:
        if not self.guard.needs_token:
            return RedirectResponse(_home(request), status_code=303)
        return await self.pages.sign_in(request, status=200)

    async def submit(self, request: Request) -> Response:
        form = await read_form(request)
        check_same_origin(request)
        if not self.guard.needs_token:
            return RedirectResponse(_home(request), status_code=303)
        if not self.guard.token_matches(form.get("token", "")):
            return await self.pages.sign_in(request, problem="That token is not the right one.")
        response = RedirectResponse(_home(request), status_code=303)
        self.guard.set_cookie(request.scope, response)
        return response


def _home(request: Request) -> str:
    return str(request.scope.get("root_path", "")) + "/"
