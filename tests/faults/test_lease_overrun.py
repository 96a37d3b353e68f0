"""A worker whose event loop blocks past its leases (time.sleep in an ``async def``
processor): it cannot renew, so stalled recovery in another worker takes the jobs back and
runs them; the blocked worker's late completions are refused (fencing) and reported to its
``error`` hooks as `LockLostWarning`s, as documented; each job completes once, with the
other worker's result. A job of the same claim whose lease ran out before the blocked loop
could start it is not started there (issue 27: it ran a second time in the same process)."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
from redis_support import MakeServer
from support import eventually

from .backends import Backend
from .conftest import StartWorker
from .execlog import Runs, report

JOBS = 2
LEASE = ("--lease", "1.0", "--renew-every", "0.3", "--stalled-interval", "0.3")


@pytest.mark.parametrize("kind", ["local", "redis"])
async def test_a_completion_after_a_blocked_loop_is_refused_and_the_job_runs_again(
    kind: str, tmp_path: Path, own_redis: MakeServer, start_worker: StartWorker
) -> None:
    backend = Backend(kind, tmp_path, own_redis)
    queue = backend.queue("overrun")
    log = tmp_path / "runs.log"
    extra = backend.worker_options()
    jobs = await queue.add_bulk([("block", {"n": n}) for n in range(JOBS)])
    ids = [job.id for job in jobs]
    # It claims both in one batch; the first blocks its loop 2.5 s, then the second does.
    blocked = await start_worker(
        backend.url, "overrun", log, "--concurrency", str(JOBS), "--block", "2.5", *LEASE, *extra
    )

    async def first_started() -> bool:
        return bool(Runs.read(log).starts)

    await eventually(first_started, "the blocking worker to start a job")
    rescuer = await start_worker(backend.url, "overrun", log, "--concurrency", "2", *LEASE, *extra)

    first = Runs.read(log).starts
    [first_id] = [job_id for job_id, pids in first.items() if blocked.pid in pids]

    async def settled() -> bool:
        kinds = Runs.read(log).error_kinds()
        counts = await queue.get_job_counts("completed")
        return kinds["LockLostWarning"] >= 1 and counts["completed"] == JOBS

    await eventually(settled, "the late completion to be refused", timeout=30)
    for child in (blocked, rescuer):
        child.proc.send_signal(signal.SIGTERM)
        assert (await child.line()).startswith("processed "), child.stderr()
        assert await child.wait() == 0, child.stderr()
    runs = Runs.read(log)
    lock_lost = sorted(job_id for job_id, pid, kind in runs.errors if kind == "LockLostWarning")
    counts = await queue.get_job_counts("completed", "failed", "waiting", "active")
    report(
        f"loop blocked past the lease ({kind})",
        trials=JOBS,
        added=JOBS,
        completed=counts["completed"],
        duplicates=runs.duplicates,
        late_completions_refused=len(lock_lost),
        lost=JOBS - counts["completed"],
    )
    assert counts == {"completed": JOBS, "failed": 0, "waiting": 0, "active": 0}
    # The job that blocked the loop finished late: refused, run again by the rescuer.
    assert first_id in lock_lost and set(lock_lost) <= set(ids)
    assert sorted(runs.starts[first_id]) == sorted([blocked.pid, rescuer.pid]), runs.starts
    assert blocked.pid in runs.finishes[first_id]
    assert all(pid == blocked.pid for job_id, pid, kind in runs.errors)
    for job_id in ids:
        # The other job of the blocked worker's claim never starts there once its lease ran
        # out (released unstarted, or refused if recovery took it first); if the blocked
        # worker claims it again later, that run is fenced as the first was. No process runs
        # a job twice, and the rescuer's result holds.
        starts = runs.starts[job_id]
        assert len(set(starts)) == len(starts), runs.starts
        assert rescuer.pid in starts, runs.starts
        assert (await queue.finished_result(job_id)).value["pid"] == rescuer.pid
    await queue.close()
