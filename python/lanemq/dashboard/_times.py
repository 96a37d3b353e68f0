"""How long a job waited and ran, as Flower and bull-board show it: the wait from the moment
the job became runnable to its start, the run from its start to its finish (or, while it is
active, to now), both in human units."""

from __future__ import annotations

from dataclasses import dataclass

from ..job import Job

#: The states whose start (and finish) belong to the job's current attempt: a waiting or
#: delayed job may keep the start of an attempt that failed and is retried.
STARTED_STATES = ("active", "completed", "failed")

_UNITS = ((3_600_000, "h"), (60_000, "min"), (1_000, "s"))


def duration(ms: int | None) -> str:
    """Milliseconds in the largest unit that fits: "250 ms", "1.5 s", "42 s", "2.5 min",
    "3.1 h"; one decimal below 10 of the unit (where it tells something), none above;
    ``-`` for none."""
    if ms is None:
        return "-"
    if ms < 1000:
        return f"{max(ms, 0)} ms"
    size, unit = next((size, unit) for size, unit in _UNITS if ms >= size)
    value = ms / size
    # Rounding 9.96 to one decimal would show "10.0": one rule for both sides of 10.
    text = f"{value:.1f}" if round(value, 1) < 10 else f"{round(value):d}"
    return f"{text.removesuffix('.0')} {unit}"


@dataclass(frozen=True)
class JobTimes:
    """A job's wait and run in milliseconds (None: not known in its state); ``running``:
    the run is still going (it is the time so far)."""

    wait: int | None
    run: int | None
    running: bool


def job_times(job: Job, now: int) -> JobTimes:
    """The wait and run of ``job`` at the time ``now`` (epoch milliseconds)."""
    started = job.processed_on
    if started is None or job.state not in STARTED_STATES:
        return JobTimes(None, None, False)
    # Runnable from its creation, or from its due time when it was delayed (added with a
    # delay, or a retry's backoff). A delayed job promoted early keeps its due time, which
    # is then after its start: the creation is the better guess.
    runnable = job.created_at
    if job.created_at <= job.delay_until <= started:
        runnable = job.delay_until
    wait = max(started - runnable, 0)
    if job.state == "active":
        return JobTimes(wait, max(now - started, 0), True)
    finished = job.finished_on
    run = None if finished is None else max(finished - started, 0)
    return JobTimes(wait, run, False)
