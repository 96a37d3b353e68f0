"""Checks of user input that the Rust core cannot phrase well: job names, leases, and text that
is not valid Unicode. Each refusal is a `ConfigError` naming the field and the value, raised
before anything is written."""

from __future__ import annotations

import reprlib
from collections.abc import Iterable
from typing import Any

from .exceptions import ConfigError

_short = reprlib.Repr()
_short.maxstring = 80
_short.maxother = 80

_INFINITY = float("inf")


def job_name(name: object, field: str = "job name") -> None:
    """A job name is a non-empty string (a worker finds the processor by it)."""
    if type(name) is not str or not name:
        raise ConfigError(f"invalid {field}: {name!r} (must be a non-empty string)")


def lease_ms(lease: float) -> int:
    """A lease in whole milliseconds, at least 1: a lease of 0 would expire at once, and the job
    could never be completed by the worker that holds it."""
    if not lease > 0:  # also refuses NaN
        raise ConfigError(f"invalid lease: {lease} (must be > 0 seconds)")
    if lease == _INFINITY:  # (no whole number of milliseconds)
        raise ConfigError(f"invalid lease: {lease} (must be a finite number of seconds)")
    return max(1, round(lease * 1000))


def _holds_surrogate(value: Any) -> bool:
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return True
        return False
    if isinstance(value, dict):
        return any(_holds_surrogate(k) or _holds_surrogate(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return any(_holds_surrogate(v) for v in value)
    return False


def unicode_text(value: str, field: str) -> None:
    """Refuses ``value`` if it holds a lone surrogate, for text Python encodes itself before
    the core sees it (a file name built from a queue name): the core's arguments refuse it in
    one place (the bindings' `Text`), a path made of it would raise `UnicodeEncodeError`."""
    if _holds_surrogate(value):
        raise ConfigError(
            f"invalid {field}: {_short.repr(value)} (holds a lone surrogate, which is not "
            "valid Unicode text)"
        )


def not_unicode(error: UnicodeEncodeError, fields: Iterable[tuple[str, Any]]) -> ConfigError:
    """The refusal of text that holds a lone surrogate (which UTF-8 cannot store), naming the
    first of ``fields`` (name, value) that holds one. Built only after the core refused."""
    for field, value in fields:
        if _holds_surrogate(value):
            return ConfigError(
                f"invalid {field}: {_short.repr(value)} (holds a lone surrogate, which is not "
                "valid Unicode text)"
            )
    return ConfigError(f"text that is not valid Unicode: {error}")
