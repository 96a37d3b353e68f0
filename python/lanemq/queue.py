"""Job queues. `JobQueue` is the job contract as Python sees it, over any Rust backend
(`JobQueueCore`); `InMemoryJobQueue` is the in-process one. Every method is a coroutine; with an
in-process backend the awaited call is already resolved, so it costs no event-loop round trip.

Times: ``delay``, ``lease``, ``timeout`` and ``grace`` are seconds; timestamps are milliseconds
since the Unix epoch (UTC). Methods that depend on the clock take ``now`` (milliseconds) so
tests can drive time; it defaults to the wall clock."""

from __future__ import annotations

import asyncio
import json
import os
import time
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, TypeVar, get_args

from . import _checks, _json, _tracing, observe
from ._core import Backoff, Dedup, JobOptions, JobQueueCore, JobRecord, KeepJobs, MemoryGroupCore
from ._redis_url import foreign_scheme, redact_url, redis_url_problem
from ._results import EncodedResult, result_json
from .exceptions import BackendConnectionError, ConfigError, JobFailedError, JobNotFoundError
from .flows import Dependencies, FlowJob, JobNode, flow_args
from .job import Job
from .observe import QueueMetrics, WorkerInfo
from .schedulers import JobScheduler, every_ms, instant, limit_value

if TYPE_CHECKING:
    from ._core import _AddedRow

STATES = ("waiting", "delayed", "active", "waiting_children", "completed", "failed")


_Q = TypeVar("_Q", bound="JobQueue")
_R = TypeVar("_R", bound="RedisJobQueue")


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


def _options(
    options: JobOptions | dict[str, Any] | None, extra: dict[str, Any]
) -> JobOptions | None:
    if options is None:
        return JobOptions(**extra) if extra else None
    if isinstance(options, JobOptions):
        if extra:
            raise TypeError("pass options either as JobOptions or as keywords, not both")
        return options
    if isinstance(options, dict):
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
)
_OPTION_DEFAULTS: tuple[Any, ...] = (None, 0, False, 0.0, 1, None, None, None, None, 1, None)

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


@dataclass(frozen=True, slots=True)
class QueueEvent:
    """One entry of a queue's event stream. A custom event (`JobQueue.publish_event`) has
    ``custom`` set, its publisher's name as ``event`` and its payload, decoded, as ``data``;
    lanemq's own events have their values in ``fields``."""

    id: int
    timestamp: int
    event: str
    job_id: str | None
    fields: dict[str, str] = field(default_factory=dict)
    data: Any = None
    custom: bool = False


# The one name the backends store custom events under (lanemq_core's CUSTOM_EVENT); the
# publisher's name and payload are its fields.
_CUSTOM_EVENT = "custom"

_EventRow: TypeAlias = "tuple[int, int, str, str | None, list[tuple[str, str]]]"


def _event(row: _EventRow) -> QueueEvent:
    event_id, timestamp, event, job_id, fields = row
    if event == _CUSTOM_EVENT:
        named = dict(fields)
        data = json.loads(named["data"]) if "data" in named else None
        return QueueEvent(event_id, timestamp, named.get("name", ""), job_id, {}, data, True)
    return QueueEvent(event_id, timestamp, event, job_id, dict(fields))


@dataclass(frozen=True, slots=True)
class JobResult:
    """What `finished_result` knows: ``status`` is ``missing``, ``pending`` (``state`` says
    where it is), ``completed`` (``value``) or ``failed`` (``reason``)."""

    status: str
    value: Any = None
    reason: str | None = None
    state: str | None = None


@dataclass(frozen=True, slots=True)
class QueueStats:
    """What `JobQueue.get_stats` read, at one moment: ``counts`` per state (every state),
    whether the queue is ``paused``, ``max_active`` (`set_max_active`, None: no cap),
    ``rate_limit`` (`set_rate_limit`: ``(max_jobs, duration seconds)`` or None) and
    ``rate_limit_ttl``, the seconds the rate limits still hold claims back (as
    `get_rate_limit_ttl`)."""

    counts: dict[str, int]
    paused: bool
    max_active: int | None
    rate_limit: tuple[int, float] | None
    rate_limit_ttl: float


