"""What groups cost at the claim: claims of --batch jobs each until the queue is empty, timed,
on one backend, for the same --jobs jobs laid out three ways (a fresh queue each):

- ``ungrouped``: no group (the plain claim, `lifecycle::claim_head`);
- ``groups``: spread round robin over --groups groups (every claim takes turns);
- ``held``: the same groups, plus as many jobs again in one paused group, which a claim must
  never scan (`lifecycle::groups`: a held group costs the others nothing).

    python benches/group_claims.py --backend memory   # [--jobs 20000 --groups 1000 --batch 100
    python benches/group_claims.py --backend local    #  --repeat 3]; seconds

Prints claimed jobs/s (best and median of --repeat) and each row's ratio to ``ungrouped``.
A report: it always exits 0.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time

from _support import build_profile
from lanemq import InMemoryJobQueue, JobQueue, LocalJobQueue

T = 1_700_000_000_000  # claims at a fixed time: no delayed job, no window moves


def make_queue(backend: str, name: str) -> JobQueue:
    if backend == "memory":
        return InMemoryJobQueue(name)
    return LocalJobQueue(name, tempfile.mkdtemp(), sync="normal")


async def fill(queue: JobQueue, layout: str, jobs: int, groups: int) -> None:
    def options(i: int) -> dict[str, str] | None:
        return None if layout == "ungrouped" else {"group": f"g{i % groups}"}

    for start in range(0, jobs, 1000):
        await queue.add_bulk(
            [("n", i, options(i)) for i in range(start, min(start + 1000, jobs))], now=T
        )
    if layout == "held":
        await queue.pause_group("held")
        for start in range(0, jobs, 1000):
            count = min(1000, jobs - start)
            await queue.add_bulk([("h", i, {"group": "held"}) for i in range(count)], now=T)


async def claim_all(queue: JobQueue, batch: int, jobs: int) -> float:
    """Claimed jobs/s until nothing is claimable."""
    claimed = 0
    began = time.perf_counter()
    while True:
        got = await queue.claim("bench", lease=3600.0, max_jobs=batch, now=T)
        if not got:
            break
        claimed += len(got)
    elapsed = time.perf_counter() - began
    assert claimed == jobs, f"claimed {claimed} of {jobs}"
    return claimed / elapsed


async def one_round(args: argparse.Namespace, layout: str, n: int) -> float:
    queue = make_queue(args.backend, f"groups-bench-{layout}-{n}")
    await fill(queue, layout, args.jobs, args.groups)
    rate = await claim_all(queue, args.batch, args.jobs)
    await queue.obliterate(force=True)
    await queue.close()
    return rate


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["memory", "local"], default="memory")
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--groups", type=int, default=1_000)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"backend: {args.backend} (lanemq._core: {build_profile()} build)")
    print(f"jobs={args.jobs} groups={args.groups} batch={args.batch} repeat={args.repeat}")
    layouts = ["ungrouped", "groups", "held"]
    rates: dict[str, list[float]] = {layout: [] for layout in layouts}
    for n in range(args.repeat):
        for layout in layouts:  # alternated, so a slow moment of the machine hits each
            rates[layout].append(await one_round(args, layout, n))
    base = max(rates["ungrouped"])
    print(f"{'layout':<10} | {'claimed/s best':>14} | {'median':>10} | vs ungrouped (best)")
    for layout in layouts:
        best, median = max(rates[layout]), statistics.median(rates[layout])
        print(f"{layout:<10} | {best:>14,.0f} | {median:>10,.0f} | {best / base:.2f}x")


if __name__ == "__main__":
    asyncio.run(main())
