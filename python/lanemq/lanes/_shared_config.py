"""What lanes shared by processes agree on: the backend a `QueueManager(backend=...)` names, its
lanes' settings as the store keeps them (JSON, compared with a joining manager's, so a
difference is named instead of one process silently dispatching by other rules), and the lanes
as the store dispatches them (`LaneSpec`)."""

from __future__ import annotations

import json
import math
import os
from typing import Any

from .._core import LaneConfig
from .._redis_url import REDIS_SCHEMES, redact_url, redis_url_problem
from ..exceptions import ConfigError
from ._store import LaneSpec

LOCAL_PREFIX = "local:"


def checked_backend(backend: object) -> str:
    """``backend`` if it is ``"local:DIR"`` or a Redis URL, else `ConfigError` naming it (its
    password masked)."""
    if not isinstance(backend, str):
        raise ConfigError(
            f"invalid backend: {backend!r} (must be 'local:DIR' or a redis:// URL string)"
        )
    if backend.startswith(LOCAL_PREFIX):
        if not backend[len(LOCAL_PREFIX) :]:
            raise ConfigError("invalid backend: 'local:' (the directory is missing: 'local:DIR')")
        return backend
    scheme = backend.partition(":")[0].lower()
    if "://" in backend and scheme in REDIS_SCHEMES:
        problem = redis_url_problem(backend)
        if problem is None:
            return backend
        raise ConfigError(f"invalid backend: {redact_url(backend)!r} ({problem})")
    raise ConfigError(
        f"invalid backend: {redact_url(backend)!r} (must be 'local:DIR', or a redis://, "
        "rediss://, redis+cluster:// or redis+sentinel:// URL)"
    )


def local_directory(backend: str) -> str | None:
    """The directory of a ``local:DIR`` backend (absolute), None for Redis."""
    if not backend.startswith(LOCAL_PREFIX):
        return None
    return os.path.abspath(os.path.expanduser(backend[len(LOCAL_PREFIX) :]))


def checked_lease(lease: object) -> float:
    if isinstance(lease, bool) or not isinstance(lease, int | float):
        raise ConfigError(f"invalid lease: {lease!r} (must be a number of seconds)")
    if not 0.05 <= lease < math.inf:
        raise ConfigError(f"invalid lease: {lease!r} (must be at least 0.05 seconds, finite)")
    return float(lease)


def checked_name(name: object) -> str:
    if not isinstance(name, str) or not name or "/" in name or name in (".", ".."):
        raise ConfigError(f"invalid name: {name!r} (a non-empty name without '/')")
    return name


def lane_settings(lanes: list[LaneConfig], max_concurrency: int | None) -> dict[str, Any]:
    """Everything about the lanes that every manager sharing them must agree on."""
    described = []
    for lane in lanes:
        retry = lane.retry
        rate = lane.rate_limit
        boost = lane.priority_boost
        described.append(
            {
                "lane_id": lane.lane_id,
                "priority": lane.priority,
                "min_concurrency": lane.min_concurrency,
                "max_concurrency": lane.max_concurrency,
                "timeout": lane.timeout,
                "retry": [
                    retry.max_retries,
                    retry.initial_delay,
                    retry.multiplier,
                    retry.max_delay,
                ],
                "rate_limit": None if rate is None else [rate.permits, rate.per],
                "priority_boost": (
                    None
                    if boost is None or boost.deadline is None
                    else [boost.deadline, [list(step) for step in boost.steps]]
                ),
            }
        )
    return {"lanes": described, "max_concurrency": max_concurrency}


def settings_text(settings: dict[str, Any]) -> str:
    return json.dumps(settings, sort_keys=True, separators=(",", ":"))


def settings_difference(stored: dict[str, Any], ours: dict[str, Any]) -> str | None:
    """The first difference between the stored settings and ours, in words, or None."""
    if stored.get("max_concurrency") != ours["max_concurrency"]:
        return (
            f"max_concurrency is {stored.get('max_concurrency')!r} in the store, "
            f"{ours['max_concurrency']!r} here"
        )
    stored_lanes = stored.get("lanes", [])
    stored_ids = [lane.get("lane_id") for lane in stored_lanes]
    our_ids = [lane["lane_id"] for lane in ours["lanes"]]
    if stored_ids != our_ids:
        return f"the lanes are {stored_ids} in the store, {our_ids} here"
    for theirs, mine in zip(stored_lanes, ours["lanes"], strict=True):
        for key, value in mine.items():
            if theirs.get(key) != value:
                return (
                    f"lane {mine['lane_id']!r}: {key} is {theirs.get(key)!r} in the store, "
                    f"{value!r} here"
                )
    return None


def lane_specs(lanes: list[LaneConfig]) -> list[LaneSpec]:
    """The lanes as the store dispatches them (milliseconds)."""
    specs: list[LaneSpec] = []
    for lane in lanes:
        rate = lane.rate_limit
        boost = lane.priority_boost
        deadline = None if boost is None else boost.deadline
        specs.append(
            (
                lane.lane_id,
                lane.priority,
                lane.min_concurrency,
                lane.max_concurrency,
                None if rate is None else rate.permits,
                None if rate is None else max(1, round(rate.per * 1000)),
                None if deadline is None else max(1, round(deadline * 1000)),
                [] if boost is None or deadline is None else list(boost.steps),
            )
        )
    return specs
