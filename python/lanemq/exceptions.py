"""The exception tree of lanemq. Every error is a `LanemqError` (job errors too, not only lane
ones; `LaneError` is the same class under its first name, kept so existing `except LaneError`
code goes on working); where a builtin fits, the error subclasses it too, so `except
ValueError` catches a bad configuration and `except TimeoutError` a timed-out command."""

from __future__ import annotations

_INF = float("inf")


class LanemqError(Exception):
    """Base of every lanemq error."""


#: The base's first name, from when lanemq was only lanes: the same class.
LaneError = LanemqError


class ConfigError(LanemqError, ValueError):
    """A configuration or option value is invalid; the message names it."""


class UnknownLaneError(LanemqError, LookupError):
    """A command was submitted to a lane the manager does not have."""


class ShutdownError(LanemqError, RuntimeError):
    """The manager is shut down and accepts no more work."""


class CommandNotFoundError(LanemqError, LookupError):
    """The command id is not known (it finished, or never existed)."""


class CommandStateError(LanemqError):
    """The command is not in the state the operation needs."""


class CommandTimeoutError(LanemqError, TimeoutError):
    """A lane command ran past its lane's timeout."""


class CommandFailedError(LanemqError):
    """A lane command failed where the caller cannot hold its exception object: it ran in
    another process sharing the lanes (`QueueManager(backend=...)`). ``error_type`` is the
    class name of the original error and ``error_message`` its message; the exception's text
    is ``"ClassName: message"``. ``LeaseExpiredError`` names a command whose process stopped
    renewing its lease twice over, so it was not run a third time."""

    def __init__(self, error_type: str, message: str) -> None:
        super().__init__(f"{error_type}: {message}" if message else error_type)
        self.error_type = error_type
        self.error_message = message


class DrainTimeoutError(LanemqError, TimeoutError):
    """`drain()` gave up before every in-flight command finished."""


class StorageError(LanemqError, OSError):
    """Durable storage could not be read or written."""


class BackendConnectionError(StorageError, ConnectionError):
    """The backend's server (Redis) cannot serve now: unreachable, connection dropped, no
    answer within the connect timeout, or still loading its data after a restart
    (``LOADING``). The message names its address, never its password. Workers retry and
    resume by themselves once the server answers."""


class BackendAuthenticationError(BackendConnectionError):
    """The backend's server refused the credentials of the URL (wrong password or user, or
    none given where one is required). Retrying does not help until the URL is fixed."""


class UnrecoverableError(LanemqError):
    """Raise it from a lane command or a job processor to fail at once, without the retries
    that the policy (or the job's ``attempts``) would allow."""


class JobError(LanemqError):
    """Base of the job-queue errors."""


class JobNotFoundError(JobError, LookupError):
    """No job has this id (it never existed, or was removed)."""


class JobStateError(JobError):
    """The job (or queue) is not in a state that allows the operation."""


class PendingDependenciesError(JobStateError):
    """A parent job cannot complete while a child it waits for is unfinished: BullMQ's
    "pending dependencies" rule, met by a parent that ``continue_parent_on_failure`` released
    early. Nothing is written: the job stays active and held. A worker's completion of such a
    parent fails the attempt with this error instead, as BullMQ's worker does."""


class LockMismatchError(JobError):
    """The lock token presented does not hold the job's lock: the lease was lost, and another
    worker may own the job now."""


class JobFailedError(JobError):
    """`Job.wait()`: the job failed for good; ``reason`` says why. ``cause_type`` names the
    class its processor raised (``"builtins.ValueError"``, ``"app.errors.Declined"``; None
    when the failure names no class). Where that class is already imported (never imported
    from the stored name: security) and can be joined, the error is an instance of it too
    (of a subclass made once per class, ``JobFailedError_ValueError``), so both ``except
    JobFailedError`` and ``except ValueError`` catch it; the original class's ``__init__``
    is not called, so its own attributes are not set."""

    def __init__(self, job_id: str, reason: str, *, cause_type: str | None = None) -> None:
        super().__init__(f"job {job_id!r} failed: {reason}")
        self.job_id = job_id
        self.reason = reason
        self.cause_type = cause_type


class JobCancelledError(JobFailedError):
    """`Job.wait()`: the job was cancelled (`queue.cancel`); ``reason`` is the reason given.
    Raise it (or let `asyncio.CancelledError` through) in a processor whose job was cancelled."""


class CancelRequestedError(JobError):
    """A lease renewal's answer: the job's cancellation was requested (`queue.cancel`); its
    worker stops the processor and fails the job for good with the reason."""


class GroupMaxSizeExceededError(JobError):
    """An add would take a group past its ``max_size`` (`set_group_defaults` /
    `set_group_limits`); nothing was written."""


class DelayedError(JobError):
    """Raise it from a processor after `job.move_to_delayed(...)`: the job waits in the
    delayed set, and no attempt is used."""


class RateLimitError(JobError):
    """Raise it from a processor to give its job back: the job goes back to waiting (at the
    front) without using an attempt. With a ``delay`` (seconds), the whole queue waits that
    long, as after BullMQ's ``worker.rateLimit(ms)``: the worker calls
    ``queue.rate_limit(delay)`` before it gives the job back, so no claim returns a job, for
    any worker in any process, until the wait ends (idle workers wake when it does). Without
    one, only the job goes back; a wait set beforehand holds, as in

        await job.queue.rate_limit(30.0)
        raise RateLimitError()

    A ``delay`` that is not a finite number of seconds >= 0 raises `ConfigError`."""

    def __init__(self, delay: float = 0.0, message: str = "rate limited") -> None:
        if isinstance(delay, bool) or not isinstance(delay, int | float) or not 0 <= delay < _INF:
            raise ConfigError(
                f"invalid RateLimitError delay: {delay!r} (must be a finite number of seconds >= 0)"
            )
        super().__init__(message)
        self.delay = delay


__all__ = [
    "BackendAuthenticationError",
    "BackendConnectionError",
    "CancelRequestedError",
    "CommandFailedError",
    "CommandNotFoundError",
    "CommandStateError",
    "CommandTimeoutError",
    "ConfigError",
    "DelayedError",
    "DrainTimeoutError",
    "GroupMaxSizeExceededError",
    "JobCancelledError",
    "JobError",
    "JobFailedError",
    "JobNotFoundError",
    "JobStateError",
    "LaneError",
    "LanemqError",
    "LockMismatchError",
    "PendingDependenciesError",
    "RateLimitError",
    "ShutdownError",
    "StorageError",
    "UnknownLaneError",
    "UnrecoverableError",
]
