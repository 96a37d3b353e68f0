"""Lanes shared by worker processes (`QueueManager(backend=...)`), on local and on Redis: caps,
strict priority and rate limits hold across processes, counted from the commands' own start
and end times; a process killed mid-command gives its slot back within its lease and the
command runs once more at most."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from lanemq import CommandFailedError
from lanes_shared_support import Workers, most_at_once, runs, shared_backend
from support import CHILD_WAIT, Spawn, wait_until

__all__ = ["shared_backend"]  # the fixture, used by name

pytestmark = pytest.mark.timeout(120)

PROMPT = [["prompt", 5, 0, 2, None]]


async def test_three_processes_never_run_more_than_the_lane_cap(
    spawn: Spawn, shared_backend: str, tmp_path: Path
) -> None:
    workers = Workers(spawn, shared_backend, tmp_path)
    await workers.start(3, PROMPT)
    async with workers.submitter(PROMPT) as submitter:
        handles = [
            await submitter.submit_named("prompt", "work", {"label": f"p{i}", "seconds": 0.15})
            for i in range(10)
        ]
        results = await asyncio.wait_for(asyncio.gather(*handles), CHILD_WAIT * 3)
    found = runs(workers.log)
    assert sorted(r["label"] for r in results) == sorted(f"p{i}" for i in range(10))
    assert len(found) == 10  # each ran once
    assert most_at_once(found) == 2  # the cap held across the three, and was used
    # Free slots went to waiting processes in turn: the work spread over at least two.
    assert len({run.pid for run in found}) >= 2


async def test_a_control_command_starts_before_waiting_prompts_under_a_global_cap(
    spawn: Spawn, shared_backend: str, tmp_path: Path
) -> None:
    lanes = [["control", 1, 0, 1, None], ["prompt", 5, 0, 2, None]]
    workers = Workers(spawn, shared_backend, tmp_path)
    await workers.start(2, lanes, cap=1)
    async with workers.submitter(lanes, cap=1) as submitter:
        prompts = [
            await submitter.submit_named("prompt", "work", {"label": f"p{i}", "seconds": 0.2})
            for i in range(6)
        ]
        await wait_until(lambda: len(runs(workers.log)) >= 1, "the first prompt to start")
        control = await submitter.submit_named("control", "work", {"label": "c", "seconds": 0})
        await asyncio.wait_for(asyncio.gather(control, *prompts), CHILD_WAIT * 3)
    order = [run.label for run in runs(workers.log)]
    # Only the prompt already running when it was submitted started before it.
    assert order.index("c") == 1, order
    assert most_at_once(runs(workers.log)) == 1


async def test_a_rate_limit_holds_across_processes(
    spawn: Spawn, shared_backend: str, tmp_path: Path
) -> None:
    lanes = [["api", 3, 0, 10, 5]]  # 5 starts per second, bursting to 5
    workers = Workers(spawn, shared_backend, tmp_path)
    await workers.start(3, lanes)
    async with workers.submitter(lanes) as submitter:
        handles = [
            await submitter.submit_named("api", "work", {"label": f"a{i}"}) for i in range(12)
        ]
        await asyncio.wait_for(asyncio.gather(*handles), CHILD_WAIT * 3)
    starts = [run.start for run in runs(workers.log)]
    assert len(starts) == 12
    first = starts[0]
    # A bucket of 5 refilled at 5/s: by t seconds after the first start, at most 5 + 5t
    # starts. Tolerance: one start (clock reads in separate processes, a token's edge).
    for index, start in enumerate(starts):
        assert index + 1 <= 5 + 5 * (start - first) + 1, (index, start - first)
    assert starts[-1] - first >= (12 - 5) / 5 - 0.2  # the limit was really applied


async def test_a_killed_process_gives_its_slot_back_and_its_command_runs_once_more(
    spawn: Spawn, shared_backend: str, tmp_path: Path
) -> None:
    lanes = [["prompt", 5, 0, 1, None]]
    workers = Workers(spawn, shared_backend, tmp_path)
    children = await workers.start(3, lanes, lease=1.0)
    by_pid = {child.pid: child for child in children}
    async with workers.submitter(lanes, lease=1.0) as submitter:
        victim = await submitter.submit_named("prompt", "work", {"label": "v", "seconds": 30})
        await wait_until(lambda: len(runs(workers.log)) == 1, "the command to start")
        by_pid.pop(runs(workers.log)[0].pid).kill()
        # Within the lease, another process runs it again (once more: the second run is the
        # last, so killing its process too fails it for good).
        await wait_until(lambda: len(runs(workers.log)) == 2, "the second run", CHILD_WAIT)
        second = runs(workers.log)[1]
        assert second.pid in by_pid
        by_pid.pop(second.pid).kill()
        with pytest.raises(CommandFailedError) as failed:
            await asyncio.wait_for(victim, CHILD_WAIT)
        assert failed.value.error_type == "LeaseExpiredError"
        # The slot came back: the survivor runs the next command.
        after = await submitter.submit_named("prompt", "work", {"label": "after"})
        result = await asyncio.wait_for(after, CHILD_WAIT)
        assert result["pid"] in by_pid
    assert [run.label for run in runs(workers.log)] == ["v", "v", "after"]
