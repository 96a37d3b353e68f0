"""The exception tree of lanemq. Every error is a `LaneError`; where a builtin fits, the error
subclasses it too, so `except ValueError` catches a bad configuration and `except TimeoutError`
a timed-out command."""

from __future__ import annotations


class LaneError(Exception):
    """Base of every lanemq error."""


class ConfigError(LaneError, ValueError):
    """A configuration or option value is invalid; the message names it."""


class UnknownLaneError(LaneError, LookupError):
    """A command was submitted to a lane the manager does not have."""


class ShutdownError(LaneError, RuntimeError):
    """The manager is shut down and accepts no more work."""


class CommandNotFoundError(LaneError, LookupError):
    """The command id is not known (it finished, or never existed)."""


class CommandStateError(LaneError):
    """The command is not in the state the operation needs."""


class CommandTimeoutError(LaneError, TimeoutError):
    """A lane command ran past its lane's timeout."""


class DrainTimeoutError(LaneError, TimeoutError):
    """`drain()` gave up before every in-flight command finished."""


class StorageError(LaneError, OSError):
    """Durable storage could not be read or written."""


class UnrecoverableError(LaneError):
    """Raise it from a command to fail at once, without the retries the policy would allow."""


__all__ = [
    "CommandNotFoundError",
    "CommandStateError",
    "CommandTimeoutError",
    "ConfigError",
    "DrainTimeoutError",
    "LaneError",
    "ShutdownError",
    "StorageError",
    "UnknownLaneError",
    "UnrecoverableError",
]