class JobQueue:
    """The job contract over a backend core. Subclasses choose the backend."""

    #: Whether calls wait on something outside this thread (a server, a file's writer thread):
    #: workers then keep two calls in flight so jobs run while one is out.
    _remote = True
    #: Set by `close`: a closed queue is not handed out again as a flow node's queue.
    _closed = False

    def __init__(self, name: str, core: JobQueueCore) -> None:
        self.name = name
        self._core = core

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"

    async def close(self) -> None:
        """Releases the backend's resources (a local queue's file) once pending operations are
        done. The queue cannot be used afterwards."""
        self._closed = True
        await self._core.close()

    async def __aenter__(self: _Q) -> _Q:
        # (self-typed: ``async with LocalJobQueue(...) as q`` gives a LocalJobQueue)
        return self

    async def _wait_reachable(self, timeout: float) -> bool:
        """Waits until the backend answers again (a server backend asks it often), at most
        ``timeout`` seconds; whether it did. An in-process backend just waits."""
        await asyncio.sleep(timeout)
        return True

    # The calls a `JobWorker` makes beyond the job contract: public names, so the worker does
    # not reach into the queue's private parts; they delegate to the private ones, which
    # backends override and tests call.

    @property
    def max_payload_bytes(self) -> int:
        """The largest payload the queue takes, in bytes of JSON: a job's data and its result
        (a worker fails a job whose result is larger, with `ValueError`)."""
        return self._core.max_payload_bytes

    @property
    def remote(self) -> bool:
        """Whether calls wait on something outside this thread (a server, a file's writer
        thread): a `JobWorker` then keeps two calls in flight so jobs run while one is out."""
        return self._remote

    async def wait_reachable(self, timeout: float) -> bool:
        """For a worker that lost its backend: waits until the backend answers again, at most
        ``timeout`` seconds; whether it did."""
        return await self._wait_reachable(timeout)

    def wait_and_claim(
        self, worker_id: str, lease: float, max_jobs: int, timeout: float | None
    ) -> tuple[Awaitable[list[Job]], Callable[[], None]]:
        """For an idle worker: waits for a job and claims up to ``max_jobs`` in one backend
        call; returns the awaitable of the claimed jobs and the function that interrupts the
        wait (see `_wait_and_claim`)."""
        return self._wait_and_claim(worker_id, lease, max_jobs, timeout)

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    # -------------------------------------------------------------------- add

    async def add(
        self,
        name: str,
        data: Any = None,
        options: JobOptions | dict[str, Any] | None = None,
        *,
        job_id: str | None = None,
        priority: int = 0,
        lifo: bool = False,
        delay: float = 0.0,
        attempts: int = 1,
        backoff: Backoff | None = None,
        timeout: float | None = None,
        remove_on_complete: bool | int | KeepJobs | None = None,
        remove_on_fail: bool | int | KeepJobs | None = None,
        max_stalled_count: int = 1,
        dedup: Dedup | None = None,
        now: int | None = None,
    ) -> Job:
        """Adds a job. Options are keywords (typed, so a type checker catches a misspelt
        one), or ``options``: a `JobOptions` or a dict of its fields (which also takes the
        flow options, ``parent_policy`` and the like); a keyword that differs from its default
        cannot be combined with `JobOptions`. ``job_id``: a custom id; one that exists returns
        the existing job unchanged. ``priority``: 0 (none, first) or 1..2^21 - 1, lower first.
        ``lifo``: last in, first out within the priority. ``delay``: seconds before it may run.
        ``attempts`` and ``backoff`` (`Backoff`): retries. ``timeout``: seconds an attempt
        may run. ``remove_on_complete`` / ``remove_on_fail``: retention (True: remove; a
        count, or `KeepJobs`). ``max_stalled_count``: stalls allowed before it fails.
        ``dedup`` (`Dedup`): while its key is held, the add returns the job holding it."""
        _checks.job_name(name)
        given = _given_options(
            (
                job_id,
                priority,
                lifo,
                delay,
                attempts,
                backoff,
                timeout,
                remove_on_complete,
                remove_on_fail,
                max_stalled_count,
                dedup,
            )
        )
        opts = _options(options, given)
        body = _json.dumps_data(data, name)
        tracing = _tracing.active  # (None while OpenTelemetry tracing is off)
        try:
            if tracing is None:
                record = await self._core.add(name, body, opts, _now(now))
            else:
                record = await tracing.add(self, name, body, opts, _now(now))
        except UnicodeEncodeError as error:
            raise _checks.not_unicode(error, [("job name", name), ("data", data)]) from None
        return Job(self, record)

    async def add_bulk(self, jobs: Iterable[BulkItem], *, now: int | None = None) -> list[Job]:
        """Adds ``(name, data)`` or ``(name, data, options)`` tuples atomically: if any is
        invalid, none is added. ``options`` is `JobOptions` (checked by a type checker), a
        dict of its fields or None. The result keeps the input order."""
        items: list[tuple[str, str, JobOptions | None]] = []
        for index, item in enumerate(jobs):
            if len(item) == 2:
                name, data = item
                opts = None
            elif len(item) == 3:
                name, data, raw = item
                opts = _options(raw, {})
            else:
                raise TypeError(f"job #{index}: expected (name, data[, options]), got {item!r}")
            _checks.job_name(name, f"name of job #{index}")
            items.append((name, _json.dumps_data(data, name, index), opts))
        tracing = _tracing.active
        try:
            if tracing is None:
                added = await self._core.add_bulk(items, _now(now))
            else:
                added = await tracing.add_bulk(self, items, _now(now))
        except UnicodeEncodeError as error:
            raise _checks.not_unicode(error, _bulk_texts(items)) from None
        return [Job(self, record) for record in added]

    # ------------------------------------------------------------------ flows

    def _flow_options(self, options: Any) -> JobOptions | None:
        return _options(options, {})

    def sibling(self, name: str) -> JobQueue:
        """The queue ``name`` of this queue's backend, which flows may span: of the same
        `MemoryGroup`, a local file in the same directory, or a Redis queue of the same server
        and prefix. A queue this process already made is returned as it is (flow nodes in
        other queues come back as those objects)."""
        if name == self.name:
            return self
        raise ConfigError(f"queue {name!r} is not reachable from queue {self.name!r}")

    def _nodes(self, rows: list[_AddedRow]) -> list[JobNode]:
        nodes: list[JobNode] = []
        roots: list[JobNode] = []
        for queue_name, record, parent in rows:
            node = JobNode(Job(self.sibling(queue_name), record))
            nodes.append(node)
            (roots if parent is None else nodes[parent].children).append(node)
        return roots

    async def add_flow(self, flow: FlowJob, *, now: int | None = None) -> JobNode:
        """Adds a flow: the root on this queue (unless it names another), each child on its
        ``queue`` (default: its parent's) of the same backend. All or nothing: every node is
        checked first (options, queue, payload; a custom ``job_id`` must be free), then all are
        written in one step. A node with children is created in ``waiting_children``. A flow
        of one job (no children) is added as `add` adds it (dedup options included); a flow
        whose root's custom ``job_id`` exists returns that job with its children as they are
        (a ``duplicated`` event, nothing else written). Dedup options work on every node in
        this queue: a node deduplicated into the job holding its key is that job, which
        becomes the parent's child (README, "Differences from BullMQ")."""
        args = flow_args(flow, self._flow_options)
        tracing = _tracing.active
        try:
            if tracing is None:
                rows = await self._core.add_flow(args, now)
            else:
                rows = await tracing.add_flow(self, args, now)
        except UnicodeEncodeError as error:
            raise _checks.not_unicode(error, _flow_texts(flow)) from None
        return self._nodes(rows)[0]

    async def _add_children(
        self, job: Job, children: Iterable[FlowJob], now: int | None
    ) -> list[JobNode]:
        token = job.lock_token
        if token is None:
            raise ConfigError(f"job {job.id!r} is not held by a worker (add_children needs it)")
        args = [
            flow_args(child, self._flow_options, f"children[{i}]")
            for i, child in enumerate(children)
        ]
        tracing = _tracing.active
        try:
            if tracing is None:
                rows = await self._core.add_children(job.id, token, args, now)
            else:
                rows = await tracing.add_children(self, job.id, token, args, now)
        except UnicodeEncodeError as error:
            texts = [text for child in children for text in _flow_texts(child)]
            raise _checks.not_unicode(error, texts) from None
        return self._nodes(rows)

    async def get_dependencies(
        self,
        parent_id: str,
        *,
        processed_cursor: int = 0,
        unprocessed_cursor: int = 0,
        failed_cursor: int = 0,
        ignored_cursor: int = 0,
        count: int | None = None,
    ) -> Dependencies:
        """A page of the children of ``parent_id``: each set from its cursor, at most
        ``count`` of each (None: all)."""
        cursors = (processed_cursor, unprocessed_cursor, failed_cursor, ignored_cursor)
        if min(cursors) < 0 or (count is not None and count < 1):
            raise ConfigError(f"invalid dependency page: cursors {cursors}, count {count}")
        processed, unprocessed, failed, ignored, nxt = await self._core.get_dependencies(
            parent_id, cursors, count
        )
        return Dependencies(
            {k: _json.loads(v) for k, v in processed},
            unprocessed,
            dict(failed),
            dict(ignored),
            *nxt,
        )

    async def get_dependencies_count(self, parent_id: str) -> dict[str, int]:
        """How many children of ``parent_id`` are processed, unprocessed, failed, ignored."""
        return await self._core.get_dependencies_count(parent_id)

    async def get_children_values(self, parent_id: str) -> dict[str, Any]:
        """The return values of the completed children of ``parent_id``, by child key."""
        return (await self.get_dependencies(parent_id)).processed

    async def get_ignored_children_failures(self, parent_id: str) -> dict[str, str]:
        """The failure reasons of the children of ``parent_id`` whose failure was ignored."""
        return (await self.get_dependencies(parent_id)).ignored

    async def remove_child_dependency(self, child_id: str, *, now: int | None = None) -> bool:
        """Detaches the child ``child_id`` from its parent: True if it was a pending
        dependency (the parent is released if it was the last)."""
        return await self._core.remove_child_dependency(child_id, now)

    async def remove_unprocessed_children(self, parent_id: str, *, now: int | None = None) -> int:
        """Removes every unprocessed child of ``parent_id`` with its tree, unless a worker
        holds a job of that tree (the parent is released once none is left); returns how many
        children were removed."""
        return await self._core.remove_unprocessed_children(parent_id, now)

    # ------------------------------------------------------------------ claim

    async def claim(
        self, worker_id: str, lease: float = 30.0, max_jobs: int = 1, *, now: int | None = None
    ) -> list[Job]:
        """Promotes due delayed jobs and returns up to ``max_jobs`` jobs, each active and
        locked for ``lease`` seconds under a fresh ``lock_token``. Respects pause, the rate
        limit and the global concurrency limit."""
        if max_jobs < 1:
            raise ConfigError(f"invalid max_jobs: {max_jobs} (must be >= 1)")
        records = await self._core.claim(worker_id, _checks.lease_ms(lease), max_jobs, _now(now))
        return [Job(self, record) for record in records]

    async def wait_for_job(self, timeout: float | None = None) -> bool:
        """Sleeps until a claim may return a job (True), or ``timeout`` seconds pass (False).
        Wakes on adds, releases, resumes and retries, and on time for delayed jobs."""
        return await self._core.wait_for_job(timeout)

    def _wait_and_claim(
        self, worker_id: str, lease: float, max_jobs: int, timeout: float | None
    ) -> tuple[Awaitable[list[Job]], Callable[[], None]]:
        """What an idle worker does, in one backend call: `wait_for_job`, then `claim` as soon
        as the wait ends (no trip through the event loop between the two). Returns the
        awaitable, which gives the claimed jobs (none after ``timeout``, or when interrupted
        while still waiting), and the function that interrupts the wait. Interrupt rather
        than cancel: a cancelled call could drop jobs its claim had just taken."""
        pending, interrupt = self._core.wait_and_claim(
            worker_id,
            _checks.lease_ms(lease),
            max_jobs,
            None if timeout is None else _ms("timeout", timeout),
        )

        async def claimed() -> list[Job]:
            return [Job(self, record) for record in await pending]

        return claimed(), interrupt.interrupt

    # -------------------------------------------------------------- finishing

    async def complete(
        self, job_id: str, token: str, result: Any = None, *, now: int | None = None
    ) -> None:
        """Completes an active job held by ``token`` (`LockMismatchError` otherwise). A
        ``result`` that JSON cannot hold raises `TypeError`, one over `max_payload_bytes`
        `ValueError` (naming the job and the sizes); nothing is written then."""
        body = result_json(job_id, result, self._core.max_payload_bytes)
        await self._core.complete(job_id, token, body, _now(now))

    async def complete_many(
        self, items: Iterable[tuple[str, str, Any]], *, now: int | None = None
    ) -> list[tuple[str, str]]:
        """Completes ``(job_id, token, result)`` items in one step; returns ``(job_id,
        error)`` for those that could not be completed. A result refused as `complete` refuses
        it raises, and nothing is written."""
        encoded = _encoded(items, self._core.max_payload_bytes)
        return await self._core.complete_many(encoded, _now(now))

    async def complete_and_claim(
        self,
        items: Iterable[tuple[str, str, Any]],
        worker_id: str,
        lease: float = 30.0,
        max_jobs: int = 1,
        *,
        now: int | None = None,
    ) -> tuple[list[tuple[str, str]], list[Job]]:
        """`complete_many`, then `claim`, in one step (one round trip on Redis): returns the
        ``(job_id, error)`` refusals and the claimed jobs. ``max_jobs`` may be 0 (complete
        only)."""
        if max_jobs < 0:
            raise ConfigError(f"invalid max_jobs: {max_jobs} (must be >= 0)")
        refused, records = await self._core.complete_and_claim(
            _encoded(items, self._core.max_payload_bytes),
            worker_id,
            _checks.lease_ms(lease),
            max_jobs,
            _now(now),
        )
        return refused, [Job(self, record) for record in records]

    async def fail(
        self,
        job_id: str,
        token: str,
        error: str | BaseException,
        stacktrace: str | None = None,
        retry: bool = True,
        *,
        delay: float | None = None,
        now: int | None = None,
    ) -> bool:
        """Records a failed attempt. Retries (after the backoff, or ``delay`` seconds) while
        ``retry`` and attempts remain; otherwise the job fails for good. True if retried."""
        text = _error_text(error)
        delay_ms = None if delay is None else _ms("delay", delay)
        retried, _ = await self._core.fail(
            job_id, token, text, stacktrace, retry, delay_ms, _now(now)
        )
        return retried

    async def fail_many(
        self,
        items: Iterable[tuple[str, str, str | BaseException, str | None, bool]],
        *,
        now: int | None = None,
    ) -> list[tuple[str, bool, str | None]]:
        """Fails ``(job_id, token, error, stacktrace, retry)`` items in one step; returns
        ``(job_id, retried, error)`` per item (error set if it could not be failed)."""
        encoded = [(i, t, _error_text(e), s, r) for i, t, e, s, r in items]
        return await self._core.fail_many(encoded, _now(now))

    async def renew(self, job_id: str, token: str, lease: float, *, now: int | None = None) -> None:
        """Extends the lease to now + ``lease`` seconds."""
        await self._core.renew(job_id, token, _checks.lease_ms(lease), _now(now))

    async def renew_many(
        self, items: Iterable[tuple[str, str]], lease: float, *, now: int | None = None
    ) -> list[str]:
        """Renews many leases in one step; returns the ids whose lease was lost."""
        return await self._core.renew_many(list(items), _checks.lease_ms(lease), _now(now))

    async def move_to_delayed(
        self,
        job_id: str,
        token: str,
        delay: float | None = None,
        *,
        delay_until: int | None = None,
        now: int | None = None,
    ) -> None:
        """Parks an active job in the delayed set (``delay`` seconds from now, or until the
        ``delay_until`` timestamp) without using an attempt."""
        at = _now(now)
        until = delay_until if delay_until is not None else at + _ms("delay", delay or 0.0)
        await self._core.move_to_delayed(job_id, token, until, at)

    async def release(self, job_id: str, token: str, *, now: int | None = None) -> None:
        """Gives an active job back: waiting, at the front of its priority, attempt unused,
        no stall counted. A lease that ran out still gives back while ``token`` holds the job
        (stalled recovery did not take it)."""
        await self._core.release(job_id, token, now)

    async def recover_stalled(self, *, now: int | None = None) -> tuple[list[str], list[str]]:
        """Active jobs whose lease expired go back to waiting (stalled count + 1), or fail
        past ``max_stalled_count``. Returns (recovered ids, failed ids)."""
        return await self._core.recover_stalled(now)

    async def _holds_lock(self, job_id: str, token: str) -> bool:
        return await self._core.holds_lock(job_id, token)

    # ----------------------------------------------------------------- reading

    async def _record(self, job_id: str) -> JobRecord:
        record = await self._core.get_job(job_id)
        if record is None:
            raise JobNotFoundError(f"job {job_id!r} not found")
        return record

    async def get_job(self, job_id: str) -> Job | None:
        record = await self._core.get_job(job_id)
        return None if record is None else Job(self, record)

    async def get_state(self, job_id: str) -> str:
        """The job's state, or ``unknown`` if there is no such job."""
        return await self._core.get_state(job_id)

    async def get_job_counts(self, *states: str) -> dict[str, int]:
        """Counts per state, in the order asked (repeats dropped); all six when none."""
        return await self._core.get_job_counts(list(states))

    async def get_job_count(self, *states: str) -> int:
        """How many jobs are in ``states`` together (BullMQ's ``getJobCountByTypes``): the
        sum of `get_job_counts` for them, each state counted once; all jobs when none."""
        return await self._core.get_job_count(list(states))

    async def get_stats(self, *, now: int | None = None) -> QueueStats:
        """The queue at a glance, in one read (one round trip on Redis, where BullMQ users
        ask ``getJobCounts``, ``isPaused``, ``getGlobalConcurrency``, ``getRateLimitTtl``...
        one by one): counts per state, pause, the cap on active jobs, the rate limit and how
        long it still holds claims back."""
        return QueueStats(*await self._core.get_stats(now))

    async def count_pending(self) -> int:
        """Jobs that will still run: waiting + delayed + waiting for children."""
        return await self._core.count_pending()

    async def get_counts_per_priority(self, *priorities: int) -> dict[int, int]:
        return await self._core.get_counts_per_priority(list(priorities))

    async def list_jobs(
        self,
        states: Iterable[str] | str | None = None,
        start: int = 0,
        end: int = -1,
        ascending: bool = True,
    ) -> list[Job]:
        """Jobs in ``states`` (all when None), from index ``start`` to ``end`` inclusive."""
        names = [states] if isinstance(states, str) else list(states or ())
        records = await self._core.list_jobs(names, start, end, ascending)
        return [Job(self, record) for record in records]

    async def list_jobs_with_total(
        self,
        states: Iterable[str] | str | None = None,
        start: int = 0,
        end: int = -1,
        ascending: bool = True,
    ) -> tuple[list[Job], int]:
        """`list_jobs`, and the number of jobs in ``states`` that the page was cut from (for a
        pager: BullMQ users call ``getJobs`` and ``getJobCountByTypes``, two reads that can
        disagree), from one read: the total is the one the page's indexes refer to."""
        names = [states] if isinstance(states, str) else list(states or ())
        records, total = await self._core.list_jobs_with_total(names, start, end, ascending)
        return [Job(self, record) for record in records], total

    @staticmethod
    def _result(status: str, value: str | None) -> JobResult:
        if status == "completed":
            return JobResult("completed", value=None if value is None else _json.loads(value))
        if status == "failed":
            return JobResult("failed", reason=value)
        if status == "pending":
            return JobResult("pending", state=value)
        return JobResult("missing")

    async def finished_result(self, job_id: str) -> JobResult:
        return self._result(*await self._core.finished_result(job_id))

    async def _wait_finished(self, job_id: str, timeout: float | None) -> Any:
        result = self._result(*await self._core.wait_finished(job_id, timeout))
        if result.status == "completed":
            return result.value
        if result.status == "failed":
            raise JobFailedError(job_id, result.reason or "")
        if result.status == "pending":
            raise TimeoutError(f"job {job_id!r} did not finish within {timeout}s")
        raise JobNotFoundError(f"job {job_id!r} not found (it may have been removed)")

    # ----------------------------------------------------------------- editing

    async def promote(self, job_id: str, *, now: int | None = None) -> None:
        """Makes a delayed job waiting now."""
        await self._core.promote(job_id, now)

    async def promote_jobs(self, count: int | None = None, *, now: int | None = None) -> int:
        """Makes delayed jobs waiting now, due or not, earliest first (BullMQ's
        ``promoteJobs``): at most ``count`` of them (None: all; BullMQ's ``count`` is the size
        of the batches in which it promotes them all). Returns how many were promoted; each
        emits ``waiting``, as `promote` does."""
        return await self._core.promote_jobs(count, now)

    async def reschedule(self, job_id: str, delay: float, *, now: int | None = None) -> None:
        """Delays a waiting or delayed job to ``delay`` seconds from now."""
        await self._core.reschedule(job_id, delay, now)

    async def retry_job(
        self, job_id: str, *, reset_attempts: bool = False, now: int | None = None
    ) -> None:
        """Moves a failed (or completed) job back to waiting, as BullMQ's ``job.retry()``: its
        attempts made and stalled count stay, so a job that used all its attempts gets one
        more run, whose failure is final. ``reset_attempts=True`` (BullMQ's
        ``resetAttemptsMade``) gives it its full set of attempts again."""
        if type(reset_attempts) is not bool:
            raise ConfigError(f"invalid reset_attempts: {reset_attempts!r} (must be True or False)")
        await self._core.retry_job(job_id, reset_attempts, now)

    async def update_priority(self, job_id: str, priority: int, lifo: bool = False) -> None:
        await self._core.update_priority(job_id, priority, lifo)

    async def update_data(self, job_id: str, data: Any) -> None:
        await self._core.update_data(job_id, _json.dumps(data, f"data of job {job_id!r}"))

    async def update_progress(self, job_id: str, value: Any, *, now: int | None = None) -> None:
        await self._core.update_progress(job_id, _json.dumps(value, "progress"), now)

    async def _write_progress(self, job: Job, value: Any) -> None:
        await job.ensure_lease()
        await self.update_progress(job.id, value)

    async def add_log(self, job_id: str, line: str, keep: int = 0) -> int:
        if keep < 0:
            raise ConfigError(f"invalid keep: {keep} (must be >= 0)")
        return await self._core.add_log(job_id, str(line), keep)

    async def get_logs(
        self, job_id: str, start: int = 0, end: int = -1, ascending: bool = True
    ) -> tuple[list[str], int]:
        """Log lines ``start..=end`` and the total count."""
        return await self._core.get_logs(job_id, start, end, ascending)

    async def clear_logs(self, job_id: str, keep: int = 0) -> None:
        if keep < 0:
            raise ConfigError(f"invalid keep: {keep} (must be >= 0)")
        await self._core.clear_logs(job_id, keep)

    async def save_stacktrace(
        self, job_id: str, lines: list[str], reason: str | None = None
    ) -> None:
        await self._core.save_stacktrace(job_id, list(lines), reason)

    async def remove(self, job_id: str, *, now: int | None = None) -> None:
        """Removes a job with its whole tree of children, in every queue (as BullMQ does);
        refused with `JobStateError`, changing nothing, while a worker holds the lock of a job
        of the tree, and for a job scheduler's pending occurrence (as in BullMQ;
        `remove_scheduler` removes it). A child still pending leaves its parent (released if it
        was the last)."""
        await self._core.remove(job_id, now)

    # ------------------------------------------------------------- dedup keys

    async def get_deduplication_job_id(
        self, dedup_id: str, *, now: int | None = None
    ) -> str | None:
        """The id of the job holding the dedup key ``dedup_id``, or None when the key is not
        held (absent, its ttl ran out, or, without a ttl, its job finished)."""
        return await self._core.get_deduplication_job_id(dedup_id, now)

    async def get_deduplication_ttl(self, dedup_id: str, *, now: int | None = None) -> float | None:
        """The seconds the dedup key ``dedup_id`` is still held (BullMQ users read the key's
        ``pttl``): None when it is not held (as `get_deduplication_job_id`), ``math.inf`` when
        it has no ttl (held until its job finishes)."""
        return await self._core.get_deduplication_ttl(dedup_id, now)

    async def remove_deduplication_key(self, dedup_id: str, *, now: int | None = None) -> bool:
        """Deletes the dedup key ``dedup_id`` (and a keep_last job waiting on it), so the next
        add with that id is added. True if a held key was deleted."""
        return await self._core.remove_deduplication_key(dedup_id, now)

    # ---------------------------------------------------------- job schedulers

    async def upsert_scheduler(
        self,
        key: str,
        *,
        every: float | None = None,
        cron: str | None = None,
        template: Sequence[Any],
        limit: int | None = None,
        start: datetime | int | None = None,
        end: datetime | int | None = None,
        tz: str = "UTC",
        immediately: bool = False,
        now: int | None = None,
    ) -> Job:
        """Creates or updates the job scheduler ``key`` and returns its pending occurrence.

        The schedule is ``every`` seconds, or the ``cron`` pattern (5 fields, or 6 with
        seconds first) read in the IANA zone ``tz``; exactly one of them. ``template`` is
        ``(name, data)`` or ``(name, data, options)`` (`JobOptions` or a dict, without
        ``job_id``, ``dedup`` or ``delay``): every occurrence is a job made from it, delayed
        until its run time, with the id ``repeat:<key>:<run time ms>``. ``limit`` caps the
        number of occurrences (the first included); ``start`` and ``end`` (aware `datetime`
        or epoch milliseconds) bound the run times; ``immediately`` makes a cron schedule run
        once at once (an ``every`` schedule always does), and cannot be combined with
        ``start`` (as in BullMQ).

        One occurrence is pending at a time, and it belongs to the scheduler: `remove`
        refuses it (`JobStateError`; `remove_scheduler` removes both), and `drain` and
        `clean` leave it, as in BullMQ. The next one is produced when a worker claims
        the pending one, at the schedule's next time (missed times are skipped, not
        replayed); when there is none (``limit``, ``end``) the scheduler is removed.
        Upserting again with the same schedule and template changes nothing. Otherwise the
        pending occurrence, if it has not started, is replaced (a ``removed`` event): at its
        own run time if the ``every`` value or cron pattern and zone are unchanged, else at
        the new schedule's first run; the iteration count carries on, so a ``limit`` below it
        is refused. Invalid input raises `ConfigError` (a `ValueError`) naming the value, and
        writes nothing."""
        every_value = every_ms(every, cron)
        if isinstance(template, str | bytes) or not isinstance(template, Sequence):
            raise TypeError(f"template must be (name, data[, options]), got {template!r}")
        if not 2 <= len(template) <= 3:
            raise TypeError(f"template must be (name, data[, options]), got {template!r}")
        name, data = template[0], template[1]
        _checks.job_name(name, f"job name of the template of scheduler {key!r}")
        opts = _options(template[2] if len(template) == 3 else None, {})
        body = _json.dumps(data, f"data of the template of scheduler {key!r}")
        record = await self._core.upsert_scheduler(
            key,
            every_value,
            cron,
            tz,
            limit_value(limit),
            instant("start", start),
            instant("end", end),
            immediately,
            name,
            body,
            opts,
            now,
        )
        return Job(self, record)

    async def get_scheduler(self, key: str) -> JobScheduler | None:
        record = await self._core.get_scheduler(key)
        return None if record is None else JobScheduler._from_record(record)

    async def list_schedulers(
        self, start: int = 0, end: int = -1, ascending: bool = True
    ) -> list[JobScheduler]:
        """Schedulers ordered by next run time (then key), from index ``start`` to ``end``
        inclusive (negative indexes count from the end)."""
        records = await self._core.list_schedulers(start, end, ascending)
        return [JobScheduler._from_record(record) for record in records]

    async def count_schedulers(self) -> int:
        return await self._core.count_schedulers()

    async def remove_scheduler(self, key: str, *, now: int | None = None) -> bool:
        """Removes the scheduler ``key`` and its pending occurrence if that has not started
        (a running one finishes normally). True if the scheduler existed."""
        return await self._core.remove_scheduler(key, now)

    # -------------------------------------------------------------- the queue

    async def pause(self, *, now: int | None = None) -> None:
        """Stops handing out jobs (adds are still accepted)."""
        await self._core.pause(now)

    async def resume(self, *, now: int | None = None) -> None:
        await self._core.resume(now)

    async def is_paused(self) -> bool:
        return await self._core.is_paused()

    async def drain(self, delayed: bool = False, *, now: int | None = None) -> int:
        """Removes all waiting jobs (and delayed ones with ``delayed``), except the pending
        occurrences of job schedulers, as BullMQ does; returns how many. Schedulers and their
        pending occurrences stay."""
        return await self._core.drain(delayed, now)

    async def clean(
        self, grace: float, limit: int = 0, state: str = "completed", *, now: int | None = None
    ) -> list[str]:
        """Removes up to ``limit`` (0 = all) jobs in ``state`` older than ``grace`` seconds,
        except the pending occurrences of job schedulers (as BullMQ does); returns their ids."""
        if not 0 <= limit < 2**63:
            raise ConfigError(f"invalid limit: {limit} (must be >= 0 and below 2**63)")
        return await self._core.clean(grace, limit, state, now)

    async def obliterate(self, force: bool = False, *, now: int | None = None) -> None:
        """Deletes the queue's jobs, job schedulers, events and settings. Pauses first; with
        active jobs it is refused (`JobStateError`) and the queue stays paused, unless
        ``force``. Counters go too, as in BullMQ: the next automatic id is ``"1"`` and the next
        event id 1 (so an `events` iterator started before should be started again)."""
        await self._core.obliterate(force, now)

    async def set_rate_limit(self, max_jobs: int, duration: float) -> None:
        """At most ``max_jobs`` claims per ``duration`` seconds, across all workers."""
        await self._core.set_rate_limit(max_jobs, duration)

    async def get_rate_limit(self) -> tuple[int, float] | None:
        return await self._core.get_rate_limit()

    async def clear_rate_limit(self) -> None:
        await self._core.clear_rate_limit()

    async def rate_limit(self, seconds: float, *, now: int | None = None) -> None:
        """Holds the whole queue back for ``seconds`` (BullMQ's ``rateLimit``): until then no
        claim returns a job, for any worker in any process, and idle workers wake when the
        wait ends. For a processor told by an API to back off: ``await
        job.queue.rate_limit(30)``, then ``raise RateLimitError()`` to give its job back
        without using an attempt. A later call replaces the wait; the windowed limit
        (`set_rate_limit`) still applies, so the later of the two ends wins."""
        await self._core.rate_limit(seconds, now)

    async def get_rate_limit_ttl(self, *, now: int | None = None) -> float:
        """Seconds until the rate limits let claims go on (BullMQ's ``getRateLimitTtl``): the
        rest of a `rate_limit` wait, or of the window of `set_rate_limit` once its claims are
        used up, whichever ends later; 0.0 when claims may go on now."""
        return await self._core.get_rate_limit_ttl(now)

    async def remove_rate_limit_key(self) -> None:
        """Ends the `rate_limit` wait and the current window of the windowed limit (BullMQ's
        ``removeRateLimitKey``), so claims go on at once: the next claim opens a new window.
        Idle workers wake. The windowed limit itself stays set."""
        await self._core.remove_rate_limit_key()

    async def remove_orphaned_jobs(self) -> int:
        """Removes the data of jobs that no state references, left by a crash or a bug
        (BullMQ's ``removeOrphanedJobs``), and returns how many. On Redis it scans the
        queue's job fields in batches, one short script call each, so a big queue does not
        hold the server; jobs in any state are untouched. In-memory and local queues write a
        job and its state in one transaction and cannot hold such data: they return 0."""
        return await self._core.remove_orphaned_jobs()

    async def set_max_active(self, max_active: int | None) -> None:
        """At most ``max_active`` jobs active at once across all workers (None: no limit)."""
        await self._core.set_max_active(max_active)

    async def get_max_active(self) -> int | None:
        return await self._core.get_max_active()

    async def is_maxed(self) -> bool:
        return await self._core.is_maxed()

    # ------------------------------------------------------------------ events

    async def read_events(
        self, start: int = 0, end: int | None = None, limit: int = 0
    ) -> list[QueueEvent]:
        """Events with ``start <= id <= end``, oldest first, at most ``limit`` (0: all)."""
        rows = await self._core.read_events(start, 2**63 - 1 if end is None else end, limit)
        return [_event(row) for row in rows]

    async def trim_events(self, max_len: int) -> int:
        """Keeps the newest ``max_len`` events; returns how many were dropped."""
        if max_len < 0:
            raise ConfigError(f"invalid max_len: {max_len} (must be >= 0)")
        return await self._core.trim_events(max_len)

    async def events(
        self,
        after: int | None = None,
        *,
        names: Iterable[str] | None = None,
        where: Callable[[QueueEvent], bool] | None = None,
    ) -> AsyncIterator[QueueEvent]:
        """Follows the event stream: the events after id ``after`` (default: from now on),
        then new ones as they come; only those whose ``event`` is in ``names`` (when given)
        and for which ``where(event)`` is true (when given: a predicate that raises ends
        the iteration with its exception)."""
        # (A single name is taken as one name, not as the characters of one.)
        wanted = None if names is None else frozenset([names] if isinstance(names, str) else names)
        last = await self._core.last_event_id() if after is None else after
        while True:
            rows = await self._core.read_events(last + 1, 2**63 - 1, 1000)
            if not rows:
                await self._core.wait_events(last)
                continue
            for row in rows:
                last = row[0]
                event = _event(row)
                if wanted is not None and event.event not in wanted:
                    continue
                if where is None or where(event):
                    yield event

    async def publish_event(
        self,
        event: str,
        data: dict[str, Any] | None = None,
        *,
        job_id: str | None = None,
        now: int | None = None,
    ) -> int:
        """Appends a custom event to the queue's event stream (BullMQ's
        ``QueueEventsProducer.publishEvent``) and returns its id: ``event`` is its name (1 to
        200 bytes, not one of the names lanemq writes, such as ``completed``), ``data`` a JSON
        object (a dict with string keys), ``job_id`` the job it is about, if any. Readers
        (`events`, `read_events`) see it as a `QueueEvent` with ``custom`` set. It is kept and
        trimmed as the queue's other events are (``max_events``)."""
        if not isinstance(event, str):
            raise TypeError(f"event must be a str, got {event!r}")
        if data is None:
            data = {}
        if not isinstance(data, dict) or not all(isinstance(key, str) for key in data):
            raise TypeError(f"data of event {event!r} must be a dict with str keys, got {data!r}")
        if job_id is not None and not isinstance(job_id, str):
            raise TypeError(f"job_id must be a str or None, got {job_id!r}")
        body = _json.dumps(data, f"data of event {event!r}")
        return await self._core.publish_event(event, job_id, body, now)

    async def list_queues(self) -> list[str]:
        """The names of the queues this queue's backend holds, sorted: those of its
        `MemoryGroup`; the queue files beside a local queue's file (``<name>.sqlite3`` in its
        directory; a queue given a file of its own lists itself); the queues under a Redis
        queue's prefix (a SCAN, a page at a time). A Redis or local queue is listed once it
        holds anything (a job, a setting)."""
        return await self._core.queue_names()

    # ------------------------------------------------------------- observation

    async def record_metrics(
        self, kind: str, counts: Iterable[tuple[int, int]], max_data_points: int
    ) -> None:
        """Adds per-minute counts to the ``kind`` metrics (``"completed"`` or ``"failed"``):
        ``counts`` are ``(minute_start_ms, n)`` pairs, each minute's start a multiple of 60,000
        ms since the epoch. What a `JobWorker` with ``metrics_max_data_points`` calls, at most
        once a second. The series keeps at most ``max_data_points`` minutes (1 to 100,000; the
        oldest go), a 0 for each minute without jobs between recorded ones (as BullMQ fills
        gaps). A count for a minute older than the newest adds into that minute while the
        series holds it, else only to the total. A bad kind, pair or maximum is refused
        (`ConfigError` naming it) and nothing is written."""
        await observe.record_metrics(self._core, kind, counts, max_data_points)

    async def get_metrics(self, kind: str, start: int = 0, end: int = -1) -> QueueMetrics:
        """The ``kind`` metrics (``"completed"`` or ``"failed"``, BullMQ's ``getMetrics``):
        the total, the per-minute counts from index ``start`` to ``end`` inclusive (0 is the
        newest minute; negative indexes count from the oldest end, as ``LRANGE``), how many
        minutes are kept and the newest minute's start. Any other kind is a `ConfigError`."""
        return await observe.get_metrics(self._core, kind, start, end)

    async def heartbeat_worker(
        self, info: WorkerInfo, ttl: float, *, now: int | None = None
    ) -> None:
        """Records that the worker ``info`` describes is alive at ``now`` (its
        ``last_heartbeat`` is then ``now``, whatever ``info`` says), for ``ttl`` seconds: a
        worker not heard from again within them is dropped by `get_workers`. Low level: every
        running `JobWorker` calls it (its ttl is 3 heartbeat intervals)."""
        await observe.heartbeat_worker(self._core, self.name, info, ttl, now)

    async def remove_worker(self, worker_id: str) -> bool:
        """Removes worker ``worker_id`` from the registry (a `JobWorker` does at close);
        whether it was there."""
        return await self._core.remove_worker(worker_id)

    async def get_workers(self, *, now: int | None = None) -> list[WorkerInfo]:
        """The workers of this queue heard from within their ttl at ``now`` (default: the
        wall clock), by ``started_at`` then ``id``; entries older than their ttl are deleted."""
        return await observe.get_workers(self._core, self.name, now)


