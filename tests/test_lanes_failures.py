"""Failure handling of `QueueManager`: timeouts, retries, dead letters, cancellation, shutdown
and drain, and asyncio behaviour inside commands."""

from __future__ import annotations

import asyncio
import sys
import time

import pytest
from lanemq import (
    CommandTimeoutError,
    DrainTimeoutError,
    LaneConfig,
    QueueManager,
    RetryPolicy,
    ShutdownError,
    UnrecoverableError,
)
from support import collect, wait_until

# --------------------------------------------------------------------------- helpers


def one_lane(timeout: float | None = None, retry: RetryPolicy | None = None) -> LaneConfig:
    """A lane "a" that runs one command at a time."""
    return LaneConfig("a", 0, max_concurrency=1, timeout=timeout, retry=retry)


async def answer(value: str) -> str:
    return value


# -------------------------------------------------------------------------- timeout


async def test_lane_timeout_raises_and_frees_slot() -> None:
    m = QueueManager([one_lane(timeout=0.05)])
    sub = m.events("queue.command.timeout")
    finished = False

    async def slow() -> None:
        nonlocal finished
        await asyncio.sleep(0.2)
        finished = True

    try:
        slow_handle = m.submit_nowait("a", slow)
        next_handle = m.submit_nowait("a", answer, "next")
        with pytest.raises(CommandTimeoutError) as info:
            await slow_handle
        assert isinstance(info.value, TimeoutError)
        assert await asyncio.wait_for(next_handle, 5.0) == "next"
        assert not finished, "the timed-out command must have been interrupted"
        events = await collect(sub)
        assert [e.payload["command_id"] for e in events] == [slow_handle.id]
        assert events[0].payload["lane_id"] == "a"
        assert events[0].payload["attempt"] == 1
        assert m.metrics()["a"]["timed_out"] == 1
        assert m.in_flight == 0
    finally:
        await m.close()


# ---------------------------------------------------------------------------- retry


async def test_retry_then_success_emits_retry_events() -> None:
    m = QueueManager([one_lane(retry=RetryPolicy.fixed(2, 0.01))])
    sub = m.events("queue.command.retry")
    calls = 0

    async def flaky() -> str:
        nonlocal calls
        calls += 1
        if calls <= 2:
            raise RuntimeError(f"failure {calls}")
        return "ok"

    try:
        handle = m.submit_nowait("a", flaky)
        assert await asyncio.wait_for(handle, 5.0) == "ok"
        assert calls == 3
        events = await collect(sub)
        assert [e.payload["attempt"] for e in events] == [1, 2]
        assert all(e.payload["command_id"] == handle.id for e in events)
        assert events[0].payload["error"] == "RuntimeError: failure 1"
        assert events[1].payload["error"] == "RuntimeError: failure 2"
        assert all(e.payload["delay"] == pytest.approx(0.01) for e in events)
        assert m.dead_letters() == []
        assert m.metrics()["a"]["retried"] == 2
    finally:
        await m.close()


async def test_retries_exhausted_dead_letters_and_raises_original_error() -> None:
    m = QueueManager([one_lane(retry=RetryPolicy.fixed(1, 0.01))])
    sub = m.events("queue.command.*")
    raised: list[ValueError] = []

    async def always_fails() -> None:
        error = ValueError(f"boom {len(raised) + 1}")
        raised.append(error)
        raise error

    try:
        handle = m.submit_nowait("a", always_fails)
        with pytest.raises(ValueError) as info:
            await asyncio.wait_for(handle, 5.0)
        assert len(raised) == 2
        assert info.value is raised[-1]
        letters = m.dead_letters()
        assert len(letters) == 1
        letter = letters[0]
        assert letter.command_id == handle.id
        assert letter.lane_id == "a"
        assert letter.attempts == 2
        assert letter.error == "ValueError: boom 2"
        assert "always_fails" in letter.command_type
        assert abs(letter.failed_at / 1000 - time.time()) < 60
        keys = [e.key for e in await collect(sub)]
        assert keys.count("queue.command.dead_lettered") == 1
        assert keys.count("queue.command.failed") == 1
        assert keys.index("queue.command.dead_lettered") < keys.index("queue.command.failed")
        assert keys.count("queue.command.retry") == 1
    finally:
        await m.close()


async def test_dead_letter_queue_keeps_newest() -> None:
    m = QueueManager([one_lane()], dead_letter_capacity=2)

    async def fails(i: int) -> None:
        raise RuntimeError(f"fail {i}")

    try:
        handles = [m.submit_nowait("a", fails, i) for i in range(3)]
        for h in handles:
            with pytest.raises(RuntimeError):
                await h
        letters = m.dead_letters()
        assert [letter.command_id for letter in letters] == [handles[1].id, handles[2].id]
        assert [letter.error for letter in letters] == [
            "RuntimeError: fail 1",
            "RuntimeError: fail 2",
        ]
        assert m.metrics()["a"]["dead_lettered"] == 3
    finally:
        await m.close()


