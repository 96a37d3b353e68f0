"""A local queue's per-state counts (the `counts` table, which an add batch now writes once per
state at its end rather than once per job): right after an `add_bulk` that creates jobs in
several states and returns an existing one, the same read back from the file by a fresh
queue object, and the same as the jobs listed per state."""

from __future__ import annotations

from pathlib import Path

from lanemq import LocalJobQueue

T = 1_700_000_000_000
STATES = ("waiting", "delayed")


async def _listed(queue: LocalJobQueue) -> dict[str, int]:
    return {state: len(await queue.list_jobs(state)) for state in STATES}


async def test_an_add_bulk_counts_each_state_once_and_an_existing_job_not_at_all(
    tmp_path: Path,
) -> None:
    queue = LocalJobQueue("counted", tmp_path)
    await queue.add("first", 0, job_id="taken", now=T)
    added = await queue.add_bulk(
        [
            ("plain", 1),
            ("later", 2, {"delay": 60.0}),
            ("urgent", 3, {"priority": 5}),
            ("again", 4, {"job_id": "taken"}),  # the existing job comes back, not counted
            ("plain", 5),
            ("later", 6, {"delay": 60.0}),
        ],
        now=T,
    )
    assert added[3].name == "first" and added[3].data == 0
    expected = {"waiting": 4, "delayed": 2}  # "first" waits too
    assert await queue.get_job_counts(*STATES) == expected
    assert await _listed(queue) == expected
    await queue.close()

    reopened = LocalJobQueue("counted", tmp_path)
    assert await reopened.get_job_counts(*STATES) == expected
    await reopened.close()
