"""What `Job.wait()` raises for a job that failed for good: a `JobFailedError` that is also an
instance of the exception class its processor raised, where that class can be found and
joined, so ``except JobFailedError`` and ``except ValueError`` both catch it.

The class is named by what every backend stores of the failure: the last stack trace entry
(Python's traceback names the class ``module.qualname``, bare for ``builtins`` and
``__main__``), checked against the failure reason (``Name: message``, the bare class name);
without a trace that agrees (``stack_trace_limit=0``, a failure with no trace), the reason's
bare name alone. Security: a stored name is never imported. Only a
class whose module is already in `sys.modules` is used, and only a subclass of `Exception`:
a stored name cannot make this process import or run anything."""

from __future__ import annotations

import builtins
import re
import sys
import weakref
from typing import Any

from ..exceptions import JobFailedError

_HEADER = "Traceback (most recent call last):"
#: A class name at the start of a traceback's exception line, or of a failure reason.
_NAME = re.compile(r"([A-Za-z_][\w.<>]*)(?::|$)")

#: The joined class made for each original class (None: it cannot be made), made once.
_JOINED: weakref.WeakKeyDictionary[type, type[JobFailedError] | None] = weakref.WeakKeyDictionary()


def failed_error(job_id: str, reason: str, trace: list[str]) -> JobFailedError:
    """The `JobFailedError` for job ``job_id``'s failure for good: an instance of the class
    its processor raised too, where that can be made; its ``cause_type`` names that class
    (``"module.qualname"``; None when the failure names none)."""
    name = _cause_name(reason, trace)
    cls = None if name is None else _resolve(name)
    if cls is None:
        return JobFailedError(job_id, reason, cause_type=name)
    cause_type = f"{cls.__module__}.{cls.__qualname__}"
    if issubclass(JobFailedError, cls):  # `Exception` itself: JobFailedError is one already
        return JobFailedError(job_id, reason, cause_type=cause_type)
    joined = _joined(cls)
    error = None if joined is None else _instance(joined, job_id, reason, cause_type)
    return error or JobFailedError(job_id, reason, cause_type=cause_type)


def _cause_name(reason: str, trace: list[str]) -> str | None:
    """The raised class's name as stored: the last trace's when it agrees with the reason
    (a failure for good with a reason of its own, a stall, say, leaves the trace of an
    earlier attempt), else the reason's."""
    said = _NAME.match(reason)
    if said is None:
        return None
    bare = said.group(1)
    if trace:
        traced = _traced_name(trace[-1])
        if traced is not None and traced.rsplit(".", 1)[-1] == bare.rsplit(".", 1)[-1]:
            return traced
    # A class name, as class names are written (a reason of plain words, "timeout", is none).
    return bare if bare[:1].isupper() else None


def _traced_name(trace: str) -> str | None:
    """The class named by the exception line of a formatted traceback: the first line at
    the margin after its last ``Traceback`` header (frames are indented)."""
    lines = trace.splitlines()
    starts = [i for i, line in enumerate(lines) if line == _HEADER]
    if not starts:
        return None
    for line in lines[starts[-1] + 1 :]:
        if line and not line[0].isspace():
            found = _NAME.match(line)
            return found.group(1) if found else None
    return None


def _resolve(name: str) -> type[Exception] | None:
    """The `Exception` subclass ``name`` names in a module already imported, or None. A bare
    name is a builtin, or (as tracebacks write it) one of ``__main__``."""
    parts = name.split(".")
    found: Any
    if len(parts) == 1:
        found = getattr(builtins, name, None)
        if found is None and "__main__" in sys.modules:
            found = getattr(sys.modules["__main__"], name, None)
        return _exception_class(found)
    for cut in range(len(parts) - 1, 0, -1):  # the longest module name first
        module = sys.modules.get(".".join(parts[:cut]))
        if module is None:
            continue
        found = module
        for attribute in parts[cut:]:
            found = getattr(found, attribute, None)
        return _exception_class(found)
    return None


def _exception_class(found: object) -> type[Exception] | None:
    if isinstance(found, type) and issubclass(found, Exception):
        return found
    return None


def _joined(cls: type[Exception]) -> type[JobFailedError] | None:
    """``class JobFailedError_<Name>(JobFailedError, cls)``, made once per class; None where
    Python refuses it (base layouts that conflict, an order of bases it cannot linearize)."""
    try:
        return _JOINED[cls]
    except KeyError:
        pass
    joined: type[JobFailedError] | None
    try:
        joined = type(
            f"JobFailedError_{cls.__name__}",
            (JobFailedError, cls),
            {
                "__module__": JobFailedError.__module__,
                "__doc__": f"`JobFailedError` for a job whose processor raised {cls.__name__}.",
                # The message is JobFailedError's, whatever the original class shows.
                "__str__": BaseException.__str__,
            },
        )
    except TypeError:
        joined = None
    _JOINED[cls] = joined
    return joined


def _instance(
    joined: type[JobFailedError], job_id: str, reason: str, cause_type: str
) -> JobFailedError | None:
    """An instance of ``joined`` made without calling the original class's ``__init__``
    (it may want arguments this side does not have); None where its ``__new__`` refuses."""
    message = f"job {job_id!r} failed: {reason}"
    try:
        error = joined.__new__(joined, message)
        BaseException.__init__(error, message)
    except Exception:
        return None
    error.job_id = job_id
    error.reason = reason
    error.cause_type = cause_type
    return error
