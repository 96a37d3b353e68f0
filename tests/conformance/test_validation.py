"""Validation of `add`, `add_bulk` and `update_priority` (scenarios 16 and 17): every refused
call writes nothing (no job, no event); custom ids are idempotent."""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from lanemq import (
    Backoff,
    ConfigError,
    Dedup,
    FlowJob,
    InMemoryJobQueue,
    JobOptions,
    JobQueue,
    LocalJobQueue,
    QueueEvent,
    RedisJobQueue,
)
from support import EPOCH_MS as T

MAX_PRIORITY = 2**21 - 1

Snapshot = tuple[dict[str, int], list[QueueEvent]]


async def _snapshot(queue: JobQueue) -> Snapshot:
    return await queue.get_job_counts(), await queue.read_events()


async def _assert_refused(
    queue: JobQueue,
    call: Callable[[], Awaitable[object]],
    error: type[Exception],
    *fragments: str,
) -> str:
    """Runs ``call``, expects ``error`` whose message holds every fragment, and checks that
    nothing was written (same counts, no new event). Returns the message."""
    before = await _snapshot(queue)
    with pytest.raises(error) as caught:
        await call()
    message = str(caught.value)
    for fragment in fragments:
        assert fragment in message, f"{fragment!r} not in {message!r}"
    assert await _snapshot(queue) == before, "a refused call wrote something"
    return message


async def _seed(queue: JobQueue) -> None:
    """A job and its events, so that "nothing written" is checked against a non-empty queue."""
    await queue.add("seed", {"n": 0}, now=T)


# ------------------------------------------------------------------------------ job ids


# (An empty id is no custom id, as in BullMQ: test_bullmq_rules.py.)
@pytest.mark.parametrize("bad_id", ["0", "0:x", "42", "-7"])
async def test_generated_looking_ids_refused(queue: JobQueue, bad_id: str) -> None:
    await _seed(queue)
    message = await _assert_refused(
        queue, lambda: queue.add("x", {"a": 1}, job_id=bad_id, now=T), ConfigError, "job_id"
    )
    assert repr(bad_id) in message or f'"{bad_id}"' in message, message
    # The same through a JobOptions object and a dict.
    await _assert_refused(
        queue, lambda: queue.add("x", None, JobOptions(job_id=bad_id), now=T), ValueError
    )
    await _assert_refused(queue, lambda: queue.add("x", None, {"job_id": bad_id}), ValueError)


@pytest.mark.parametrize("good_id", ["a", "welcome:ops", "1a", "x0", "00a", "-"])
async def test_custom_ids_that_are_not_integers_accepted(queue: JobQueue, good_id: str) -> None:
    job = await queue.add("x", None, job_id=good_id, now=T)
    assert job.id == good_id
    assert await queue.get_state(good_id) == "waiting"


# ----------------------------------------------------------------------------- priority


async def test_priority_bounds_on_add(queue: JobQueue) -> None:
    top = await queue.add("top", None, priority=MAX_PRIORITY, now=T)
    assert top.priority == MAX_PRIORITY
    assert await queue.get_counts_per_priority(MAX_PRIORITY) == {MAX_PRIORITY: 1}

    too_big = MAX_PRIORITY + 1
    await _assert_refused(
        queue,
        lambda: queue.add("x", None, priority=too_big, now=T),
        ConfigError,
        "priority",
        str(too_big),
    )
    await _assert_refused(
        queue, lambda: queue.add("x", None, {"priority": too_big}, now=T), ConfigError, "priority"
    )
    await _assert_refused(
        queue, lambda: queue.add("x", None, priority=-1, now=T), ConfigError, "priority"
    )


async def test_priority_bounds_on_update(queue: JobQueue) -> None:
    job = await queue.add("x", None, priority=5, now=T)
    await queue.update_priority(job.id, MAX_PRIORITY)
    stored = await queue.get_job(job.id)
    assert stored is not None and stored.priority == MAX_PRIORITY

    too_big = MAX_PRIORITY + 1
    await _assert_refused(
        queue,
        lambda: queue.update_priority(job.id, too_big),
        ConfigError,
        "priority",
        str(too_big),
    )
    await _assert_refused(queue, lambda: queue.update_priority(job.id, -1), ConfigError, "priority")
    stored = await queue.get_job(job.id)
    assert stored is not None and stored.priority == MAX_PRIORITY
    assert stored.state == "waiting"
    assert await queue.get_counts_per_priority(MAX_PRIORITY) == {MAX_PRIORITY: 1}


