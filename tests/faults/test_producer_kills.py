"""SIGKILL of a producer right after ``add`` returned, on the local backend: every job whose
``add`` returned is in the file when it is opened again, and a killed ``add_bulk`` left all
of its jobs or none."""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from pathlib import Path

import lanemq
from support import Spawn

from .execlog import report

TRIALS = 5
SCRIPT = (Path(__file__).parent / "producer_child.py").read_text()
BULK = 50


async def _kill_producers(spawn: Spawn, url: str, log: Path, mode: str, rng: random.Random) -> None:
    for trial in range(TRIALS):
        producer = await spawn(SCRIPT, url, "produced", str(log), mode, str(trial))
        assert await producer.line() == "ready", producer.stderr()
        await asyncio.sleep(rng.uniform(0.05, 0.4))
        producer.kill()  # SIGKILL, by the PID this test started
        await producer.wait()


async def test_an_add_that_returned_survives_a_sigkill(
    tmp_path: Path, spawn: Spawn, rng: random.Random
) -> None:
    directory = tmp_path / "data"
    directory.mkdir()
    url = f"local://{directory}"
    log = tmp_path / "adds.log"
    await _kill_producers(spawn, url, log, "add", rng)
    acknowledged = [line.split()[1] for line in log.read_text().splitlines()]
    queue = lanemq.from_url(url, "produced")  # opened again, after every producer died
    found = {job.id for job in await queue.list_jobs("waiting")}
    lost = [job_id for job_id in acknowledged if job_id not in found]
    report(
        "producer SIGKILL after add (local)",
        trials=TRIALS,
        acknowledged=len(acknowledged),
        in_file=len(found),
        unacknowledged_in_file=len(found) - len(acknowledged),
        lost=len(lost),
    )
    assert len(acknowledged) > TRIALS, "the producers added next to nothing"
    assert lost == []
    # At most the add in flight at each kill may be there without its acknowledgement.
    assert len(found) - len(acknowledged) <= TRIALS
    await queue.close()


async def test_a_killed_add_bulk_is_all_or_nothing(
    tmp_path: Path, spawn: Spawn, rng: random.Random
) -> None:
    directory = tmp_path / "data"
    directory.mkdir()
    url = f"local://{directory}"
    log = tmp_path / "bulks.log"
    await _kill_producers(spawn, url, log, "bulk", rng)
    begun, returned = [], []
    for line in log.read_text().splitlines():
        kind, batch, *_ = line.split()
        (begun if kind == "begin" else returned).append(batch)
    queue = lanemq.from_url(url, "produced")
    sizes = Counter(job.data["batch"] for job in await queue.list_jobs("waiting"))
    in_flight = [batch for batch in begun if batch not in returned]
    partial = {batch: n for batch, n in sizes.items() if n != BULK}
    lost = [batch for batch in returned if sizes[batch] != BULK]
    report(
        "producer SIGKILL in add_bulk (local)",
        trials=TRIALS,
        bulks_acknowledged=len(returned),
        bulks_in_flight_at_kill=len(in_flight),
        in_flight_found_whole=sum(sizes[batch] == BULK for batch in in_flight),
        partial=len(partial),
        lost=len(lost),
    )
    assert len(returned) >= TRIALS, "the producers added next to nothing"
    assert partial == {}
    assert lost == []
    assert set(sizes) <= set(begun)
    await queue.close()
