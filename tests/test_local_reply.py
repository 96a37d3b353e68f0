"""The local queue's answers reach the event loop from its writer thread directly: the async
runtime's thread takes no part in an awaited call (issue 28), where it used to wake once per
call only to relay the answer. Counted, not timed: the runtime thread's context switches
(Linux's /proc) over many awaited calls, in a process of its own so no other test's work
runs on that thread meanwhile."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

CALLS = 400

SCRIPT = """
import asyncio, sys
from pathlib import Path
from lanemq import LocalJobQueue

def runtime_switches() -> int:
    total = 0
    for task in Path("/proc/self/task").iterdir():
        if (task / "comm").read_text().strip() != "lanemq-runtime":
            continue
        for line in (task / "status").read_text().splitlines():
            if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                total += int(line.split()[1])
    return total

async def main() -> None:
    queue = LocalJobQueue("reply", sys.argv[1], sync="normal")
    first = await queue.add("job", -1)
    before = runtime_switches()
    ids = [(await queue.add("job", i)).id for i in range(int(sys.argv[2]))]
    switched = runtime_switches() - before
    found = [await queue.get_job(job_id) for job_id in ids]
    assert [job.data for job in found if job is not None] == list(range(len(ids)))
    assert (await queue.get_job_counts("waiting"))["waiting"] == len(ids) + 1, first
    await queue.close()
    print(switched)

asyncio.run(main())
"""


def test_awaited_local_calls_do_not_wake_the_runtime_thread(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path / "data"), str(CALLS)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    switched = int(done.stdout.strip())
    # One wake-up (at least one switch) per call when the runtime relayed each answer.
    assert switched < CALLS // 4, f"the runtime thread switched {switched} times"