async def test_negative_priority_on_update_named_in_the_error(queue: JobQueue) -> None:
    job = await queue.add("x", None, priority=3, now=T)
    await _assert_refused(
        queue, lambda: queue.update_priority(job.id, -1), ConfigError, "priority", "-1"
    )
    assert (await queue.get_counts_per_priority(3)) == {3: 1}


@pytest.mark.parametrize("huge", [2**63, 2**64 + 1], ids=["2**63", "2**64+1"])
async def test_huge_priority_is_a_config_error(queue: JobQueue, huge: int) -> None:
    job = await queue.add("x", None, priority=3, now=T)
    await _assert_refused(
        queue, lambda: queue.add("y", None, priority=huge, now=T), ConfigError, "priority"
    )
    await _assert_refused(
        queue, lambda: queue.update_priority(job.id, huge), ConfigError, "priority"
    )
    stored = await queue.get_job(job.id)
    assert stored is not None and stored.priority == 3


# ---------------------------------------------------------------------- other options


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"delay": -1.0}, "delay"),
        ({"delay": math.nan}, "delay"),
        ({"attempts": 0}, "attempts"),
        ({"attempts": -3}, "attempts"),
        ({"timeout": 0}, "timeout"),
        ({"max_stalled_count": -1}, "max_stalled_count"),
    ],
    ids=["delay-negative", "delay-nan", "attempts-0", "attempts-negative", "timeout-0", "stalls"],
)
async def test_invalid_option_refused_and_writes_nothing(
    queue: JobQueue, options: dict[str, Any], field: str
) -> None:
    await _seed(queue)
    await _assert_refused(queue, lambda: queue.add("x", None, now=T, **options), ConfigError, field)
    await _assert_refused(queue, lambda: queue.add("x", None, options, now=T), ConfigError, field)


async def test_jitter_above_one_refused(queue: JobQueue) -> None:
    await _seed(queue)
    await _assert_refused(
        queue,
        lambda: queue.add(
            "x", None, attempts=3, backoff=Backoff.exponential(1.0, jitter=1.5), now=T
        ),
        ConfigError,
        "jitter",
        "1.5",
    )
    await _assert_refused(
        queue,
        lambda: queue.add(
            "x", None, attempts=3, backoff=Backoff.exponential(1.0, jitter=-0.1), now=T
        ),
        ConfigError,
        "jitter",
    )
    # The bounds themselves are fine.
    for jitter in (0.0, 1.0):
        await queue.add("ok", None, attempts=2, backoff=Backoff.exponential(1.0, jitter=jitter))


def _circular() -> list[object]:
    loop: list[object] = [1]
    loop.append({"again": loop})
    return loop


@pytest.mark.parametrize(
    ("data", "named"),
    [
        (object(), "object"),
        ({1, 2}, "set"),
        (math.nan, "nan"),
        ({"deep": [math.inf]}, "float"),
        (_circular(), "circular"),
    ],
    ids=["object", "set", "nan", "nested-inf", "circular"],
)
async def test_non_json_data_refused_with_type_error(
    queue: JobQueue, data: object, named: str
) -> None:
    await _seed(queue)
    message = await _assert_refused(
        queue, lambda: queue.add("bad-data", data, now=T), TypeError, "bad-data"
    )
    # The message names what was refused (the type, or the non-finite value).
    assert named in message.lower(), message


async def test_refused_data_leaves_later_payloads_encoded_alike(queue: JobQueue) -> None:
    # The encoder is kept between payloads (lanemq._json): a refusal deep inside a container
    # must leave nothing behind that changes how the next payloads are encoded.
    shared = {"k": [1, 2.5, "é", None, True]}
    for bad in ({"a": [{"b": object()}]}, _circular(), {"x": [shared, math.inf]}):
        with pytest.raises(TypeError):
            await queue.add("bad", bad, now=T)
        job = await queue.add("good", {"twice": [shared, shared]}, now=T)
        assert job.data == {"twice": [shared, shared]}
        fetched = await queue.get_job(job.id)
        assert fetched is not None and fetched.data == job.data


async def test_options_given_twice_refused(queue: JobQueue) -> None:
    await _seed(queue)
    await _assert_refused(
        queue,
        lambda: queue.add("x", None, JobOptions(priority=2), priority=3, now=T),
        TypeError,
    )


# ---------------------------------------------------------------------- payload size


