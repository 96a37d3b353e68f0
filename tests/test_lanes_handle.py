"""`CommandHandle` as an asyncio future: `asyncio.isfuture`, gather / wait / wait_for / shield on
handles, done callbacks, and cancellation through them."""

from __future__ import annotations

import asyncio
import contextvars
import sys
from typing import Any

import pytest
from lanemq import CommandHandle, LaneConfig, QueueManager
from support import wait_until

# --------------------------------------------------------------------------- helpers


def lanes(cap: int = 1) -> list[LaneConfig]:
    return [LaneConfig("a", 0, max_concurrency=cap), LaneConfig("b", 1, max_concurrency=cap)]


async def square(value: int) -> int:
    await asyncio.sleep(0)
    return value * value


async def fail(message: str) -> None:
    raise ValueError(message)


class Gate:
    """A command that waits until released and says whether it saw a cancellation."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.release = asyncio.Event()
        self.cancelled = False

    async def __call__(self, value: str = "released") -> str:
        self.started.set()
        try:
            await self.release.wait()
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        return value


# ----------------------------------------------------------------- the protocol


async def test_handle_is_a_future_and_ensure_future_keeps_it() -> None:
    async with QueueManager(lanes()) as m:
        handle = m.submit_nowait("a", square, 3)
        assert asyncio.isfuture(handle)
        assert asyncio.ensure_future(handle) is handle
        assert handle.get_loop() is asyncio.get_running_loop()
        assert await handle == 9
        assert handle.done()
        assert handle.exception() is None


async def test_gather_returns_results_in_order_without_wrapping() -> None:
    async with QueueManager(lanes(cap=3)) as m:
        handles = [m.submit_nowait("ab"[i % 2], square, i) for i in range(50)]
        before = len(asyncio.all_tasks())
        gathered = asyncio.gather(*handles)
        assert len(asyncio.all_tasks()) == before  # no task per handle
        assert await gathered == [i * i for i in range(50)]


async def test_gather_propagates_the_first_error() -> None:
    async with QueueManager(lanes()) as m:
        ok = m.submit_nowait("a", square, 2)
        bad = m.submit_nowait("b", fail, "boom")
        with pytest.raises(ValueError, match="boom"):
            await asyncio.gather(ok, bad)
        assert await ok == 4
        error = bad.exception()
        assert isinstance(error, ValueError)
        assert str(error) == "boom"


async def test_gather_return_exceptions_collects_errors_and_cancellations() -> None:
    m = QueueManager(lanes())
    gate = Gate()
    try:
        blocker = m.submit_nowait("a", gate)
        await asyncio.wait_for(gate.started.wait(), 5.0)
        withdrawn = m.submit_nowait("a", square, 1)  # waits behind the blocker
        bad = m.submit_nowait("b", fail, "bad")
        good = m.submit_nowait("b", square, 5)
        assert withdrawn.cancel() is True
        gate.release.set()
        results = await asyncio.gather(blocker, withdrawn, bad, good, return_exceptions=True)
        assert results[0] == "released"
        assert isinstance(results[1], asyncio.CancelledError)
        assert isinstance(results[2], ValueError) and str(results[2]) == "bad"
        assert results[3] == 25
        assert withdrawn.cancelled()
        with pytest.raises(asyncio.CancelledError):
            withdrawn.exception()  # as a cancelled future's does
    finally:
        gate.release.set()
        await m.close()


async def test_gather_fails_with_cancelled_error_for_a_cancelled_handle() -> None:
    m = QueueManager(lanes())
    gate = Gate()
    try:
        blocker = m.submit_nowait("a", gate)
        await asyncio.wait_for(gate.started.wait(), 5.0)
        pending = m.submit_nowait("a", square, 1)
        gathered = asyncio.gather(pending, m.submit_nowait("b", square, 2))
        pending.cancel()
        with pytest.raises(asyncio.CancelledError):
            await gathered
        gate.release.set()
        assert await blocker == "released"
    finally:
        gate.release.set()
        await m.close()


async def test_cancelling_a_gather_cancels_its_commands() -> None:
    m = QueueManager(lanes())
    gate = Gate()
    try:
        running = m.submit_nowait("a", gate)
        await asyncio.wait_for(gate.started.wait(), 5.0)
        pending = m.submit_nowait("a", square, 1)
        gathered = asyncio.gather(running, pending)
        await asyncio.sleep(0)
        gathered.cancel()
        with pytest.raises(asyncio.CancelledError):
            await gathered
        assert gate.cancelled
        assert running.cancelled() and pending.cancelled()
        await wait_until(lambda: m.in_flight == 0)
        assert m.metrics()["a"]["cancelled"] == 2
    finally:
        gate.release.set()
        await m.close()


# ---------------------------------------------------------------- done callbacks


async def test_done_callbacks_fire_with_the_handle_in_their_context() -> None:
    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")
    async with QueueManager(lanes()) as m:
        handle = m.submit_nowait("a", square, 4)
        seen: list[tuple[Any, str]] = []
        var.set("at registration")
        handle.add_done_callback(lambda h: seen.append((h, var.get())))
        other = contextvars.copy_context()
        other.run(var.set, "given context")
        handle.add_done_callback(lambda h: seen.append((h, var.get())), context=other)
        var.set("later")
        assert await handle == 16
        await asyncio.sleep(0)
        assert seen == [(handle, "at registration"), (handle, "given context")]

        # On a finished handle the callback is still called soon, not at once.
        late: list[Any] = []
        handle.add_done_callback(late.append)
        assert late == []
        await asyncio.sleep(0)
        assert late == [handle]


async def test_remove_done_callback() -> None:
    async with QueueManager(lanes()) as m:
        handle = m.submit_nowait("a", square, 2)
        calls: list[str] = []

        def first(_: CommandHandle[int]) -> None:
            calls.append("first")

        def second(_: CommandHandle[int]) -> None:
            calls.append("second")

        handle.add_done_callback(first)
        handle.add_done_callback(second)
        handle.add_done_callback(first)
        assert handle.remove_done_callback(first) == 2
        assert handle.remove_done_callback(first) == 0
        await handle
        await asyncio.sleep(0)
        assert calls == ["second"]


async def test_a_failing_done_callback_goes_to_the_loop_and_the_others_still_run() -> None:
    loop = asyncio.get_running_loop()
    reported: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda _loop, context: reported.append(context))
    try:
        async with QueueManager(lanes()) as m:
            first = m.submit_nowait("a", square, 1)
            second = m.submit_nowait("b", square, 2)
            calls: list[Any] = []

            def broken(_: CommandHandle[int]) -> None:
                raise RuntimeError("callback broke")

            first.add_done_callback(broken)
            first.add_done_callback(calls.append)
            second.add_done_callback(calls.append)
            await asyncio.gather(first, second)
            await asyncio.sleep(0)
            assert set(map(id, calls)) == {id(first), id(second)}
            assert len(reported) == 1
            assert isinstance(reported[0]["exception"], RuntimeError)
            assert reported[0]["future"] is first
    finally:
        loop.set_exception_handler(None)


# ------------------------------------------------------ wait, wait_for and shield


async def test_asyncio_wait_on_handles() -> None:
    m = QueueManager(lanes())
    gate = Gate()
    try:
        slow = m.submit_nowait("a", gate)
        quick = m.submit_nowait("b", square, 3)
        done, pending = await asyncio.wait({slow, quick}, return_when=asyncio.FIRST_COMPLETED)
        assert done == {quick} and pending == {slow}
        done, pending = await asyncio.wait({slow}, timeout=0.02)
        assert done == set() and pending == {slow}
        gate.release.set()
        done, pending = await asyncio.wait({slow, quick})
        assert done == {slow, quick} and not pending
        assert slow.result() == "released"
    finally:
        gate.release.set()
        await m.close()


async def test_wait_for_timeout_cancels_the_command() -> None:
    m = QueueManager(lanes())
    gate = Gate()
    try:
        handle = m.submit_nowait("a", gate)
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(handle, 0.05)
        assert gate.cancelled
        assert handle.cancelled()
        assert m.stats()["a"]["active"] == 0
        assert await asyncio.wait_for(m.submit_nowait("a", square, 6), 5.0) == 36
    finally:
        gate.release.set()
        await m.close()


async def test_shield_keeps_the_command_running() -> None:
    m = QueueManager(lanes())
    gate = Gate()
    try:
        handle = m.submit_nowait("a", gate)
        waiter = asyncio.create_task(asyncio.wait_for(asyncio.shield(handle), 0.05))
        with pytest.raises(asyncio.TimeoutError):
            await waiter
        assert not handle.done()
        assert not gate.cancelled
        gate.release.set()
        assert await handle == "released"
    finally:
        gate.release.set()
        await m.close()


# ----------------------------------------------------------- cancelling an await


async def test_cancelling_a_task_awaiting_a_handle_cancels_the_command() -> None:
    m = QueueManager(lanes())
    gate = Gate()
    try:
        handle = m.submit_nowait("a", gate)

        async def waits() -> str:
            return await handle

        task = asyncio.create_task(waits())
        await asyncio.wait_for(gate.started.wait(), 5.0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert gate.cancelled
        assert handle.cancelled()
        if sys.version_info >= (3, 11):
            assert task.cancelling() == 1
    finally:
        gate.release.set()
        await m.close()


async def test_cancelling_a_task_awaiting_submit_withdraws_a_pending_command() -> None:
    m = QueueManager(lanes())
    gate = Gate()
    ran = False

    async def never() -> None:
        nonlocal ran
        ran = True

    try:
        blocker = m.submit_nowait("a", gate)
        await asyncio.wait_for(gate.started.wait(), 5.0)
        task = asyncio.create_task(m.submit("a", never))
        await wait_until(lambda: m.in_flight == 2)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert m.in_flight == 1
        gate.release.set()
        assert await blocker == "released"
        await asyncio.sleep(0.02)
        assert not ran
    finally:
        gate.release.set()
        await m.close()


async def test_awaiting_the_same_handle_from_many_tasks() -> None:
    async with QueueManager(lanes()) as m:
        handle = m.submit_nowait("a", square, 7)
        results = await asyncio.gather(*(asyncio.create_task(_await(handle)) for _ in range(5)))
        assert results == [49] * 5
        assert await handle == 49  # awaiting a finished handle gives its result again


async def _await(handle: CommandHandle[int]) -> int:
    return await handle


async def test_result_types_and_errors_through_await() -> None:
    async with QueueManager(lanes()) as m:
        payload = {"k": [1, 2]}

        async def echo(value: Any) -> Any:
            return value

        assert await m.submit("a", echo, payload) is payload
        assert await m.submit_nowait("b", echo, None) is None
        with pytest.raises(ValueError, match="nope"):
            await m.submit("a", fail, "nope")
        handle = m.submit_nowait("b", fail, "again")
        with pytest.raises(ValueError, match="again"):
            await handle
        with pytest.raises(ValueError, match="again"):
            handle.result()


async def test_fan_out_from_idle_runs_commands_concurrently() -> None:
    """A burst submitted while every runner is parked starts as many commands as the caps
    allow (the woken runner wakes the next)."""
    async with QueueManager([LaneConfig("a", 0, max_concurrency=4)]) as m:
        await asyncio.sleep(0)  # the runners park
        running = 0
        peak = 0
        release = asyncio.Event()

        async def hold() -> None:
            nonlocal running, peak
            running += 1
            peak = max(peak, running)
            await release.wait()
            running -= 1

        handles = [m.submit_nowait("a", hold) for _ in range(4)]
        await wait_until(lambda: running == 4)
        release.set()
        await asyncio.gather(*handles)
        assert peak == 4
