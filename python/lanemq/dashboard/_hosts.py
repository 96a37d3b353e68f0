"""The names the dashboard answers to (the ``Host`` header of a request).

Why: a page the operator visits can rebind its own DNS name to 127.0.0.1 (DNS rebinding) and
then talk to a dashboard on localhost as a same-origin page: its ``Origin`` and ``Host`` both
carry the attacker's name, so the same-origin check of the actions passes. A request whose
``Host`` is not one of the dashboard's own names is refused, whatever else it carries.

Starlette's ``TrustedHostMiddleware`` is not used: in most Starlette versions lanemq accepts
(>= 0.40) it splits the header at its first ``:``, so a bracketed IPv6 host (``[::1]:8080``)
never matches (Kludex/starlette#3357, fixed only in 2026); it answers 400 outside the
dashboard's protective headers; and its ``www.`` redirect is not wanted here."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from starlette.responses import PlainTextResponse, Response

from ..exceptions import ConfigError

#: What the dashboard answers to by default without an access token: this machine only.
LOOPBACK = ("127.0.0.1", "localhost", "[::1]")
#: In ``allowed_hosts``: any name (the check is left to something in front of the app).
ANY = "*"


def canonical(name: str) -> str:
    """``name`` (a host name, an IPv4 address, or an IPv6 one with or without brackets) as
    it is compared: lowercase, IPv6 compressed and without brackets, no trailing dot. Raises
    `ConfigError` naming it if it is not a bare name (a port, a scheme, a path...)."""
    if not isinstance(name, str):
        raise ConfigError(f"invalid allowed host {name!r}: expected a str")
    text = name.strip().lower()
    bracketed = text.startswith("[") and text.endswith("]")
    bare = text[1:-1] if bracketed else text
    try:
        return ipaddress.IPv6Address(bare).compressed
    except ValueError:
        pass
    bare = "" if bracketed else bare.rstrip(".")
    if not bare or any(c in bare for c in ":/@[]?#\\ \t") or bare != bare.strip():
        raise ConfigError(
            f"invalid allowed host {name!r}: give a host name or an address, without a "
            "scheme, port or path (e.g. 'dashboard.example.com', '10.0.0.5' or '[::1]')"
        )
    return bare


def host_of(header: str) -> str | None:
    """The name a ``Host`` header carries (``name``, ``name:port``, ``[v6]``, ``[v6]:port``),
    as `canonical` gives it; None if the header is malformed."""
    text = header.strip()
    if text.startswith("["):
        end = text.find("]")
        name, port = text[: end + 1], text[end + 1 :]
    else:
        name, colon, port = text.partition(":")
        port = colon + port
    if port and not (port.startswith(":") and port[1:].isdigit()):
        return None
    try:
        return canonical(name)
    except ConfigError:
        return None


class AllowedHosts:
    """The names a dashboard answers to; `ANY` among them turns the check off."""

    __slots__ = ("_names",)

    def __init__(self, names: Iterable[str]) -> None:
        if isinstance(names, str):
            raise ConfigError(
                f"allowed_hosts must be a list of names, not the str {names!r} (write [{names!r}])"
            )
        given = list(names)
        if not given:
            raise ConfigError("allowed_hosts is empty: the dashboard would refuse every request")
        self._names = None if ANY in given else frozenset(canonical(name) for name in given)

    def __repr__(self) -> str:
        shown = ANY if self._names is None else ", ".join(sorted(self._names))
        return f"AllowedHosts({shown})"

    def refusal(self, header: str | None) -> Response | None:
        """None if a request with this ``Host`` header may go on, else the answer: 421
        (Misdirected Request) for another name, 400 for a missing or malformed header."""
        if self._names is None:
            return None
        if header is None:
            return PlainTextResponse("Bad request: no Host header", status_code=400)
        name = host_of(header)
        if name is None:
            return PlainTextResponse("Bad request: a malformed Host header", status_code=400)
        if name in self._names:
            return None
        shown = name if len(name) <= 80 else name[:77] + "..."
        return PlainTextResponse(
            f"Misdirected request: this dashboard does not answer to the host {shown!r} "
            "(lanemq dashboard --allowed-host NAME, or allowed_hosts= in app(), adds one)",
            status_code=421,
        )