class MemoryGroup:
    """In-memory queues that share one lock, so that a flow spanning them is one atomic step
    (like the queues of one Redis server). Queues built with the same group and name share one
    store (like two clients of one Redis); the first one's limits apply."""

    def __init__(self) -> None:
        self._core = MemoryGroupCore()
        self._queues: weakref.WeakValueDictionary[str, InMemoryJobQueue] = (
            weakref.WeakValueDictionary()
        )

    def queue(self, name: str = "default", **options: Any) -> InMemoryJobQueue:
        """The queue ``name`` of this group (`InMemoryJobQueue` keywords accepted)."""
        return InMemoryJobQueue(name, group=self, **options)

    @property
    def queue_names(self) -> list[str]:
        return self._core.queue_names()


class InMemoryJobQueue(JobQueue):
    """The job contract in process memory: for tests and embedded use. Nothing survives the
    process; use `LocalJobQueue` or `RedisJobQueue` for durability. Queues of one ``group``
    (`MemoryGroup`) can share flows and, under the same name, one store; without a group the
    queue has a private one."""

    _remote = False

    def __init__(
        self,
        name: str = "default",
        *,
        group: MemoryGroup | None = None,
        max_payload_bytes: int = 16 * 1024 * 1024,
        max_events: int = 10_000,
    ) -> None:
        _check_name_type(name)
        self.group = MemoryGroup() if group is None else group
        core = JobQueueCore.memory(name, self.group._core, max_payload_bytes, max_events)
        super().__init__(name, core)
        _register(self.group._queues, name, self)

    def sibling(self, name: str) -> JobQueue:
        if name == self.name:
            return self
        found = _open(self.group._queues, name)
        return found if found is not None else InMemoryJobQueue(name, group=self.group)


