"""`from_url`: a job queue from a URL, so a deployment can choose its backend in one string
(an environment variable, a command-line argument).

- ``redis://[[user]:password@]host[:port][/db]``, ``rediss://...`` (TLS), ``unix:///path.sock``
  (``?db=N&pass=...``), and the ``valkey`` spellings of each: `RedisJobQueue`;
- ``memory://``: `InMemoryJobQueue` (private to the call, nothing is shared or kept);
- ``local:///abs/dir``, ``local:./relative/dir``, ``local:relative/dir``: `LocalJobQueue` (the
  path is taken as written; a path ending in ``.db``, ``.sqlite`` or ``.sqlite3`` is the file).

Errors name the URL with any password replaced by ``***``."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import SplitResult, parse_qs, urlsplit

from .exceptions import ConfigError
from .queue import InMemoryJobQueue, JobQueue, LocalJobQueue, RedisJobQueue

_TCP_SCHEMES = ("redis", "rediss", "valkey", "valkeys")
_UNIX_SCHEMES = ("unix", "redis+unix", "valkey+unix")
_KNOWN = "redis://, rediss://, unix://, memory:// or local:DIR"

# A password in a query (``unix:///s.sock?pass=...``), as the Redis client reads it.
_QUERY_SECRET = re.compile(r"([?&](?:pass|password)=)[^&#]*", re.IGNORECASE)


def redact_url(url: str) -> str:
    """``url`` with any password replaced by ``***``: the one in the user part (everything up
    to the last ``@`` after ``scheme://``, so a password holding ``@`` or ``/`` is covered too)
    and ``pass=`` / ``password=`` query values. Never fails, whatever the string."""
    scheme, slashes, rest = url.partition("://")
    if slashes and "@" in rest:
        user_part, host_part = rest.rsplit("@", 1)
        if ":" in user_part:
            user_part = user_part.split(":", 1)[0] + ":***"
        url = f"{scheme}://{user_part}@{host_part}"
    return _QUERY_SECRET.sub(r"\1***", url)


def from_url(url: str, name: str, **options: Any) -> JobQueue:
    """The queue ``name`` at ``url`` (see the module docstring for the forms). ``options`` go
    to the queue's constructor (``prefix=`` for Redis, ``max_events=`` for any, ...). A Redis
    queue connects here, so an unreachable server raises `BackendConnectionError`. An unknown
    scheme or a malformed URL raises `ConfigError` naming the URL without its password."""
    if not isinstance(url, str):
        raise TypeError(f"url must be a str, got {type(url).__name__}")
    scheme, colon, rest = url.partition(":")
    scheme = scheme.lower()
    if not colon or not scheme:
        raise ConfigError(f"invalid queue URL {redact_url(url)!r}: no scheme (use {_KNOWN})")
    if scheme in _TCP_SCHEMES or scheme in _UNIX_SCHEMES:
        return _redis(url, scheme, name, options)
    if scheme == "memory":
        if rest not in ("", "//"):
            raise ConfigError(
                f"invalid queue URL {redact_url(url)!r}: memory:// takes nothing after it"
            )
        return InMemoryJobQueue(name, **options)
    if scheme == "local":
        return LocalJobQueue(name, _local_path(url, rest), **options)
    raise ConfigError(f"unknown queue URL scheme {scheme!r} in {redact_url(url)!r} (use {_KNOWN})")


def local_queue_file(url: str, name: str) -> Path | None:
    """The file the queue ``name`` of a ``local:`` URL lives in (named as `LocalJobQueue`
    names it), or None for a URL of another scheme. Opens nothing."""
    scheme, _, rest = url.partition(":")
    if scheme.lower() != "local":
        return None
    path = Path(_local_path(url, rest))
    return path if path.suffix in (".db", ".sqlite", ".sqlite3") else path / f"{name}.sqlite3"


def _local_path(url: str, rest: str) -> str:
    if rest.startswith("//"):
        rest = rest[2:]
        if not rest.startswith("/"):
            # ``local://data`` would read "data" as a host name, as every URL parser does.
            raise ConfigError(
                f"invalid queue URL {redact_url(url)!r}: write local:///abs/dir for an absolute "
                "directory or local:relative/dir for a relative one"
            )
    if not rest:
        raise ConfigError(f"invalid queue URL {redact_url(url)!r}: no directory")
    return rest


def _redis(url: str, scheme: str, name: str, options: dict[str, Any]) -> RedisJobQueue:
    shown = redact_url(url)
    problem = _redis_url_problem(url, scheme)
    if problem:
        raise ConfigError(f"invalid Redis URL {shown!r}: {problem}")
    # RedisJobQueue parses the URL without I/O and masks the password in its refusals.
    return RedisJobQueue(name, url, **options)


def _redis_url_problem(url: str, scheme: str) -> str | None:
    """What is wrong with the URL as the Redis client would read it, in words (its own
    errors only name a category), or None."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:  # a bad port, or brackets that do not close
        # (not urllib's words: with an unencoded "/" in a password they may quote part of it)
        return "malformed host or port"
    if scheme in _UNIX_SCHEMES:
        if parts.netloc not in ("", "localhost") or not parts.path:
            return "expected unix:///path/to/redis.sock"
        return _db_problem(_query(parts).get("db", "0"), "?db=")
    if not parts.hostname:
        return "no host"
    if parts.hostname in ("0.0.0.0", "::"):
        return f"{parts.hostname} is a wildcard address, not a server's"
    if port == 0:
        return "invalid port 0"
    return _db_problem(parts.path.strip("/") or "0", "the path")


def _query(parts: SplitResult) -> dict[str, str]:
    return {key: values[-1] for key, values in parse_qs(parts.query).items()}


def _db_problem(db: str, where: str) -> str | None:
    # (the value is not quoted: with an unencoded "/" in a password it may hold part of it)
    return None if db.isdigit() else f"the database number ({where}) is not a number"


__all__ = ["from_url", "local_queue_file", "redact_url"]
