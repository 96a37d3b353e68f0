"""JSON in and out: payloads, results and progress are JSON text in every backend (never
pickle). Encoding refuses what JSON cannot hold (`TypeError`) or data nested deeper than Python
can recurse (`ConfigError`), naming what was refused."""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable
from json import encoder as _encoder
from typing import Any

from .exceptions import ConfigError

_slow_encode = json.JSONEncoder(separators=(",", ":"), allow_nan=False, ensure_ascii=False).encode
loads = json.loads


def _refuse(value: Any) -> Any:
    # The message JSONEncoder.default gives.
    raise TypeError(f"Object of type {value.__class__.__name__} is not JSON serializable")


def _c_encoder() -> Callable[[Any, int], list[str]] | None:
    """CPython's C encoder as `JSONEncoder.encode` configures it for the options above, kept
    (one per thread): `encode` makes one on every call, through two Python-level methods,
    which took most of the time of encoding a small payload (timeit; benches/history/5-10.md). The
    markers dict finds circular references; None where there is no C encoder."""
    make: Any = getattr(_encoder, "c_make_encoder", None)
    if make is None:
        return None
    made: Callable[[Any, int], list[str]] = make(
        {}, _refuse, _encoder.encode_basestring, None, ":", ",", False, False, False
    )
    return made


class _Encoders(threading.local):
    """One C encoder per thread: its markers dict must not be shared by two encodings at once
    (a payload whose container runs Python code can let another thread in mid-encoding)."""

    def __init__(self) -> None:
        self.fast = _c_encoder()


_encoders = _Encoders()


def _encode(value: Any) -> str:
    """``value`` as compact JSON text, as `_slow_encode` gives it."""
    fast = _encoders.fast
    if fast is None or isinstance(value, str):
        return _slow_encode(value)
    try:
        return "".join(fast(value, 0))
    except BaseException:
        # A refusal can leave entries in the markers dict: start again with a fresh one.
        _encoders.fast = _c_encoder()
        raise


def dumps(value: Any, what: str) -> str:
    """``value`` as compact JSON; a `TypeError` naming ``what`` if it is not JSON."""
    if value is None:
        return "null"
    try:
        return _encode(value)
    except TypeError as error:
        raise TypeError(f"{what} is not JSON-serialisable: {error}") from None
    except RecursionError:
        raise ConfigError(
            f"{what} is nested too deeply to encode as JSON (more levels than Python's "
            f"recursion limit, {sys.getrecursionlimit()})"
        ) from None
    except ValueError as error:  # NaN or an infinity (not saying which), or a cycle
        note = " (NaN, inf and -inf have no JSON form)" if "float" in str(error) else ""
        raise TypeError(f"{what} is not JSON-serialisable: {error}{note}") from None


def dumps_result(job_id: str, value: Any) -> str:
    """A job's return value as JSON (the message is only built when it is refused)."""
    return _dumps_named(value, "return value of job {!r}", job_id)


def dumps_data(value: Any, name: str, index: int | None = None) -> str:
    """A new job's payload as JSON; the refusal names the job by ``name`` (and its place in a
    bulk add). The message is only built when it is refused: adds call this for every job."""
    if index is None:
        return _dumps_named(value, "data of job {!r}", name)
    return _dumps_named(value, "data of job #{} ({!r})", index, name)


def _dumps_named(value: Any, what: str, *parts: Any) -> str:
    """`dumps`, with ``what.format(*parts)`` formatted only if ``value`` is refused."""
    if value is None:
        return "null"
    try:
        return _encode(value)
    except (TypeError, ValueError, RecursionError):
        return dumps(value, what.format(*parts))
