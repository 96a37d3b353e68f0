"""`app`: the dashboard as a Starlette application."""

from __future__ import annotations

from collections.abc import Sequence

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from ..queue import JobQueue
from ._actions import Actions, SignIn
from ._pages import Pages
from ._render import Renderer
from ._security import SIGN_IN, Guard, GuardMiddleware
from ._source import QueueSource


def app(
    queues: Sequence[JobQueue] | None = None,
    *,
    read_only: bool = False,
    token: str | None = None,
) -> Starlette:
    """The dashboard of ``queues``, as an ASGI application to serve (``lanemq dashboard``
    does, with uvicorn) or to mount in a FastAPI or Starlette app
    (``api.mount("/dashboard", lanemq.dashboard.app([queue]))``).

    ``read_only``: no actions (their buttons are not shown, and a POST is refused with 403).
    ``token``: an access token: a browser gives it once (``?token=``, the sign-in form, or an
    ``Authorization: Bearer`` header) and is then signed in by an HttpOnly, SameSite=Strict
    cookie. Without a token, anyone who reaches the app may use it: bind to localhost or put
    it behind your own authentication. Actions are POST forms carrying a CSRF token and must
    come from a page of the same host (``Origin``/``Referer``).

    The queues stay the caller's: the app does not close them."""
    source = QueueSource([] if queues is None else queues)
    guard = Guard(token, read_only)
    render = Renderer(guard)
    pages = Pages(source, render)
    actions = Actions(source, guard)
    sign_in = SignIn(guard, pages)
    queue = "/queues/{queue}"
    routes = [
        Route("/", pages.overview, name="overview"),
        Route(SIGN_IN, sign_in.form, methods=["GET"]),
        Route(SIGN_IN, sign_in.submit, methods=["POST"]),
        Route(queue, pages.queue),
        Route(f"{queue}/jobs/{{state}}", pages.jobs),
        Route(f"{queue}/lookup", pages.lookup),
        Route(f"{queue}/job/{{job_id:path}}", pages.job),
        Route(f"{queue}/schedulers", pages.schedulers),
        *(
            Route(f"{queue}/{name}", actions.endpoint(handler), methods=["POST"])
            for name, handler in (
                ("retry", actions.retry),
                ("retry-failed", actions.retry_failed),
                ("remove", actions.remove),
                ("promote", actions.promote),
                ("clean", actions.clean),
                ("pause", actions.pause),
                ("resume", actions.resume),
            )
        ),
        Mount("/static", StaticFiles(packages=[("lanemq.dashboard", "static")]), name="static"),
    ]
    return Starlette(
        routes=routes,
        middleware=[Middleware(GuardMiddleware, guard=guard, unauthorized=pages.sign_in)],
        exception_handlers=render.handlers(),
    )
