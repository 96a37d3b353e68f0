"""The server's whole work for one call, in instructions (callgrind): the FCALL itself and what
surrounds it (reading and parsing the request, the keys' handling, writing the reply), for one
or more versions of the library side by side in one server.

    LANEMQ_DUMP_SCRIPTS=/tmp/new cargo test -p lanemq-redis dump_composed_scripts -- --ignored
    python benches/call_cost.py /tmp/old /tmp/new      # needs valgrind and redis-server

Each directory is such a dump (library.lua, keys.txt, options.json). The versions run
alternately, --rounds times, each round --calls single adds, complete_and_claim calls of batch 1
and renew calls of no job (a call's fixed cost); for each it prints the server's instructions
per call (the whole program but its timer, serverCron: request, command, reply, event loop),
those inside fcallCommand,
and the bytes of each request (INFO stats, total_net_input_bytes). lua_cost.py counts inside
the FCALL alone; the difference is what a call costs the server outside the function.
"""

import argparse
import itertools
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable

import redis
from _support import start_plain_redis


def totals(path: str) -> tuple[int, int]:
    """The program's instructions less serverCron's (its timer runs by the wall clock, slow and
    uneven under valgrind), and those inside fcallCommand, of one dump."""
    with open(path) as f:
        total = int(re.search(r"^(?:summary|totals): (\d+)", f.read(), re.M).group(1))  # type: ignore[union-attr]
    out = subprocess.run(
        ["callgrind_annotate", "--inclusive=yes", "--threshold=100", path],
        capture_output=True,
        text=True,
    ).stdout

    def inclusive(function: str) -> int:
        m = re.search(r"^\s*([\d,]+) .*:" + function + " ", out, re.M)
        return int(m.group(1).replace(",", "")) if m else 0

    return total - inclusive("serverCron"), inclusive("fcallCommand")


class Version:
    """One dump's library, loaded in the server, and its calls (the keys as the client sends
    them, queue `bench`)."""

    def __init__(self, r: redis.Redis, path: str) -> None:
        self.r, self.path = r, path
        with open(os.path.join(path, "keys.txt")) as f:
            self.keys = f.read().split()
        with open(os.path.join(path, "options.json")) as f:
            self.opts = f.read()
        with open(os.path.join(path, "library.lua")) as f:
            self.library = self.r.function_load(f.read(), True).decode()
        self.claimed: list[list[bytes]] = []

    def call(self, op: str, *args: object) -> object:
        fn = f"{self.library}_{op}"
        return self.r.execute_command("FCALL", fn, len(self.keys), *self.keys, *args)

    def job(self, i: int) -> list[str]:
        return ["noop", f'{{"i":{i}}}', self.opts, "", "0", "0", "0"]

    def add(self, now: int, n: int = 1) -> None:
        self.call("add", now, 1000, *[x for i in range(n) for x in self.job(i)])

    def cycle(self, now: int, n: int = 1) -> None:
        """complete_and_claim: completes what the last cycle claimed, claims `n`."""
        done = [x for j in self.claimed for x in (j[0], j[14], "null")]
        _, self.claimed = self.call("complete_claim", now, 1000, "w1", 30000, n, "s", *done)  # type: ignore[misc]


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("versions", nargs="+", help="directories of composed scripts")
    p.add_argument("--port", type=int, default=6412)
    p.add_argument("--calls", type=int, default=200)
    p.add_argument("--rounds", type=int, default=2)
    a = p.parse_args()
    out_dir = tempfile.mkdtemp(prefix="call_cost.")
    vg, r = start_plain_redis(
        a.port,
        [
            "valgrind",
            "--tool=callgrind",
            "--dump-instr=no",
            f"--callgrind-out-file={out_dir}/cg.out",
        ],
    )
    versions = [Version(r, path) for path in a.versions]
    dumps: list[tuple[str, str, int, int]] = []  # version, phase, calls, bytes in

    def control(*args: str) -> None:
        subprocess.run(
            ["callgrind_control", *args, str(vg.pid)],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def phase(v: Version, name: str, run: Callable[[], object], counted: bool) -> None:
        if not counted:
            for _ in range(a.calls):
                run()
            return
        control("-z")
        before = int(r.info("stats")["total_net_input_bytes"])
        for _ in range(a.calls):
            run()
        after = int(r.info("stats")["total_net_input_bytes"])
        # callgrind numbers its dumps: cg.out.<k> is the k-th phase counted
        control("-d", f"p{len(dumps) + 1}")
        # (the first INFO's request, 20 bytes, is in the count)
        dumps.append((v.path, name, a.calls, after - before - 20))

    clock = itertools.count(1_800_000_000_000)
    # The first round warms the server (its allocations, the scripts' first runs): not counted.
    for round_ in range(a.rounds + 1):
        for v in versions:
            v.add(next(clock), a.calls + 1)
            v.cycle(next(clock))
            phase(v, "add_single", lambda v=v: v.add(next(clock)), round_ > 0)
            phase(v, "complete_claim@1", lambda v=v: v.cycle(next(clock)), round_ > 0)
            noop = lambda v=v: v.call("renew", next(clock), 30000)  # noqa: E731
            phase(v, "renew of no job", noop, round_ > 0)
            v.cycle(next(clock), 0)  # the last claimed job completes
    r.shutdown(nosave=True)
    vg.wait()
    rows: dict[tuple[str, str], list[tuple[float, float, float]]] = {}
    for k, (path, name, calls, sent) in enumerate(dumps, 1):
        total, inside = totals(f"{out_dir}/cg.out.{k}")
        rows.setdefault((name, path), []).append((total / calls, inside / calls, sent / calls))
    for (name, path), runs in sorted(rows.items()):
        whole = " / ".join(f"{t:,.0f}" for t, _, _ in runs)
        inside = " / ".join(f"{i:,.0f}" for _, i, _ in runs)
        print(f"{name:17} {path:16} whole {whole:>19}  in FCALL {inside:>19}  {runs[-1][2]:4.0f} B")
    print("callgrind files:", out_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
