"""`from_url`: a job queue from a URL, so a deployment can choose its backend in one string
(an environment variable, a command-line argument).

- ``redis://[[user]:password@]host[:port][/db]``, ``rediss://...`` (TLS), ``unix:///path.sock``
  (``?db=N&pass=...``), ``redis+cluster://host:port[,host:port...]`` (a Redis Cluster, named
  by seed nodes), ``redis+sentinel://host:port[,host:port...]/<master>[/db]`` (the master
  Redis Sentinel names), and the ``valkey`` spellings of each: `RedisJobQueue`;
- ``memory://``: `InMemoryJobQueue` (private to the call, nothing is shared or kept);
- ``local:///abs/dir``, ``local:./relative/dir``, ``local:relative/dir``: `LocalJobQueue` (the
  path is taken as written, up to a ``?``; a path ending in ``.db``, ``.sqlite`` or
  ``.sqlite3`` is the file). ``?sync=normal`` (or ``?sync=full``, the default) is its
  ``sync=``; no other query is accepted.

Errors name the URL with any password replaced by ``***``."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from ._redis_url import REDIS_SCHEMES, redact_url
from .exceptions import ConfigError
from .queue import _LOCAL_SYNCS, InMemoryJobQueue, JobQueue, LocalJobQueue, RedisJobQueue

# A local URL whose path ends so names the queue's file, not a directory of queue files.
_FILE_SUFFIXES = (".db", ".sqlite", ".sqlite3")
_KNOWN = "redis://, rediss://, redis+cluster://, redis+sentinel://, unix://, memory:// or local:DIR"


def from_url(url: str, name: str, **options: Any) -> JobQueue:
    """The queue ``name`` at ``url`` (see the module docstring for the forms). ``options`` go
    to the queue's constructor (``prefix=`` for Redis, ``max_events=`` for any, ...). Nothing
    connects here: a Redis queue connects on first use. An unknown scheme or a malformed URL
    raises `ConfigError` naming the URL without its password."""
    if not isinstance(url, str):
        raise TypeError(f"url must be a str, got {type(url).__name__}")
    scheme, colon, rest = url.partition(":")
    scheme = scheme.lower()
    if not colon or not scheme:
        raise ConfigError(f"invalid queue URL {redact_url(url)!r}: no scheme (use {_KNOWN})")
    if scheme in REDIS_SCHEMES:
        return RedisJobQueue(name, url, **options)
    if scheme == "memory":
        if rest not in ("", "//"):
            raise ConfigError(
                f"invalid queue URL {redact_url(url)!r}: memory:// takes nothing after it"
            )
        return InMemoryJobQueue(name, **options)
    if scheme == "local":
        path, sync = _local_parts(url, rest)
        if sync is not None:
            if "sync" in options:
                raise ConfigError(
                    f"invalid queue URL {redact_url(url)!r}: sync is given twice (URL and sync=)"
                )
            options = {**options, "sync": sync}
        return LocalJobQueue(name, path, **options)
    raise ConfigError(f"unknown queue URL scheme {scheme!r} in {redact_url(url)!r} (use {_KNOWN})")


async def list_queue_names(url: str, **options: Any) -> list[str]:
    """The names of the queues at ``url``, sorted: the queues under a Redis server's prefix
    (``prefix=``; `JobQueue.list_queues`), the ``<name>.sqlite3`` files of a ``local:``
    directory (none when it does not exist; a URL naming one file lists nothing, since the
    name is the caller's). A ``memory://`` URL holds none. Nothing is created; errors are
    `from_url`'s."""
    scheme, _, rest = url.partition(":") if isinstance(url, str) else ("", "", "")
    if scheme.lower() == "local":
        path = Path(_local_parts(url, rest)[0])  # (refuses a malformed URL; opens nothing)
        if path.suffix in _FILE_SUFFIXES:
            return []  # a file of its own: the queue's name is the caller's
        return await asyncio.to_thread(_queue_files, path)
    if scheme.lower() == "memory" and rest in ("", "//"):
        return []
    queue = from_url(url, "default", **options)  # Redis: lazy, and it writes nothing
    try:
        return await queue.list_queues()
    finally:
        await queue.close()


def _queue_files(directory: Path) -> list[str]:
    return sorted(file.stem for file in directory.glob("*.sqlite3") if file.is_file())


def local_queue_file(url: str, name: str) -> Path | None:
    """The file the queue ``name`` of a ``local:`` URL lives in (named as `LocalJobQueue`
    names it), or None for a URL of another scheme. Opens nothing."""
    scheme, _, rest = url.partition(":")
    if scheme.lower() != "local":
        return None
    path = Path(_local_parts(url, rest)[0])
    return path if path.suffix in _FILE_SUFFIXES else path / f"{name}.sqlite3"


def _local_parts(url: str, rest: str) -> tuple[str, str | None]:
    """A ``local:`` URL's path and its ``?sync=`` (None without one), checked: any other or
    repeated option, or a value other than ``full``/``normal``, raises `ConfigError`."""
    rest, mark, query = rest.partition("?")
    sync: str | None = None
    for item in query.split("&") if mark else ():
        key, equals, value = item.partition("=")
        if key != "sync" or not equals:
            raise ConfigError(
                f"invalid queue URL {redact_url(url)!r}: unknown option {item!r} "
                "(a local: URL takes only ?sync=full or ?sync=normal)"
            )
        if sync is not None:
            raise ConfigError(f"invalid queue URL {redact_url(url)!r}: sync is given twice")
        if value not in _LOCAL_SYNCS:
            raise ConfigError(
                f"invalid queue URL {redact_url(url)!r}: invalid sync {value!r} "
                "(must be 'full' or 'normal')"
            )
        sync = value
    return _local_path(url, rest), sync


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


__all__ = ["from_url", "list_queue_names", "local_queue_file", "redact_url"]