async def test_exponential_retry_delays() -> None:
    policy = RetryPolicy.exponential(3)
    assert policy.max_retries == 3
    assert policy.delay_for(1) == pytest.approx(0.1)
    assert policy.delay_for(2) == pytest.approx(0.2)
    assert policy.delay_for(3) == pytest.approx(0.4)
    assert policy.delay_for(20) == pytest.approx(30.0)

    m = QueueManager([one_lane(retry=RetryPolicy.exponential(2))])
    starts: list[float] = []

    async def always_fails() -> None:
        starts.append(time.monotonic())
        raise RuntimeError("nope")

    try:
        with pytest.raises(RuntimeError):
            await asyncio.wait_for(m.submit("a", always_fails), 10.0)
        assert len(starts) == 3
        first_gap = starts[1] - starts[0]
        second_gap = starts[2] - starts[1]
        assert first_gap >= 0.09, first_gap
        assert second_gap >= 0.18, second_gap
        assert m.dead_letters()[0].attempts == 3
    finally:
        await m.close()


async def test_drain_waits_for_command_waiting_to_retry() -> None:
    m = QueueManager([one_lane(retry=RetryPolicy.fixed(1, 0.3))])
    attempts = 0

    async def fails_once() -> str:
        nonlocal attempts
        attempts += 1
        if attempts == 1:
            raise RuntimeError("first attempt fails")
        return "second attempt"

    try:
        handle = m.submit_nowait("a", fails_once)
        await wait_until(lambda: m.stats()["a"]["retrying"] == 1)
        assert attempts == 1
        assert m.in_flight == 1
        await asyncio.wait_for(m.drain(), 10.0)
        assert attempts == 2
        assert handle.done()
        assert handle.result() == "second attempt"
        assert m.in_flight == 0
    finally:
        await m.close()


async def test_unrecoverable_error_is_not_retried() -> None:
    m = QueueManager([one_lane(retry=RetryPolicy.fixed(3, 0.01))])
    calls = 0

    async def fatal() -> None:
        nonlocal calls
        calls += 1
        raise UnrecoverableError("give up")

    try:
        with pytest.raises(UnrecoverableError):
            await asyncio.wait_for(m.submit("a", fatal), 5.0)
        await asyncio.sleep(0.05)
        assert calls == 1
        letters = m.dead_letters()
        assert len(letters) == 1
        assert letters[0].attempts == 1
        assert letters[0].error == "UnrecoverableError: give up"
        assert m.metrics()["a"]["retried"] == 0
    finally:
        await m.close()


# ------------------------------------------------------------------------ cancelling


async def test_cancel_pending_command() -> None:
    m = QueueManager([one_lane()])
    release = asyncio.Event()
    ran = False

    async def hold() -> str:
        await release.wait()
        return "held"

    async def never() -> None:
        nonlocal ran
        ran = True

    try:
        blocker = m.submit_nowait("a", hold)
        await wait_until(blocker.running)
        pending = m.submit_nowait("a", never)
        assert m.in_flight == 2
        assert pending.cancel() is True
        assert m.in_flight == 1
        assert m.stats()["a"]["pending"] == 0
        with pytest.raises(asyncio.CancelledError):
            await pending
        assert pending.cancelled()
        release.set()
        assert await blocker == "held"
        await asyncio.sleep(0.02)
        assert not ran
        assert m.in_flight == 0
        assert m.metrics()["a"]["cancelled"] == 1
    finally:
        release.set()
        await m.close()


async def test_cancel_running_command_frees_slot() -> None:
    m = QueueManager([one_lane()])
    started = asyncio.Event()
    saw_cancel = False

    async def long() -> None:
        nonlocal saw_cancel
        started.set()
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            saw_cancel = True
            raise

    try:
        running = m.submit_nowait("a", long)
        follower = m.submit_nowait("a", answer, "follower ran")
        await asyncio.wait_for(started.wait(), 5.0)
        assert running.running()
        assert running.cancel() is True
        with pytest.raises(asyncio.CancelledError):
            await running
        assert saw_cancel
        assert running.cancelled()
        assert running.done()
        assert await asyncio.wait_for(follower, 5.0) == "follower ran"
        assert m.in_flight == 0
        assert m.stats()["a"]["active"] == 0
    finally:
        await m.close()


