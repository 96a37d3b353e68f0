"""Flow benchmark: one parent with N children in another queue, on every backend.

Run it (the package built in release mode, e.g. ``maturin develop --release``)::

    python benches/flows.py [--children 1000] [--batch 250] [--repeat 3]

For each backend (memory: two queues of one `MemoryGroup`; local: two files in a fresh
directory; Redis: two queues of a private ``redis-server`` it starts on a free port) it times:

1. ``add_flow``: one ``add_flow`` call adding the parent (on queue ``parents``) and N children
   (on queue ``kids``);
2. ``finish``: claiming and completing every child, ``--batch`` at a time
   (``claim`` + ``complete_many``), until the parent is released.

Checked afterwards: the parent is waiting, with N children's values. It reports the best of
``--repeat`` runs in ms and always exits 0: a report, not a test (flows have no speed target).
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from _support import RedisServer
from lanemq import FlowJob, InMemoryJobQueue, JobQueue, LocalJobQueue, RedisJobQueue

Pair = tuple[JobQueue, JobQueue]


async def _run(pair: Pair, children: int, batch: int) -> tuple[float, float]:
    parents, kids = pair
    flow = FlowJob("root", children=[FlowJob("kid", i, queue=kids.name) for i in range(children)])
    start = time.perf_counter()
    root = await parents.add_flow(flow)
    added = time.perf_counter() - start
    start = time.perf_counter()
    done = 0
    while done < children:
        jobs = await kids.claim("bench", lease=60.0, max_jobs=batch)
        await kids.complete_many([(j.id, j.lock_token or "", j.data) for j in jobs])
        done += len(jobs)
    finished = time.perf_counter() - start
    assert await parents.get_state(root.job.id) == "waiting"
    assert len(await parents.get_children_values(root.job.id)) == children
    await parents.obliterate(force=True)
    await kids.obliterate(force=True)
    return added * 1000, finished * 1000


async def bench(url: str, children: int, batch: int, repeat: int, directory: Path) -> None:
    def memory() -> Pair:
        parents = InMemoryJobQueue("parents")
        return parents, InMemoryJobQueue("kids", group=parents.group)

    def local() -> Pair:
        return LocalJobQueue("parents", directory), LocalJobQueue("kids", directory)

    def redis() -> Pair:
        return RedisJobQueue("parents", url), RedisJobQueue("kids", url)

    backends: dict[str, Callable[[], Pair]] = {"memory": memory, "local": local, "redis": redis}
    print(f"one parent, {children:,} children in another queue; best of {repeat}")
    print(f"{'backend':8} | {'add_flow (ms)':>13} | {'finish (ms)':>11}")
    for name, make in backends.items():
        pair = make()
        runs = [await _run(pair, children, batch) for _ in range(repeat)]
        added, finished = min(r[0] for r in runs), min(r[1] for r in runs)
        print(f"{name:8} | {added:13.1f} | {finished:11.1f}")
        for queue in pair:
            await queue.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--children", type=int, default=1000)
    parser.add_argument("--batch", type=int, default=250)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    directory = Path(tempfile.mkdtemp(prefix="lanemq-flows-"))
    try:
        with RedisServer() as server:
            asyncio.run(bench(server.url, args.children, args.batch, args.repeat, directory))
    finally:
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