#: How a `LocalJobQueue` syncs its commits (its ``sync=``).
LocalSync: TypeAlias = Literal["full", "normal"]
# The values `sync=` takes (local: URLs check theirs against it too).
_LOCAL_SYNCS: tuple[str, ...] = get_args(LocalSync)


class LocalJobQueue(JobQueue):
    """The job contract in a local SQLite file: durable (an acknowledged change survives the
    process being killed), needing no server, and shared safely by several processes on one
    machine. ``path`` is a directory (the queue lives in ``<path>/<name>.sqlite3``) or a file
    ending in ``.db``, ``.sqlite`` or ``.sqlite3``. A file belongs to one queue: opening it
    under another name, or a file of an unknown or newer format, raises `ConfigError`; a
    corrupted file raises `StorageError`. Nothing is changed in either case. Flows may span
    the queues of one directory (each file applies its own part in one transaction; what one
    queue's change means for another is delivered right after it commits, exactly once).

    ``sync`` is how hard this object's commits go to disk: ``"full"`` (the default) syncs
    every commit, so an acknowledged change survives a power loss; ``"normal"`` leaves commits
    in the OS's cache until the next checkpoint: an acknowledged change still survives the
    process being killed, but an OS crash or power loss may lose the newest commits (whole
    ones; the file stays consistent). The steps of a flow across files are fully synced either
    way. Anything else raises `ConfigError` before a file is touched."""

    def __init__(
        self,
        name: str,
        path: str | os.PathLike[str] = "./lanemq-data",
        *,
        max_payload_bytes: int = 16 * 1024 * 1024,
        max_events: int = 10_000,
        sync: LocalSync = "full",
    ) -> None:
        _check_name_type(name)
        _checks.unicode_text(name, "queue name")  # (before it is part of a path)
        if not isinstance(sync, str) or sync not in _LOCAL_SYNCS:
            raise ConfigError(f"invalid sync: {sync!r} (must be 'full' or 'normal')")
        target = Path(path)
        if target.suffix not in (".db", ".sqlite", ".sqlite3"):
            # (the core refuses a name outside the rule before the file is touched)
            target = target / f"{name}.sqlite3"
        self.path = target
        core = JobQueueCore.local(str(target), name, max_payload_bytes, max_events, sync)
        super().__init__(name, core)
        #: ``"full"`` or ``"normal"``, as given.
        self.sync: LocalSync = sync
        self._settings = (max_payload_bytes, max_events)
        _register(_local_queues, str(target.resolve()), self)

    def __repr__(self) -> str:
        synced = "" if self.sync == "full" else f", sync={self.sync!r}"
        return f"LocalJobQueue({self.name!r}, path={str(self.path)!r}{synced})"

    def sibling(self, name: str) -> JobQueue:
        """The queue ``name`` whose file is beside this one's: one this process opened, or a
        new one."""
        if name == self.name:
            return self
        _checks.unicode_text(name, "queue name")  # (before it is part of a path)
        target = self.path.parent / f"{name}.sqlite3"
        found = _open(_local_queues, str(target.resolve()))
        if found is not None:
            return found
        max_payload_bytes, max_events = self._settings
        return LocalJobQueue(
            name,
            self.path.parent,
            max_payload_bytes=max_payload_bytes,
            max_events=max_events,
            sync=self.sync,
        )