async def test_cancelling_awaiting_task_cancels_command() -> None:
    m = QueueManager([one_lane()])
    started = asyncio.Event()
    saw_cancel = False

    async def long() -> None:
        nonlocal saw_cancel
        started.set()
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            saw_cancel = True
            raise

    try:
        task = asyncio.create_task(m.submit("a", long))
        await asyncio.wait_for(started.wait(), 5.0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await wait_until(lambda: m.in_flight == 0)
        assert saw_cancel
        assert m.stats()["a"]["active"] == 0
        assert await asyncio.wait_for(m.submit("a", answer, "after"), 5.0) == "after"
    finally:
        await m.close()


async def test_cancelling_awaiting_task_withdraws_pending_command() -> None:
    m = QueueManager([one_lane()])
    release = asyncio.Event()
    ran = False

    async def hold() -> None:
        await release.wait()

    async def never() -> None:
        nonlocal ran
        ran = True

    try:
        blocker = m.submit_nowait("a", hold)
        await wait_until(blocker.running)
        task = asyncio.create_task(m.submit("a", never))
        await wait_until(lambda: m.in_flight == 2)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert m.in_flight == 1
        release.set()
        await blocker
        await asyncio.sleep(0.02)
        assert not ran
    finally:
        release.set()
        await m.close()


# -------------------------------------------------------------- shutdown and drain


async def test_shutdown_rejects_new_work_and_drain_finishes_in_flight() -> None:
    m = QueueManager([one_lane()])
    sub = m.events("queue.shutdown.started")
    started = asyncio.Event()

    async def slow(value: str) -> str:
        started.set()
        await asyncio.sleep(0.15)
        return value

    try:
        first = m.submit_nowait("a", slow, "first")
        second = m.submit_nowait("a", slow, "second")
        await asyncio.wait_for(started.wait(), 5.0)
        await m.shutdown()
        with pytest.raises(ShutdownError):
            m.submit_nowait("a", answer, "late")
        with pytest.raises(ShutdownError):
            await m.submit("a", answer, "late")
        await asyncio.wait_for(m.drain(), 10.0)
        assert first.result() == "first"
        assert second.result() == "second"
        assert m.in_flight == 0
        events = await collect(sub)
        assert [e.key for e in events] == ["queue.shutdown.started"]
        assert events[0].payload["in_flight"] == 2
    finally:
        await m.close()


async def test_drain_timeout_then_close_cancels() -> None:
    m = QueueManager([one_lane()])
    started = asyncio.Event()
    finished = False

    async def long() -> None:
        nonlocal finished
        started.set()
        await asyncio.sleep(2.0)
        finished = True

    try:
        handle = m.submit_nowait("a", long)
        await asyncio.wait_for(started.wait(), 5.0)
        with pytest.raises(DrainTimeoutError) as info:
            await m.drain(0.05)
        assert isinstance(info.value, TimeoutError)
        assert handle.running()
        t0 = time.monotonic()
        await asyncio.wait_for(m.close(), 5.0)
        assert time.monotonic() - t0 < 1.5, "close() must not wait for the 2 s command"
        assert not finished
        assert handle.done()
        assert handle.cancelled()
        with pytest.raises(asyncio.CancelledError):
            await handle
    finally:
        await m.close()


async def test_async_with_drains_before_exit() -> None:
    async def slow(i: int) -> int:
        await asyncio.sleep(0.02 * (i % 3))
        return i * i

    async with QueueManager([LaneConfig("a", 0, max_concurrency=2)]) as m:
        handles = [m.submit_nowait("a", slow, i) for i in range(8)]
    assert all(h.done() for h in handles)
    assert [h.result() for h in handles] == [i * i for i in range(8)]
    with pytest.raises(ShutdownError):
        m.submit_nowait("a", slow, 0)


# ------------------------------------------------------------ asyncio inside commands


async def test_asyncio_timeout_and_current_task_inside_command() -> None:
    if sys.version_info < (3, 11):
        pytest.skip("asyncio.timeout() needs Python 3.11")
    m = QueueManager([one_lane(timeout=5.0)])

    async def uses_asyncio() -> str:
        task = asyncio.current_task()
        assert task is not None
        try:
            async with asyncio.timeout(0.05):
                await asyncio.sleep(5)
        except TimeoutError:
            pass
        else:
            raise AssertionError("asyncio.timeout() did not fire")
        assert asyncio.current_task() is task
        await asyncio.sleep(0.01)  # the task is not left cancelled
        return "recovered"

    try:
        assert await asyncio.wait_for(m.submit("a", uses_asyncio), 5.0) == "recovered"
        # The runner is still healthy for the next command.
        assert await asyncio.wait_for(m.submit("a", answer, "next"), 5.0) == "next"
        assert m.metrics()["a"]["timed_out"] == 0
        assert m.dead_letters() == []
    finally:
        await m.close()
