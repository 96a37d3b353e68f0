"""A job's way through a queue: adding, claiming, completing, failing, renewing, releasing."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any

from .. import _checks, _json, _tracing
from .._core import Backoff, Dedup, JobOptions, KeepJobs
from .._results import result_json
from ..exceptions import ConfigError, JobNotFoundError
from ..flows import ParentRef, parent_ref
from ..job import DataT, Job
from ..schedulers import Repeat
from ._base import QueueBase, new_job
from ._common import (
    _OPTION_DEFAULTS,
    BulkItem,
    _bulk_texts,
    _encoded,
    _error_text,
    _given_options,
    _ms,
    _now,
    _options,
)
from .schedulers import add_repeating

if TYPE_CHECKING:
    from .._core import _FlowNodeArgs

FailItem = (
    tuple[str, str, str | BaseException, str | None, bool]
    | tuple[str, str, str | BaseException, str | None, bool, float | None]
)
"""What `JobQueue.fail_many` takes: ``(job_id, token, error, stacktrace, retry)``, with an
optional ``delay`` (seconds before the retry, in place of the job's backoff)."""


def _fail_item(item: FailItem) -> tuple[str, str, str, str | None, bool, int | None]:
    job_id, token, error, stacktrace, retry = item[:5]
    delay = item[5] if len(item) == 6 else None
    delay_ms = None if delay is None else _ms("delay", delay)
    return job_id, token, _error_text(error), stacktrace, retry, delay_ms


def _split_parent(
    options: JobOptions | dict[str, Any] | None, parent: ParentRef | dict[str, Any] | None
) -> tuple[JobOptions | dict[str, Any] | None, ParentRef | None]:
    """The options without a ``parent`` key, and the parent (from the keyword or the dict,
    not both), checked."""
    if isinstance(options, dict) and "parent" in options:
        if parent is not None:
            raise TypeError("pass parent either in options or as a keyword, not both")
        options = dict(options)
        parent = options.pop("parent")
        if parent is None:
            return options, None
    return options, None if parent is None else parent_ref(parent)


class QueueLifecycle(QueueBase):
    """The part of `JobQueue` that moves jobs: add, claim, finish."""

    async def add(
        self,
        name: str,
        # (data of a type of its own, a TypedDict, types the job; a plain dict or list,
        # empty ones too, gives Job[Any, Any], which needs no annotation)
        data: DataT | dict[str, Any] | list[Any] | None = None,
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
        group: str | None = None,
        max_started_attempts: int | None = None,
        stack_trace_limit: int | None = None,
        repeat: Repeat | dict[str, Any] | None = None,
        parent: ParentRef | dict[str, Any] | None = None,
        now: int | None = None,
    ) -> Job[DataT, Any]:
        """Adds a job. Options are keywords (typed, so a type checker catches a misspelt
        one), or ``options``: a `JobOptions` or a dict of its fields (which also takes the
        flow options, ``parent_policy`` and the like); a keyword that differs from its default
        cannot be combined with `JobOptions`. ``job_id``: a custom id; one that exists returns
        the existing job unchanged. ``priority``: 0 (none, first) or 1..2^21 - 1, lower first.
        ``lifo``: last in, first out within the priority. ``delay``: seconds before it may run.
        ``attempts`` and ``backoff`` (`Backoff`): retries. ``timeout``: seconds an attempt
        may run. ``remove_on_complete`` / ``remove_on_fail``: retention (True: remove; a
        count, or `KeepJobs`). ``max_stalled_count``: stalls allowed before it fails.
        ``dedup`` (`Dedup`): while its key is held, the add returns the job holding it.
        ``group``: the job's group (groups take turns at the claim and have limits of their
        own, `set_group_defaults`). ``max_started_attempts``: a job started this many times
        (stalls and releases included) fails for good rather than start again.
        ``stack_trace_limit``: how many stack traces of failed attempts the job keeps, the
        newest (BullMQ's ``stackTraceLimit``; 0: none; None: 10).

        ``repeat`` (`Repeat`, or a dict of its fields; BullMQ's legacy repeat option) makes a
        job scheduler instead (`upsert_scheduler`), whose occurrences are made of this name,
        data and options, and returns its pending occurrence, the first. Its key is BullMQ's
        repeat key (`Repeat.scheduler_key`: the name, ``job_id`` and the repeat), so adding
        the same repeat again adds nothing and returns the pending occurrence;
        `remove_scheduler` (with ``job.scheduler_key``) stops it. ``delay`` is refused with
        it: the schedule decides when occurrences run.

        ``parent`` (`ParentRef` or ``{"id": ..., "queue": ...}``, also a key of an ``options``
        dict; BullMQ's ``opts.parent``): the job becomes a child of that job (of this queue,
        or of ``queue`` of the same backend), which waits for it as a flow's parent does:
        waiting or delayed, it moves to ``waiting_children``; an active or finished parent is
        refused (`JobStateError`), a missing one too (`JobNotFoundError`), adding nothing.
        Not with ``repeat`` (a schedule's occurrences have no parent)."""
        keywords = (
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
            group,
            max_started_attempts,
            stack_trace_limit,
        )
        if options is None and parent is None and repeat is None and keywords == _OPTION_DEFAULTS:
            # The common add, no options at all: what the full path below does for it, with
            # none of its steps that have nothing to do (an awaited add is a few microseconds
            # of Python on top of its round trip; benches/history/18.md, "The add path").
            if type(name) is not str or not name:
                _checks.job_name(name)
            body = _json.dumps_data(data, name)
            try:
                record = await _tracing.producer.add(self, name, body, None, _now(now))
            except UnicodeEncodeError as error:
                raise _checks.not_unicode(error, [("job name", name), ("data", data)]) from None
            return new_job(self, record)
        options, parent = _split_parent(options, parent)
        given = _given_options(keywords)
        if repeat is not None or (isinstance(options, dict) and "repeat" in options):
            if parent is not None:
                raise ConfigError(
                    f"invalid parent: {parent!r} (a job added with repeat makes a scheduler, "
                    "whose occurrences have no parent)"
                )
            return await add_repeating(self, name, data, options, given, repeat, now)
        _checks.job_name(name)
        opts = _options(options, given)
        body = _json.dumps_data(data, name)
        if parent is not None:
            return (await self._add_under(parent, [(name, body, opts)], now))[0]
        try:
            # (the backend's call, traced while OpenTelemetry tracing is on)
            record = await _tracing.producer.add(self, name, body, opts, _now(now))
        except UnicodeEncodeError as error:
            raise _checks.not_unicode(error, [("job name", name), ("data", data)]) from None
        return new_job(self, record)

    async def add_bulk(self, jobs: Iterable[BulkItem], *, now: int | None = None) -> list[Job]:
        """Adds ``(name, data)`` or ``(name, data, options)`` tuples atomically: if any is
        invalid, none is added. ``options`` is `JobOptions` (checked by a type checker), a
        dict of its fields or None. The result keeps the input order. A dict may name a
        ``parent`` (as `add`'s): then every job of the call must name the same one (they are
        added as its children in one step, or none is)."""
        items: list[tuple[str, str, JobOptions | None]] = []
        parents: list[ParentRef | None] = []
        for index, item in enumerate(jobs):
            if len(item) == 2:
                name, data = item
                opts = None
                parents.append(None)
            elif len(item) == 3:
                name, data, raw = item
                raw, parent = _split_parent(raw, None)
                parents.append(parent)
                opts = _options(raw, {})
            else:
                raise TypeError(f"job #{index}: expected (name, data[, options]), got {item!r}")
            _checks.job_name(name, f"name of job #{index}")
            items.append((name, _json.dumps_data(data, name, index), opts))
        named = [p for p in parents if p is not None]
        if named:
            if len(named) < len(parents) or len(set(named)) > 1:
                raise ConfigError(
                    f"invalid parent: {parents!r} (the jobs of one add_bulk name one parent, "
                    "or none of them does)"
                )
            return await self._add_under(named[0], items, now)
        try:
            added = await _tracing.producer.add_bulk(self, items, _now(now))
        except UnicodeEncodeError as error:
            raise _checks.not_unicode(error, _bulk_texts(items)) from None
        return [new_job(self, record) for record in added]

    async def _add_under(
        self,
        parent: ParentRef,
        items: list[tuple[str, str, JobOptions | None]],
        now: int | None,
    ) -> list[Job]:
        """`add` / `add_bulk` with ``parent``: the jobs, all or none, become children of the
        parent, which waits for them (its queue's ``attach_children`` adds them, as a flow's
        children: the same checks and writes)."""
        holder = self if parent.queue is None else self.sibling(parent.queue)
        nodes: list[_FlowNodeArgs] = [
            (self.name, name, body, opts, []) for name, body, opts in items
        ]
        try:
            rows = await _tracing.producer.attach_children(holder, parent.id, nodes, _now(now))
        except JobNotFoundError:
            raise JobNotFoundError(
                f"parent job {parent.id!r} of queue {holder.name!r} not found"
            ) from None
        # (an existing job comes with its own children after it: the jobs added are the tops)
        return [new_job(self, record) for _, record, above in rows if above is None]

    def wait_and_claim(
        self, worker_id: str, lease: float, max_jobs: int, timeout: float | None
    ) -> tuple[Awaitable[list[Job]], Callable[[], None]]:
        """For an idle worker: waits for a job and claims up to ``max_jobs`` in one backend
        call; returns the awaitable of the claimed jobs and the function that interrupts the
        wait (see `_wait_and_claim`)."""
        return self._wait_and_claim(worker_id, lease, max_jobs, timeout)

    async def claim(
        self, worker_id: str, lease: float = 30.0, max_jobs: int = 1, *, now: int | None = None
    ) -> list[Job]:
        """Promotes due delayed jobs and returns up to ``max_jobs`` jobs, each active and
        locked for ``lease`` seconds under a fresh ``lock_token``. Respects pause, the rate
        limit and the global concurrency limit."""
        if max_jobs < 1:
            raise ConfigError(f"invalid max_jobs: {max_jobs} (must be >= 1)")
        records = await self._core.claim(worker_id, _checks.lease_ms(lease), max_jobs, _now(now))
        return [new_job(self, record) for record in records]

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
            return [new_job(self, record) for record in await pending]

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
        return refused, [new_job(self, record) for record in records]

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
        items: Iterable[FailItem],
        *,
        now: int | None = None,
    ) -> list[tuple[str, bool, str | None]]:
        """Fails ``(job_id, token, error, stacktrace, retry)`` items in one step (an item may
        add a sixth value, ``delay``: seconds before its retry in place of the backoff, or
        None); returns ``(job_id, retried, error)`` per item (error set if it could not be
        failed)."""
        encoded = [_fail_item(item) for item in items]
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
        no stall counted, as if never started (no ``processed_on``, the progress reset). A
        lease that ran out still gives back while ``token`` holds the job (stalled recovery
        did not take it)."""
        await self._core.release(job_id, token, now)

    async def recover_stalled(self, *, now: int | None = None) -> tuple[list[str], list[str]]:
        """Active jobs whose lease expired go back to waiting (stalled count + 1), or fail
        past ``max_stalled_count``. Returns (recovered ids, failed ids)."""
        return await self._core.recover_stalled(now)

    async def _holds_lock(self, job_id: str, token: str) -> bool:
        return await self._core.holds_lock(job_id, token)