async def test_payload_over_max_payload_bytes_refused() -> None:
    # Not on the `queue` fixture: the limit is a constructor option. Other backends will need
    # their own way to set `max_payload_bytes` (then this test can take the fixture).
    queue = InMemoryJobQueue("conformance-payload", max_payload_bytes=100)
    try:
        await _seed(queue)
        at_limit = await queue.add("fits", "x" * 98, now=T)  # '"' + 98 chars + '"' = 100 bytes
        assert at_limit.data == "x" * 98
        await _assert_refused(
            queue,
            lambda: queue.add("big", "x" * 99, now=T),
            ConfigError,
            "max_payload_bytes",
            "101",
        )
        # Bulk: one oversized item in the middle and nothing is added.
        await _assert_refused(
            queue,
            lambda: queue.add_bulk([("a", 1), ("big", "y" * 200), ("c", 3)], now=T),
            ConfigError,
            "max_payload_bytes",
        )
        # Multi-byte characters count as bytes (UTF-8), not as characters.
        await _assert_refused(
            queue, lambda: queue.add("wide", "é" * 60, now=T), ConfigError, "max_payload_bytes"
        )
        # update_data is held to the same limit and leaves the data as it was.
        await _assert_refused(
            queue,
            lambda: queue.update_data(at_limit.id, "z" * 150),
            ConfigError,
            "max_payload_bytes",
        )
        stored = await queue.get_job(at_limit.id)
        assert stored is not None and stored.data == "x" * 98
    finally:
        await queue.obliterate(force=True)


# -------------------------------------------------------------------------- add_bulk


async def test_add_bulk_is_atomic_on_bad_options(queue: JobQueue) -> None:
    await _seed(queue)
    items: list[tuple[Any, ...]] = [
        ("a", {"i": 1}),
        ("b", {"i": 2}, {"priority": 1}),
        ("bad", {"i": 3}, {"priority": MAX_PRIORITY + 1}),
        ("d", {"i": 4}),
    ]
    await _assert_refused(queue, lambda: queue.add_bulk(items, now=T), ConfigError, "priority")
    items[2] = ("bad", {"i": 3}, {"job_id": "42"})
    await _assert_refused(queue, lambda: queue.add_bulk(items, now=T), ConfigError, "job_id")
    items[2] = ("bad", {"i": 3}, JobOptions(attempts=2, backoff=Backoff.fixed(1.0)))
    items[3] = ("worse", object())
    await _assert_refused(queue, lambda: queue.add_bulk(items, now=T), TypeError, "worse")
    assert [job.name for job in await queue.list_jobs()] == ["seed"]


async def test_add_bulk_keeps_input_order(queue: JobQueue) -> None:
    names = [f"job-{i}" for i in range(10)]
    items: list[tuple[Any, ...]] = [(name, {"i": i}) for i, name in enumerate(names)]
    items[4] = ("job-4", {"i": 4}, {"job_id": "custom-four", "priority": 3})
    items[7] = ("job-7", {"i": 7}, JobOptions(delay=5.0))
    added = await queue.add_bulk(items, now=T)
    assert [job.name for job in added] == names
    assert [job.data for job in added] == [{"i": i} for i in range(10)]
    assert added[4].id == "custom-four" and added[4].priority == 3
    assert added[7].state == "delayed"
    assert len({job.id for job in added}) == 10
    for job in added:
        stored = await queue.get_job(job.id)
        assert stored is not None and stored.name == job.name
    assert await queue.get_job_counts("waiting", "delayed") == {"waiting": 9, "delayed": 1}


# ----------------------------------------------------------------- idempotent custom ids


async def test_same_custom_id_returns_first_job_unchanged(queue: JobQueue) -> None:
    first = await queue.add("welcome", {"v": 1}, job_id="welcome:ops", priority=4, now=T)
    events_before = await queue.read_events()

    again = await queue.add(
        "other-name", {"v": 2}, job_id="welcome:ops", priority=9, delay=30.0, now=T + 5
    )
    assert again.id == first.id == "welcome:ops"
    assert again.name == "welcome"
    assert again.data == {"v": 1}
    assert again.priority == 4
    assert again.created_at == T

    stored = await queue.get_job("welcome:ops")
    assert stored is not None
    assert (stored.name, stored.data, stored.priority, stored.state) == (
        "welcome",
        {"v": 1},
        4,
        "waiting",
    )
    assert await queue.get_job_counts("waiting", "delayed") == {"waiting": 1, "delayed": 0}

    new_events = (await queue.read_events())[len(events_before) :]
    assert [(ev.event, ev.job_id) for ev in new_events] == [("duplicated", "welcome:ops")]

    [claimed] = await queue.claim("w", now=T + 10)
    assert claimed.id == "welcome:ops" and claimed.data == {"v": 1}
    assert await queue.claim("w", now=T + 10) == []


