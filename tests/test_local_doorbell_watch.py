"""The local backend's doorbell (a file watch that wakes waiters on other processes' commits)
is set up by a queue's first wait, not when the queue opens (issue 32): a process that only
adds has no watcher thread, so its own writes wake nothing, and a process that waits gets one
at its first wait. Counted in a process of its own, by its threads' names (Linux's /proc:
the `notify` crate's inotify thread is `notify-rs inotify loop`), since one watcher serves a
whole process and another test may have started it in this one."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = """
import asyncio, json, sys
from pathlib import Path
from lanemq import LocalJobQueue

def watching() -> bool:
    names = [(t / "comm").read_text() for t in Path("/proc/self/task").iterdir()]
    return any(name.startswith("notify-rs") for name in names)

async def main() -> None:
    queue = LocalJobQueue("bell", sys.argv[1], sync="normal")
    jobs = [await queue.add("job", i) for i in range(20)]
    seen = {"after_adds": watching(), "waiting": await queue.get_job_counts("waiting")}
    try:
        await asyncio.wait_for(jobs[0].wait(), 0.2)  # nothing runs it: the wait times out
    except TimeoutError:
        pass
    seen["after_a_wait"] = watching()
    await queue.close()
    print(json.dumps(seen))

asyncio.run(main())
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify and /proc: Linux")
def test_only_a_waiting_process_watches_the_file(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path / "bell.db")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen == {"after_adds": False, "waiting": {"waiting": 20}, "after_a_wait": True}
