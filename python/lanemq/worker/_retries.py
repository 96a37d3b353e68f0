"""What `JobWorker` decides of a failed attempt beyond the job's stored options: whether its
exception type may be retried (``retry_on`` / ``no_retry_on``, celery's ``autoretry_for``) and
the delay a custom backoff strategy gives it (``backoff_strategies``, BullMQ's
``backoffStrategy``). Both live on the worker because exception classes and functions cannot
be stored with a job: the job stores a strategy's name only (`Backoff.custom`)."""

from __future__ import annotations

import inspect
import math
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..exceptions import ConfigError
from ..job import Job

ExceptionTypes = type[BaseException] | tuple[type[BaseException], ...]
"""An exception class, or a tuple of them (as ``except`` takes)."""

BackoffStrategy = Callable[[int, BaseException, Job], float | Awaitable[float]]
"""``fn(attempts_made, error, job) -> seconds`` (or an ``async def`` one): the delay before
the retry; ``attempts_made`` is 1 at the first retry."""


def checked_exception_types(field: str, value: object) -> tuple[type[BaseException], ...] | None:
    """``value`` as a tuple of exception classes (None stays None), or `ConfigError`."""
    if value is None:
        return None
    classes = value if isinstance(value, tuple) else (value,)
    for item in classes:
        if not (isinstance(item, type) and issubclass(item, BaseException)):
            raise ConfigError(
                f"invalid {field}: {value!r} (must be an exception class or a tuple of them;"
                f" {item!r} is not one)"
            )
    return classes


@dataclass(frozen=True)
class RetryTypes:
    """Which exceptions a failed attempt may be retried for: those in ``retry_on`` (None:
    any), unless in ``no_retry_on``."""

    retry_on: tuple[type[BaseException], ...] | None = None
    no_retry_on: tuple[type[BaseException], ...] | None = None

    def allows(self, error: BaseException) -> bool:
        if self.no_retry_on is not None and isinstance(error, self.no_retry_on):
            return False
        return self.retry_on is None or isinstance(error, self.retry_on)

    def overridden(self, retry_on: object, no_retry_on: object) -> RetryTypes:
        """This policy with the keywords a processor gives (None: the worker's) in place."""
        own_retry_on = checked_exception_types("retry_on", retry_on)
        own_no_retry_on = checked_exception_types("no_retry_on", no_retry_on)
        return RetryTypes(
            self.retry_on if own_retry_on is None else own_retry_on,
            self.no_retry_on if own_no_retry_on is None else own_no_retry_on,
        )


def checked_strategies(value: object) -> dict[str, BackoffStrategy]:
    """``backoff_strategies`` as a dict of name to callable, or `ConfigError`."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(
            f"invalid backoff_strategies: {value!r} (must be a dict of name to function)"
        )
    for name, strategy in value.items():
        if not isinstance(name, str) or not name:
            raise ConfigError(
                f"invalid backoff_strategies name: {name!r} (must be a non-empty string)"
            )
        if not callable(strategy):
            raise ConfigError(
                f"invalid backoff_strategies[{name!r}]: {strategy!r} (must be a function"
                " (attempts_made, error, job) -> seconds)"
            )
    return dict(value)


FailItem = tuple[Any, ...]
"""A failure as the book gathers it: ``(job_id, token, error, stacktrace, retry)``."""


async def with_custom_delays(
    strategies: Mapping[str, BackoffStrategy], jobs: Sequence[Job], items: Sequence[FailItem]
) -> Sequence[FailItem]:
    """``items`` with the delay of each job's custom backoff added (a sixth value, seconds),
    for the failures that will be retried; a strategy that is unknown, raises or gives a bad
    value turns its item into a failure for good saying so. ``items`` itself when no job has
    a custom backoff (the usual case: nothing is copied)."""
    changed: list[FailItem] | None = None
    for index, (job, item) in enumerate(zip(jobs, items, strict=True)):
        backoff = job.options.backoff
        if backoff is None or backoff.name is None or not _retried(job, item):
            continue
        if changed is None:
            changed = list(items)
        changed[index] = await _custom_item(strategies, backoff.name, job, item)
    return items if changed is None else changed


def _retried(job: Job, item: FailItem) -> bool:
    """Whether the failure asks for a retry that an attempt is left for (a cancellation's
    reason is a str: never retried)."""
    error = item[2]
    return bool(item[4]) and isinstance(error, BaseException) and _attempts_left(job)


def _attempts_left(job: Job) -> bool:
    return job.attempts_started < job.options.attempts


async def _custom_item(
    strategies: Mapping[str, BackoffStrategy], name: str, job: Job, item: FailItem
) -> FailItem:
    job_id, token, error, stacktrace, _ = item
    strategy = strategies.get(name)
    if strategy is None:
        known = ", ".join(sorted(strategies)) or "none"
        problem = ConfigError(
            f"job {job_id}: unknown backoff strategy {name!r} (this worker knows: {known});"
            f" its attempt failed with {error!r}"
        )
        return job_id, token, problem, stacktrace, False
    try:
        seconds = strategy(job.attempts_started, error, job)
        if inspect.isawaitable(seconds):
            seconds = await seconds
    except Exception as raised:
        problem = ConfigError(
            f"job {job_id}: backoff strategy {name!r} raised {raised!r};"
            f" its attempt failed with {error!r}"
        )
        return job_id, token, problem, stacktrace, False
    if not _is_delay(seconds):
        problem = ConfigError(
            f"job {job_id}: backoff strategy {name!r} returned {seconds!r} (must be seconds,"
            f" an int or float >= 0); its attempt failed with {error!r}"
        )
        return job_id, token, problem, stacktrace, False
    return job_id, token, error, stacktrace, True, float(seconds)


def _is_delay(value: object) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return math.isfinite(value) and value >= 0