async def test_same_custom_id_twice_in_one_bulk(queue: JobQueue) -> None:
    added = await queue.add_bulk(
        [("a", {"v": 1}, {"job_id": "dup"}), ("b", {"v": 2}, {"job_id": "dup"})], now=T
    )
    assert [job.id for job in added] == ["dup", "dup"]
    assert [job.data for job in added] == [{"v": 1}, {"v": 1}]
    assert await queue.get_job_counts("waiting") == {"waiting": 1}
    assert [ev.event for ev in await queue.read_events()] == ["added", "waiting", "duplicated"]


# ------------------------------------------- names, ids, numbers and text that are refused


@pytest.mark.parametrize(
    ("call", "fragments"),
    [
        (lambda q: q.add("x", None, job_id=5), ["job_id", "5", "must be a string"]),
        (lambda q: q.add("x", None, job_id="a\udc80"), ["job_id", "lone surrogate"]),
        (lambda q: q.add("a\udc80", None), ["job name", "lone surrogate"]),
        (lambda q: q.add("x", {"k": "v\udc80"}), ["data", "lone surrogate"]),
        (lambda q: q.add("x", None, priority=1.5), ["priority", "1.5", "integer"]),
        (lambda q: q.add("x", None, attempts=2.5), ["attempts", "2.5", "integer"]),
        (lambda q: q.add("", None), ["job name", "''", "non-empty"]),
        (lambda q: q.add("x", None, delay="5"), ["delay", "'5'", "number of seconds"]),
        (lambda q: q.add("x", None, timeout="1"), ["timeout", "'1'", "number of seconds"]),
        (lambda q: q.add("x", None, backoff=5), ["backoff", "5", "Backoff.fixed"]),
        (lambda q: q.add("x", None, priority=True), ["priority", "True", "not a bool"]),
        (lambda q: q.add_bulk([("ok", 1), ("", 2)]), ["name of job #1", "non-empty"]),
        (lambda q: q.add_bulk([("ok", 1), ("x", "\udc80")]), ["data of job #1", "surrogate"]),
        (lambda q: q.add_flow(FlowJob("p", None, children=[FlowJob("", 1)])), ["children[0]"]),
        (
            lambda q: q.upsert_scheduler("s", every=60, template=("", None)),
            ["job name of the template", "non-empty"],
        ),
        (
            lambda q: q.upsert_scheduler("s", cron="61 * * * *", template=("x", None)),
            ["minute field", "61", "0-59"],
        ),
        (
            lambda q: q.upsert_scheduler("s", cron="0 25 * * *", template=("x", None)),
            ["hour field", "25", "0-23"],
        ),
        (
            lambda q: q.upsert_scheduler("s", cron="*/0 * * * *", template=("x", None)),
            ["minute field", "step"],
        ),
    ],
)
async def test_bad_input_is_a_config_error_naming_the_field(
    queue: JobQueue, call: Callable[[JobQueue], Awaitable[object]], fragments: list[str]
) -> None:
    await _seed(queue)
    await _assert_refused(queue, lambda: call(queue), ConfigError, *fragments)


@pytest.mark.parametrize("lease", [0, 0.0, -1, math.nan])
async def test_a_lease_of_zero_or_less_is_refused(queue: JobQueue, lease: float) -> None:
    await _seed(queue)
    await _assert_refused(queue, lambda: queue.claim("w", lease, 1), ConfigError, "lease")
    [job] = await queue.claim("w", 30.0, 1)
    assert job.lock_token is not None
    await _assert_refused(
        queue, lambda: queue.renew(job.id, job.lock_token or "", lease), ConfigError, "lease"
    )
    await _assert_refused(
        queue, lambda: queue.renew_many([(job.id, job.lock_token or "")], lease), ConfigError
    )
    # The job is still held by its claim and can be completed.
    await queue.complete(job.id, job.lock_token, "done")
    assert await queue.get_state(job.id) == "completed"


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        ((math.inf,), "invalid grace: inf"),
        ((1e300,), "invalid grace: 1e300"),
        ((0.0, 2**70), "invalid limit"),
    ],
)
async def test_clean_with_an_impossible_grace_or_limit_is_refused(
    queue: JobQueue, args: tuple[float, ...], fragment: str
) -> None:
    # A ConfigError naming the value (was an OverflowError naming nothing); nothing goes.
    job = await queue.add("kept", None, now=T)
    await _assert_refused(queue, lambda: queue.clean(*args, state="waiting"), ConfigError, fragment)
    assert await queue.get_job(job.id) is not None


