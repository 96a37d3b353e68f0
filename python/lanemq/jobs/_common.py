"""Helpers the parts of `JobQueue` share."""

from __future__ import annotations

import time
import weakref
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar

from .._core import JobOptions
from .._results import EncodedResult, result_json
from ..exceptions import ConfigError
from ..flows import FlowJob

if TYPE_CHECKING:
    from ._base import QueueBase

_Q = TypeVar("_Q", bound="QueueBase")

STATES = ("waiting", "delayed", "active", "waiting_children", "completed", "failed")


def _register(registry: weakref.WeakValueDictionary[Any, _Q], key: Any, queue: _Q) -> None:
    """Records ``queue`` as the process's object for ``key`` (what `JobQueue.sibling` hands
    out), unless an open one is recorded already."""
    found = registry.get(key)
    if found is None or found._closed:
        registry[key] = queue


def _open(registry: weakref.WeakValueDictionary[Any, _Q], key: Any) -> _Q | None:
    """The open queue recorded for ``key``, or None."""
    found = registry.get(key)
    return found if found is not None and not found._closed else None


def _now(now: int | None) -> int:
    return int(time.time() * 1000) if now is None else now


def _encoded(
    items: Iterable[tuple[str, str, Any]], max_payload_bytes: int
) -> list[tuple[str, str, str]]:
    """Completion items with their results as JSON, each checked against the payload limit;
    the first that is refused raises (`result_json`) before anything is written. A worker's
    results are mostly None (its text is written here, without a call per job) or were
    encoded and checked when their job ended (an `EncodedResult`, passed on as it is)."""
    return [
        (
            i,
            t,
            "null"
            if r is None
            else r
            if r.__class__ is EncodedResult
            else result_json(i, r, max_payload_bytes),
        )
        for i, t, r in items
    ]


def _ms(field: str, seconds: float) -> int:
    if not seconds >= 0:  # also refuses NaN
        raise ConfigError(f"invalid {field}: {seconds} (must be >= 0 seconds)")
    return round(seconds * 1000)


def check_group(group: object) -> None:
    """Refuses a group that is not a str (or None), naming it; the core checks the name."""
    if group is not None and not isinstance(group, str):
        raise ConfigError(f"invalid group: {group!r} (must be a str)")


def _options(
    options: JobOptions | dict[str, Any] | None, extra: dict[str, Any]
) -> JobOptions | None:
    if options is None:
        if not extra:
            return None
        check_group(extra.get("group"))
        return JobOptions(**extra)
    if isinstance(options, JobOptions):
        if extra:
            raise TypeError("pass options either as JobOptions or as keywords, not both")
        return options
    if isinstance(options, dict):
        if "repeat" in options:
            # (add takes it out of its own options first: see `add_repeating`)
            raise ConfigError(
                f"invalid option repeat={options['repeat']!r}: only add(..., repeat=...) makes "
                "a job scheduler (add_bulk, flows and scheduler templates do not repeat)"
            )
        check_group(options.get("group", extra.get("group")))
        return JobOptions(**options, **extra)
    raise TypeError(f"options must be JobOptions, a dict or None, got {options!r}")


def _bulk_texts(items: list[tuple[str, str, Any]]) -> Iterable[tuple[str, Any]]:
    """The texts of an `add_bulk` call (name, encoded data), named, for a refusal."""
    for index, (name, body, _) in enumerate(items):
        yield f"name of job #{index}", name
        yield f"data of job #{index}", body


def _flow_texts(flow: FlowJob, path: str = "root") -> Iterable[tuple[str, Any]]:
    """The texts of a flow, named by node, for a refusal of one of them."""
    yield f"queue of flow node {path}", flow.queue
    yield f"name of flow node {path}", flow.name
    yield f"data of flow node {path}", flow.data
    for i, child in enumerate(flow.children):
        yield from _flow_texts(child, f"{path}.children[{i}]")


#: The keyword options of `JobQueue.add`, in the order it passes them to `_given_options`,
#: and their defaults (those of `JobOptions`).
_OPTION_NAMES = (
    "job_id",
    "priority",
    "lifo",
    "delay",
    "attempts",
    "backoff",
    "timeout",
    "remove_on_complete",
    "remove_on_fail",
    "max_stalled_count",
    "dedup",
    "group",
    "max_started_attempts",
    "stack_trace_limit",
)
_OPTION_DEFAULTS: tuple[Any, ...] = (
    None,
    0,
    False,
    0.0,
    1,
    None,
    None,
    None,
    None,
    1,
    None,
    None,
    None,
    None,
)

#: What `add_bulk` takes per job: ``(name, data)`` or ``(name, data, options)``.
BulkItem: TypeAlias = "tuple[str, Any] | tuple[str, Any, JobOptions | dict[str, Any] | None]"


def _given_options(values: tuple[Any, ...]) -> dict[str, Any]:
    """The keyword options that differ from their defaults, by name: an add with none of
    them passes no options at all (stored as defaults, which costs nothing). Equality is
    numeric (``priority=0.0`` is the default 0), which keeps the common case one tuple
    comparison."""
    if values == _OPTION_DEFAULTS:
        return {}
    return {
        name: value
        for name, value, default in zip(_OPTION_NAMES, values, _OPTION_DEFAULTS, strict=True)
        if value is not default and value != default
    }


def _error_text(error: str | BaseException) -> str:
    if isinstance(error, BaseException):
        error = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    if error.isascii():
        return error
    # A lone surrogate (an exception quoting bytes decoded with surrogateescape, say) is
    # escaped: a failure is recorded, not refused as the text of user input would be.
    return error.encode("utf-8", "backslashreplace").decode("utf-8")


def _check_name_type(name: object) -> None:
    """A queue name is a str; the core checks it against the queue-name rule (README, "Queue
    names"), the same way on every backend."""
    if not isinstance(name, str):
        raise ConfigError(f"invalid queue name: {name!r} (must be a str)")
