"""JSON in and out: payloads, results and progress are JSON text in every backend (never
pickle). Encoding refuses what JSON cannot hold, naming what was refused."""

from __future__ import annotations

import json
from typing import Any

_encode = json.JSONEncoder(separators=(",", ":"), allow_nan=False, ensure_ascii=False).encode
loads = json.loads


def dumps(value: Any, what: str) -> str:
    """``value`` as compact JSON; a `TypeError` naming ``what`` if it is not JSON."""
    if value is None:
        return "null"
    try:
        return _encode(value)
    except TypeError as error:
        raise TypeError(f"{what} is not JSON-serialisable: {error}") from None
    except ValueError as error:  # NaN or an infinity; the message does not say which
        raise TypeError(
            f"{what} is not JSON-serialisable: {error} (NaN, inf and -inf have no JSON form)"
        ) from None


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
    except (TypeError, ValueError):
        return dumps(value, what.format(*parts))
