"""The checks of a service config, each raising `ConfigError` naming the bad value (with a
URL's password masked), run before any queue is opened."""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Mapping
from dataclasses import fields
from typing import Any

from .._redis_url import REDIS_SCHEMES, redact_url
from ..exceptions import ConfigError
from ..queue import InMemoryJobQueue, JobQueue, LocalJobQueue, RedisJobQueue
from ..worker import JobWorker

# The `JobWorker` keywords a config may set (the queue and the processors are the wiring's).
_WORKER_OPTIONS = frozenset(inspect.signature(JobWorker).parameters) - {"queue", "processors"}


def masked_repr(config: Any) -> str:
    """The dataclass's repr with its URL's password masked (a config is logged and printed)."""
    shown = []
    for item in fields(config):
        value = getattr(config, item.name)
        if item.name == "url" and isinstance(value, str):
            value = redact_url(value)
        shown.append(f"{item.name}={value!r}")
    return f"{type(config).__name__}({', '.join(shown)})"


def listed(value: object, what: str) -> Iterable[Any]:
    """``value`` as a list; a str (which would iterate by character) or a non-iterable raises."""
    if isinstance(value, str | bytes) or not isinstance(value, Iterable):
        raise ConfigError(f"{what} must be a list, got {value!r}")
    return list(value)


def known_keys(table: Mapping[str, Any], known: set[str], where: str) -> None:
    """Raises naming the first key of ``table`` that is not ``known`` (a misspelt one)."""
    unknown = sorted(str(key) for key in table if key not in known)
    if unknown:
        raise ConfigError(
            f"{where}: unknown key {unknown[0]!r} (known: {', '.join(sorted(known))})"
        )


def check_url(url: object, where: str) -> None:
    """A URL is a str or None (its form is `lanemq.from_url`'s to check)."""
    if url is not None and not isinstance(url, str):
        raise ConfigError(f"{where}: url must be a str, got {type(url).__name__}")


def keywords(value: object, where: str) -> dict[str, Any]:
    """``value`` as a dict of keyword arguments (a table whose keys are identifiers)."""
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where} must be a table of keywords, got {value!r}")
    for key in value:
        if not isinstance(key, str) or not key.isidentifier():
            raise ConfigError(f"{where}: invalid keyword {key!r}")
    return dict(value)


def worker_keywords(value: object, where: str) -> dict[str, Any]:
    """`keywords` that `JobWorker` takes (its values are checked by `JobWorker` itself)."""
    found = keywords(value, f"{where}: worker")
    for key in found:
        if key not in _WORKER_OPTIONS:
            raise ConfigError(
                f"{where}: unknown worker option {key!r} "
                f"(JobWorker takes: {', '.join(sorted(_WORKER_OPTIONS))})"
            )
    return found


def queue_class(url: str) -> type[JobQueue]:
    """The class `lanemq.from_url` makes for ``url`` (its scheme only; from_url checks the
    rest), so option names can be checked before anything is opened."""
    scheme = url.partition(":")[0].lower()
    if scheme in REDIS_SCHEMES:
        return RedisJobQueue
    if scheme == "memory":
        return InMemoryJobQueue
    if scheme == "local":
        return LocalJobQueue
    raise ConfigError(
        f"unknown queue URL scheme {scheme!r} in {redact_url(url)!r} "
        "(use redis://, rediss://, redis+cluster://, redis+sentinel://, unix://, memory:// "
        "or local:DIR)"
    )


def check_queue_options(url: str, options: Mapping[str, Any], where: str) -> None:
    """Raises `ConfigError` naming a keyword that the queue class of ``url`` does not take."""
    cls = queue_class(url)
    taken = set(inspect.signature(cls).parameters) - {"name", "url", "path"}
    for key in options:
        if key not in taken:
            raise ConfigError(
                f"{where}: unknown option {key!r} for {cls.__name__} "
                f"(it takes: {', '.join(sorted(taken))})"
            )