#: The local queues this process opened, by file: a flow's nodes in other queues come back as
#: those objects.
_local_queues: weakref.WeakValueDictionary[str, LocalJobQueue] = weakref.WeakValueDictionary()


class RedisJobQueue(JobQueue):
    """The job contract on Redis or Valkey, for many processes on many hosts. Every state
    transition is one Lua script; all keys of a queue share the hash tag ``{name}`` under
    ``prefix``, so a queue lives on one Redis Cluster slot. A server whose maxmemory-policy may
    evict keys is refused (`ConfigError`) unless ``allow_eviction``; a user who may read it
    neither from ``INFO memory`` nor from ``CONFIG GET`` gets a warning on the ``lanemq``
    logger instead. Flows may span the queues of one server and prefix; on Redis Cluster those
    queues must share a slot, so give them a prefix with a hash tag (``prefix="{app}"``), as
    BullMQ's flows require.

    Making the object does no I/O (a module-level queue imports fine while Redis is down): the
    first call connects, or ``await queue.connect()``, or ``async with queue``. Connecting
    never blocks the event loop and gives up after ``connect_timeout`` seconds with
    `BackendConnectionError` (`BackendAuthenticationError` when the credentials are refused).
    Queue objects of one URL and options share their connections. ``url`` is
    ``redis://[[user]:password@]host[:port][/db]``, ``rediss://...`` (TLS: the certificate must
    chain to the system's authorities or to those in the PEM file ``tls_ca_file``) or
    ``unix:///path/to/redis.sock[?db=N&user=U&pass=P]`` or, for a Redis Cluster,
    ``redis+cluster://[[user]:password@]host:port[,host:port...]`` (seed nodes: the
    queue's calls go to the master of its hash tag's slot, README "Redis Cluster") or, behind
    Redis Sentinel, ``redis+sentinel://[[user]:password@]host:port[,host:port...]/<master>[/db]``
    (``?sentinel_password=`` for the sentinels' own; the calls go to the master they name and
    follow it through a failover, README "Redis Sentinel"); one that does not parse raises
    `ConfigError` at once. The password is kept in the Rust core only: ``url`` (and ``repr``)
    show it masked.

    ``min_replicas_ack=N`` makes every call that adds jobs (``add``, ``add_bulk``, flows) wait
    until N replicas of the server have its write (``WAIT``, at most ``replica_ack_timeout``
    seconds) and raise `StorageError` if fewer have: the jobs are added on the master either
    way, and a failover can still lose them (README "Redis Cluster"). Such a queue object
    makes all of its calls the ordinary way (not on the event loop's wire)."""

    def __init__(
        self,
        name: str,
        url: str = "redis://127.0.0.1:6379/0",
        *,
        prefix: str = "lanemq",
        max_payload_bytes: int = 16 * 1024 * 1024,
        max_events: int = 10_000,
        allow_eviction: bool = False,
        connect_timeout: float = 5.0,
        tls_ca_file: str | os.PathLike[str] | None = None,
        min_replicas_ack: int = 0,
        replica_ack_timeout: float = 1.0,
    ) -> None:
        _check_name_type(name)
        if not isinstance(url, str):
            raise ConfigError(f"invalid url: a {type(url).__name__} (must be a str)")
        scheme = foreign_scheme(url)
        if scheme is not None:
            raise BackendConnectionError(
                f"cannot connect to {redact_url(url)!r}: {scheme}:// is not a Redis server's "
                "URL (use redis://host:port, rediss://, unix://, redis+cluster:// or "
                "redis+sentinel://)"
            )
        problem = redis_url_problem(url)
        if problem:
            raise ConfigError(f"invalid Redis URL {redact_url(url)!r}: {problem}")
        if not (isinstance(connect_timeout, (int, float)) and 0 < connect_timeout < float("inf")):
            raise ConfigError(f"invalid connect_timeout: {connect_timeout!r} (must be > 0 seconds)")
        if isinstance(min_replicas_ack, bool) or not isinstance(min_replicas_ack, int):
            raise ConfigError(f"invalid min_replicas_ack: {min_replicas_ack!r} (must be an int)")
        if min_replicas_ack < 0:
            raise ConfigError(f"invalid min_replicas_ack: {min_replicas_ack!r} (must be >= 0)")
        # (bounded by connect_timeout when used: the connection WAIT holds answers by then)
        bound = connect_timeout if min_replicas_ack else float("inf")
        if not (
            isinstance(replica_ack_timeout, (int, float))
            and 0 < replica_ack_timeout <= bound
            and replica_ack_timeout != float("inf")
        ):
            raise ConfigError(
                f"invalid replica_ack_timeout: {replica_ack_timeout!r} (must be > 0 seconds and "
                f"at most connect_timeout, {connect_timeout!r})"
            )
        if tls_ca_file is not None and not os.path.isfile(tls_ca_file):
            raise ConfigError(f"invalid tls_ca_file: {os.fspath(tls_ca_file)!r} (no such file)")
        core = JobQueueCore.redis(
            url,
            name,
            prefix,
            max_payload_bytes,
            max_events,
            allow_eviction,
            max(1, round(connect_timeout * 1000)),
            None if tls_ca_file is None else os.fspath(tls_ca_file),
            min_replicas_ack,
            max(1, min(round(replica_ack_timeout * 1000), 2**32 - 1)),
        )
        self._attach(name, core, prefix)

    def _attach(self, name: str, core: JobQueueCore, prefix: str) -> None:
        super().__init__(name, core)
        #: The server's URL, password masked.
        self.url = core.masked_url()
        self.prefix = prefix
        # Equal for queue objects that share connections (no secret in it).
        self._server = core.server_id()
        _register(_redis_queues, (self._server, prefix, name), self)

    def __repr__(self) -> str:
        return f"RedisJobQueue({self.name!r}, url={self.url!r}, prefix={self.prefix!r})"

    async def connect(self) -> None:
        """Connects now (if this process has no connection to the server yet) and checks the
        server for this queue; a later call would do it anyway. Raises
        `BackendConnectionError` (`BackendAuthenticationError`) or `ConfigError`."""
        await self._core.connect()

    async def __aenter__(self: _R) -> _R:
        await self.connect()
        return self

    async def _wait_reachable(self, timeout: float) -> bool:
        return await self._core.wait_reachable(timeout)

    def sibling(self, name: str) -> JobQueue:
        """A queue of the same server, prefix and settings (sharing the connections): one
        this process made, or a new one."""
        if name == self.name:
            return self
        found = _open(_redis_queues, (self._server, self.prefix, name))
        if found is not None:
            return found
        _check_name_type(name)
        sibling = RedisJobQueue.__new__(RedisJobQueue)
        sibling._attach(name, self._core.redis_sibling(name), self.prefix)
        return sibling


def _check_name_type(name: object) -> None:
    """A queue name is a str; the core checks it against the queue-name rule (README, "Queue
    names"), the same way on every backend."""
    if not isinstance(name, str):
        raise ConfigError(f"invalid queue name: {name!r} (must be a str)")


#: The Redis queues this process made, by (server id, prefix, name): a flow's nodes in other
#: queues come back as those objects.
_redis_queues: weakref.WeakValueDictionary[tuple[int, str, str], RedisJobQueue] = (
    weakref.WeakValueDictionary()
)


__all__ = [
    "STATES",
    "InMemoryJobQueue",
    "JobQueue",
    "JobResult",
    "LocalJobQueue",
    "LocalSync",
    "MemoryGroup",
    "QueueEvent",
    "QueueStats",
    "RedisJobQueue",
]