# ------------------------------------------------------ text that is not valid Unicode

LONE = "\udc80"  # a lone surrogate: a Python str, but not text UTF-8 (or any backend) can hold


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda q: q.add("x", None, dedup=Dedup(LONE)), "dedup id"),
        (lambda q: q.get_deduplication_job_id(LONE), "dedup_id"),
        (lambda q: q.remove_deduplication_key(LONE), "dedup_id"),
        (lambda q: q.upsert_scheduler(LONE, every=60, template=("x", None)), "scheduler key"),
        (lambda q: q.get_scheduler(LONE), "key"),
        (lambda q: q.remove_scheduler(LONE), "key"),
        (lambda q: q.get_job(LONE), "id"),
        (lambda q: q.add_log("1", f"line {LONE}"), "line"),
        (lambda q: q.claim(LONE), "worker_id"),
        (lambda q: q.add("x", None, {"parent_policy": LONE}), "parent_policy"),
        (lambda q: q.renew("1", LONE, 30.0), "token"),
    ],
)
async def test_a_lone_surrogate_is_a_config_error_naming_the_value(
    queue: JobQueue, call: Callable[[JobQueue], Awaitable[object]], field: str
) -> None:
    # Was a bare UnicodeEncodeError, naming neither the argument nor the value.
    await _seed(queue)
    await _assert_refused(
        queue, lambda: call(queue), ConfigError, f"invalid {field}:", "\\udc80", "surrogate"
    )


async def test_a_log_line_with_a_lone_surrogate_is_refused_from_the_job(queue: JobQueue) -> None:
    await _seed(queue)
    [job] = await queue.claim("w", 30.0, 1)
    await _assert_refused(queue, lambda: job.log(LONE), ConfigError, "\\udc80")
    assert await queue.get_logs(job.id) == ([], 0)


async def test_a_failure_whose_error_holds_a_lone_surrogate_is_recorded(queue: JobQueue) -> None:
    # An exception's message is not refused as input is: the job fails, the surrogate escaped
    # (it was a UnicodeEncodeError, and the job stayed active).
    await _seed(queue)
    [job] = await queue.claim("w", 30.0, 1)
    assert not await queue.fail(
        job.id, job.lock_token or "", ValueError(f"bad {LONE}"), None, False
    )
    failed = await queue.get_job(job.id)
    assert failed is not None and failed.state == "failed"
    assert failed.failed_reason == "ValueError: bad \\udc80"


# ------------------------------------------------------------------ deeply nested data


def _nested(depth: int) -> list[Any]:
    root: list[Any] = []
    leaf = root
    for _ in range(depth):
        child: list[Any] = []
        leaf.append(child)
        leaf = child
    return root


async def test_data_nested_past_the_recursion_limit_is_a_config_error(queue: JobQueue) -> None:
    # Was a bare RecursionError.
    await _seed(queue)
    deep = _nested(100_000)
    await _assert_refused(
        queue, lambda: queue.add("deep", deep, now=T), ConfigError, "data of job 'deep'", "nested"
    )
    await _assert_refused(
        queue, lambda: queue.add_bulk([("ok", 1), ("deep", deep)]), ConfigError, "job #1"
    )
    # The encoder is left as it was: the next payload is encoded as usual.
    job = await queue.add("after", {"a": [1, 2]}, now=T)
    assert (await queue.get_job(job.id) or job).data == {"a": [1, 2]}


# --------------------------------------------------------------- leases, rate limits


async def test_an_infinite_lease_is_a_config_error(queue: JobQueue) -> None:
    # Was an OverflowError from turning inf into milliseconds.
    await _seed(queue)
    await _assert_refused(
        queue, lambda: queue.claim("w", math.inf, 1), ConfigError, "invalid lease: inf"
    )
    [job] = await queue.claim("w", 30.0, 1)
    token = job.lock_token or ""
    await _assert_refused(queue, lambda: queue.renew(job.id, token, math.inf), ConfigError, "inf")
    await queue.complete(job.id, token, None)
    assert await queue.get_state(job.id) == "completed"


