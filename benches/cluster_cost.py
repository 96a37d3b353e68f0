"""What the Redis Cluster client costs: process@C (one worker, concurrency C, a no-op
processor, N jobs filled untimed first; jobs.py's `process_run`) on one queue of a single
redis-server, then on one queue of a local cluster of 3 masters (no replicas, so the
cluster's figure is not replication's). A queue lives in one slot, so on the cluster every
call of the run goes to one master, as on the single server: the difference is the cluster
client's (routing, its master's connections) and the cluster-mode server's. On a machine of
2 cores 3 masters cannot show scaling: that is not what this measures.

    python benches/cluster_cost.py [--jobs 20000] [--concurrency 100] [--runs 3]

Prints a table: the best of ``--runs`` runs of each, in jobs/s, and their ratio."""

from __future__ import annotations

import argparse
import asyncio
import itertools
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

from _support import RedisServer, Resp, build_profile, text
from jobs import QueueFactory, positive_int, process_run
from lanemq import JobQueue, RedisJobQueue

_names = itertools.count(1)


class Cluster:
    """A local cluster of ``masters`` masters, no replicas, on free loopback ports below 55536
    (the cluster bus is port + 10000); `stop()` ends it and removes its files."""

    def __init__(self, masters: int = 3) -> None:
        self.directory = Path(tempfile.mkdtemp(prefix="lanemq-bench-cluster-"))
        self.ports: list[int] = []
        self.processes: list[subprocess.Popen[bytes]] = []
        self.masters = masters

    @property
    def url(self) -> str:
        return "redis+cluster://" + ",".join(f"127.0.0.1:{port}" for port in self.ports)

    def start(self) -> None:
        while len(self.ports) < self.masters:
            port = RedisServer.free_port()
            if port < 55536 and port not in self.ports:
                self.ports.append(port)
        for port in self.ports:
            node = self.directory / str(port)
            node.mkdir()
            self.processes.append(
                subprocess.Popen(
                    ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                     "--appendonly", "no", "--dir", str(node), "--cluster-enabled", "yes",
                     "--cluster-config-file", str(node / "nodes.conf")],
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                )
            )  # fmt: skip
        for port in self.ports:
            self._wait(port, lambda r: r.call("PING") == "PONG")
        cli = ["redis-cli", "--cluster", "create", *(f"127.0.0.1:{p}" for p in self.ports)]
        subprocess.run([*cli, "--cluster-yes"], capture_output=True, check=True, timeout=60)
        for port in self.ports:
            self._wait(port, lambda r: "cluster_state:ok" in text(r.call("CLUSTER", "INFO")))

    @staticmethod
    def _wait(port: int, ready: object) -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                client = Resp("127.0.0.1", port, timeout=2)
                try:
                    if ready(client):  # type: ignore[operator]
                        return
                finally:
                    client.close()
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"cluster node {port} not ready")

    def stop(self) -> None:
        for process in self.processes:
            process.terminate()
        for process in self.processes:
            process.wait(timeout=10)
        shutil.rmtree(self.directory, ignore_errors=True)


def factory(url: str) -> QueueFactory:
    @asynccontextmanager
    async def queue() -> AsyncIterator[JobQueue]:
        made = RedisJobQueue(f"bench-{next(_names)}", url, prefix="{bench}")
        try:
            yield made
        finally:
            await made.obliterate(force=True)
            await made.close()

    return queue


def best(url: str, jobs: int, concurrency: int, runs: int) -> float:
    rates = []
    for _ in range(runs):
        outcome = asyncio.run(process_run(factory(url), jobs, concurrency, 1000))
        if outcome.problems:
            raise RuntimeError(f"{url}: {outcome.problems}")
        rates.append(outcome.rate)
    return max(rates)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=positive_int, default=20_000)
    parser.add_argument("--concurrency", type=positive_int, default=100)
    parser.add_argument("--runs", type=positive_int, default=3)
    args = parser.parse_args(argv)
    single, cluster = RedisServer(), Cluster()
    try:
        single.start()
        cluster.start()
        one = best(single.url, args.jobs, args.concurrency, args.runs)
        many = best(cluster.url, args.jobs, args.concurrency, args.runs)
    finally:
        single.stop()
        single.cleanup()
        cluster.stop()
    print(f"process@{args.concurrency}, {args.jobs} jobs, best of {args.runs}, build "
          f"{build_profile()}, redis {single.version}")  # fmt: skip
    print(f"{'target':<34}{'jobs/s':>10}{'ratio':>8}")
    print(f"{'single redis-server':<34}{one:>10.0f}{1.0:>8.2f}")
    print(f"{'cluster of 3 masters (one slot)':<34}{many:>10.0f}{many / one:>8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
