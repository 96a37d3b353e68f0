"""`app`: the dashboard as a Starlette application."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from ..queue import JobQueue
from ._actions import HANDLERS, Actions, SignIn
from ._hosts import LOOPBACK, AllowedHosts
from ._live import LiveCounts
from ._pages import Pages
from ._render import Renderer
from ._search import SearchPage
from ._security import SIGN_IN, Guard, GuardMiddleware
from ._source import QueueSource


def app(
    queues: Sequence[JobQueue] | None = None,
    *,
    url: str | None = None,
    prefix: str | None = None,
    read_only: bool = False,
    token: str | None = None,
    allowed_hosts: Iterable[str] | None = None,
) -> Starlette:
    """The dashboard of ``queues``, or of every queue at ``url`` (a `lanemq.from_url` URL;
    ``prefix``: the key prefix of Redis queues), as an ASGI application to serve (``lanemq
    dashboard`` does, with uvicorn) or to mount in a FastAPI or Starlette app
    (``api.mount("/dashboard", lanemq.dashboard.app([queue]))``). The queues of a URL are
    listed again on each page, so new ones show up; the app opens them and, when it is served
    by itself, closes them at shutdown (a mounted app's shutdown is its host's, so they stay
    open until the process ends). Given queues stay the caller's: the app does not close them.

    ``read_only``: no actions (their buttons are not shown, and a POST is refused with 403).
    ``token``: an access token: a browser gives it once (``?token=``, the sign-in form, or an
    ``Authorization: Bearer`` header) and is then signed in by an HttpOnly, SameSite=Strict
    cookie. Without a token, anyone who reaches the app may use it: bind to localhost or put
    it behind your own authentication. Actions are POST forms carrying a CSRF token and must
    come from a page of the same host (``Origin``/``Referer``).

    ``allowed_hosts``: the names the app answers to (the ``Host`` of a request, its port
    aside; names, IPv4 or IPv6 addresses; ``"*"``: any). Another name gets 421, so a page
    that rebinds its own DNS name to this machine cannot use the dashboard. By default,
    without a token: ``127.0.0.1``, ``localhost`` and ``[::1]``; with a token: any name
    (the token guards the app; pass names to check them too).

    Raises `ConfigError` for a bad URL, a duplicate queue name, both or neither of
    ``queues`` and ``url``, or a bad or empty ``allowed_hosts``."""
    if allowed_hosts is None and token is None:
        allowed_hosts = LOOPBACK
    hosts = None if allowed_hosts is None else AllowedHosts(allowed_hosts)
    options = {} if prefix is None else {"prefix": prefix}
    source = QueueSource(queues, url, options)
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
        Route("/api/counts", LiveCounts(source).endpoint),
        Route(queue, pages.queue),
        Route(f"{queue}/jobs/{{state}}", pages.jobs),
        Route(f"{queue}/lookup", pages.lookup),
        Route(f"{queue}/search", SearchPage(source, render).page),
        Route(f"{queue}/job/{{job_id:path}}", pages.job),
        Route(f"{queue}/schedulers", pages.schedulers),
        Route(f"{queue}/workers", pages.workers),
        Route(f"{queue}/groups", pages.groups),
        *(
            Route(f"{queue}/{name}", actions.endpoint(handler), methods=["POST"])
            for name, handler in HANDLERS.items()
        ),
        Mount("/static", StaticFiles(packages=[("lanemq.dashboard", "static")]), name="static"),
    ]
    return Starlette(
        routes=routes,
        middleware=[
            Middleware(GuardMiddleware, guard=guard, unauthorized=pages.sign_in, hosts=hosts)
        ],
        exception_handlers=render.handlers(),
        lifespan=_closing(source),
    )


def _closing(source: QueueSource) -> Callable[[Starlette], AbstractAsyncContextManager[None]]:
    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await source.close()

    return lifespan
