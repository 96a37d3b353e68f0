"""What guards the dashboard: the optional access token (kept, once given, in a cookie), the
checks of every action (read-only mode, the CSRF token of the forms and a same-origin check),
and the headers of every response.

The access token itself is never stored: only its SHA-256 digest, so no repr, traceback or
error page can show it. The cookie carries an HMAC of that digest under a per-process key,
not the token."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Awaitable, Callable, Mapping
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

from starlette.datastructures import Headers, MutableHeaders
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..exceptions import ConfigError
from ._hosts import AllowedHosts

COOKIE = "lanemq_dashboard"
#: The sign-in form, which needs no token (nor do the files under ``/static/``).
SIGN_IN = "/login"

#: What browsers may load and where forms may go: the app's own files only (no inline script
#: or style), so even markup that slipped through escaping could not run a script.
HEADERS = {
    "content-security-policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
        "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "same-origin",
    "cache-control": "no-store",
}


def _digest(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).digest()


class Guard:
    """The dashboard's secrets: the CSRF token of its forms (one per app, random) and, when
    an access token is set, what checks it."""

    __slots__ = ("_csrf", "_key", "_token_digest", "read_only")

    def __init__(self, token: str | None, read_only: bool) -> None:
        if token is not None and (not isinstance(token, str) or not token.strip()):
            # (the message does not repeat the value: it is a secret)
            raise ConfigError("invalid dashboard token: it must be a non-empty string")
        self._token_digest = None if token is None else _digest(token)
        self._key = secrets.token_bytes(32)
        self._csrf = secrets.token_urlsafe(32)
        self.read_only = read_only

    def __repr__(self) -> str:
        token = "set" if self._token_digest is not None else "none"
        return f"Guard(token={token}, read_only={self.read_only})"

    @property
    def csrf_token(self) -> str:
        """The token every form of the dashboard carries, as the field ``csrf``."""
        return self._csrf

    @property
    def needs_token(self) -> bool:
        return self._token_digest is not None

    def token_matches(self, given: str) -> bool:
        assert self._token_digest is not None
        return hmac.compare_digest(_digest(given), self._token_digest)

    def cookie_value(self) -> str:
        assert self._token_digest is not None
        return hmac.new(self._key, self._token_digest, "sha256").hexdigest()

    def cookie_matches(self, given: str) -> bool:
        return hmac.compare_digest(given.encode("ascii", "replace"), self.cookie_value().encode())

    def set_cookie(self, scope: Scope, response: Response) -> None:
        """Signs the browser in: the cookie that stands for the token from now on (HttpOnly,
        so no script reads it; SameSite=Strict, so no other site's request carries it)."""
        response.set_cookie(
            COOKIE,
            self.cookie_value(),
            path=str(scope.get("root_path", "")) or "/",
            httponly=True,
            samesite="strict",
            secure=scope.get("scheme") == "https",
        )

    def check_writable(self, request: Request) -> None:
        """Refuses (403) an action in read-only mode, or one sent from a page of another
        origin; checked before the form is read."""
        if self.read_only:
            raise HTTPException(403, "the dashboard is read-only: actions are turned off")
        check_same_origin(request)

    def check_csrf(self, form: Mapping[str, str]) -> None:
        """Refuses (403) a form without this app's CSRF token."""
        if not hmac.compare_digest(form.get("csrf", "").encode(), self._csrf.encode()):
            raise HTTPException(
                403, "the form's CSRF token is missing or stale: reload the page and try again"
            )


def check_same_origin(request: Request) -> None:
    """The request's ``Origin`` (else its ``Referer``) must name this host: browsers send one
    of them with every form POST, and a page of another site cannot forge it. The host, not
    the scheme, is compared, so a TLS-terminating proxy in front does not break it."""
    origin = request.headers.get("origin")
    if origin is None or origin == "null":
        origin = request.headers.get("referer")
    if not origin or origin == "null":
        raise HTTPException(403, "refused: the request names no origin (Origin or Referer)")
    try:
        source = urlsplit(origin).netloc.lower()
    except ValueError:
        source = ""
    host = request.headers.get("host", "").lower()
    if not source or source != host:
        raise HTTPException(403, "refused: the request comes from a page of another origin")


class GuardMiddleware:
    """Adds `HEADERS` to every response; refuses a request whose ``Host`` is not one of
    ``hosts`` (None: any), on every path; and, when an access token is set, lets a request
    through only with the token: as ``?token=`` (answered with a redirect to the same page
    without it, setting the cookie), as ``Authorization: Bearer``, or in the cookie. Others
    get the sign-in page (``unauthorized``). The sign-in form and the static files need none."""

    def __init__(
        self,
        app: ASGIApp,
        guard: Guard,
        unauthorized: Callable[[Request], Awaitable[Response]],
        hosts: AllowedHosts | None,
    ) -> None:
        self.app = app
        self.guard = guard
        self.unauthorized = unauthorized
        self.hosts = hosts

    def __repr__(self) -> str:
        return f"GuardMiddleware({self.guard!r}, {self.hosts!r})"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in HEADERS.items():
                    headers.setdefault(name, value)
            await send(message)

        if self.hosts is not None:
            refusal = self.hosts.refusal(Headers(scope=scope).get("host"))
            if refusal is not None:
                await refusal(scope, receive, send_with_headers)
                return
        path = _route_path(scope)
        if not self.guard.needs_token or path == SIGN_IN or path.startswith("/static/"):
            await self.app(scope, receive, send_with_headers)
            return
        request = Request(scope)
        given = request.query_params.get("token")
        if given is not None:
            if self.guard.token_matches(given):
                await self._signed_in(scope, _without_token(scope))(
                    scope, receive, send_with_headers
                )
            else:
                await (await self.unauthorized(request))(scope, receive, send_with_headers)
            return
        bearer = request.headers.get("authorization", "")
        scheme, _, credentials = bearer.partition(" ")
        if scheme.lower() == "bearer" and self.guard.token_matches(credentials.strip()):
            await self.app(scope, receive, self._setting_cookie(scope, send_with_headers))
            return
        cookie = request.cookies.get(COOKIE)
        if cookie is not None and self.guard.cookie_matches(cookie):
            await self.app(scope, receive, send_with_headers)
            return
        await (await self.unauthorized(request))(scope, receive, send_with_headers)

    def _signed_in(self, scope: Scope, target: str) -> Response:
        response = RedirectResponse(target, status_code=303)
        self.guard.set_cookie(scope, response)
        return response

    def _setting_cookie(self, scope: Scope, send: Send) -> Send:
        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                carrier = Response()
                self.guard.set_cookie(scope, carrier)
                headers = MutableHeaders(scope=message)
                for value in carrier.headers.getlist("set-cookie"):
                    headers.append("set-cookie", value)
            await send(message)

        return sending


def _route_path(scope: Scope) -> str:
    """The request's path inside the app (without the path it is mounted at)."""
    path = str(scope.get("path", ""))
    root = str(scope.get("root_path", ""))
    return path[len(root) :] if root and path.startswith(root) else path


def asked_path(scope: Scope) -> str:
    """The request's path as the browser sent it, percent-encoded (a job id may hold ``?``
    or ``#``): what a link back to the same page needs."""
    raw = scope.get("raw_path")
    return raw.decode("latin-1") if isinstance(raw, bytes) else quote(str(scope["path"]))


def _without_token(scope: Scope) -> str:
    """The page asked for, the ``token`` parameter left out of its query."""
    query = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
    kept = [(k, v) for k, v in query if k != "token"]
    return asked_path(scope) + (f"?{urlencode(kept)}" if kept else "")