@pytest.mark.parametrize(("max_jobs", "shown"), [(math.nan, "nan"), (1.5, "1.5"), (True, "True")])
async def test_a_rate_limit_max_that_is_not_an_integer_is_a_config_error(
    queue: JobQueue, max_jobs: Any, shown: str
) -> None:
    # NaN was a TypeError "failed to extract field Positive.0", naming neither.
    await _assert_refused(
        queue, lambda: queue.set_rate_limit(max_jobs, 1), ConfigError, "invalid max", shown
    )
    assert await queue.get_rate_limit() is None


# ------------------------------------------------------------------------ queue names

RULE = "1-200 characters"
REFUSED_NAMES = [
    *("a/b", "x:y", "..", ".hidden", "a b", "a\tb", "*", "{tag}", "é", "a" * 201),
    *(LONE, "\ud800", ""),  # (lone surrogates: "\ud800" cannot even be part of a file's path)
]


def _why(name: str) -> str:
    """What the refusal of ``name`` says: the rule, or that it is not text at all."""
    return "surrogate" if name in (LONE, "\ud800") else RULE


@pytest.mark.parametrize("name", REFUSED_NAMES)
async def test_a_queue_name_outside_the_rule_is_refused_on_every_backend(
    queue: JobQueue, name: str
) -> None:
    async def open_and_add() -> None:
        # (a Redis queue's constructor does no I/O: its first call checks the name, since an
        # existing queue keeps an older name, test_redis_queue_names.py)
        await queue.sibling(name).add("x", now=T)

    with pytest.raises(ConfigError) as caught:
        await open_and_add()
    assert _why(name) in str(caught.value) and repr(name)[1:-1] in str(caught.value), caught.value
    assert name not in await queue.list_queues()


@pytest.mark.parametrize("name", REFUSED_NAMES[:-1])  # (a flow node's queue "" is its parent's)
async def test_a_flow_into_a_queue_outside_the_rule_writes_nothing(
    queue: JobQueue, name: str
) -> None:
    await _seed(queue)
    flow = FlowJob("root", children=[FlowJob("ok"), FlowJob("c", queue=name)])
    await _assert_refused(queue, lambda: queue.add_flow(flow, now=T), ConfigError, _why(name))
    assert name not in await queue.list_queues()


@pytest.mark.parametrize("suffix", ["a", "x..y", "A.b_c-9", "long"])
async def test_names_the_rule_allows_open_on_every_backend(
    queue: JobQueue, sibling: Callable[[str], JobQueue], suffix: str
) -> None:
    if suffix == "long":  # the longest name allowed, 200 characters
        suffix = "z" * (200 - len(queue.name) - 1)
    other = sibling(suffix)
    job = await other.add("x", now=T)
    assert await other.get_state(job.id) == "waiting"
    assert other.name in await queue.list_queues()


# -------------------------------------------------------------------- log line size


def _small(queue: JobQueue, max_payload_bytes: int) -> JobQueue:
    """Another queue of the queue's backend (same server, prefix or directory), with a small
    ``max_payload_bytes``: the fixture's limit is the default 16 MiB."""
    name = f"{queue.name}-small"
    if isinstance(queue, LocalJobQueue):
        return LocalJobQueue(name, queue.path.parent, max_payload_bytes=max_payload_bytes)
    if isinstance(queue, RedisJobQueue):
        return RedisJobQueue(
            name, queue.url, prefix=queue.prefix, max_payload_bytes=max_payload_bytes
        )
    return InMemoryJobQueue(name, max_payload_bytes=max_payload_bytes)


async def test_a_log_line_over_max_payload_bytes_is_refused(queue: JobQueue) -> None:
    # Data was capped and log lines were not: a 20 MB line went in. One limit for both.
    small = _small(queue, 100)
    try:
        await _seed(small)
        [job] = await small.claim("w", 30.0, 1)
        assert await job.log("x" * 100) == 1  # at the limit
        for line, size in [("y" * 101, "101"), ("é" * 51, "102")]:  # bytes, not characters
            message = await _assert_refused(
                small, lambda line=line: small.add_log(job.id, line), ConfigError, size, "100"
            )
            assert repr(job.id) in message or f'"{job.id}"' in message, message
        await _assert_refused(small, lambda: job.log("z" * 500), ConfigError, "max_payload_bytes")
        assert await small.get_logs(job.id) == (["x" * 100], 1)
    finally:
        await small.obliterate(force=True)
        await small.close()
