"""A real Redis Cluster of a test's own: 3 masters with 1 replica each, 6 `redis-server
--cluster-enabled yes` on free loopback ports, joined by `redis-cli --cluster create`, and
what tests do to it: move a slot to another master (MIGRATING/IMPORTING and one MIGRATE of
all its keys), kill a master by PID and wait for its replica to take over."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import pytest
from redis_support import RedisServer, Resp, RespError, free_port

WAIT = 30.0  # upper bound for the cluster to form or fail over; never reached when it works


class RedisCluster:
    def __init__(self, directory: Path, masters: int = 3, replicas: int = 1) -> None:
        self.directory = directory
        count = masters * (1 + replicas)
        self.replicas = replicas
        self.nodes = [RedisServer(directory / f"node-{i}") for i in range(count)]

    @property
    def url(self) -> str:
        seeds = ",".join(f"127.0.0.1:{node.port}" for node in self.nodes)
        return f"redis+cluster://{seeds}"

    def start(self) -> None:
        cli = shutil.which("redis-cli")
        if cli is None:
            pytest.fail("redis-cli is not on PATH (scripts/test installs it)")
        try:
            for node in self.nodes:
                self._start_node(node)
            create = [cli, "--cluster", "create"]
            create += [f"127.0.0.1:{node.port}" for node in self.nodes]
            create += ["--cluster-replicas", str(self.replicas), "--cluster-yes"]
            done = subprocess.run(create, capture_output=True, timeout=WAIT, check=False)
            if done.returncode != 0:
                pytest.fail(f"redis-cli --cluster create failed: {done.stdout!r} {done.stderr!r}")
            self.wait_ok()
            self.wait_replicas_synced()
        except BaseException:
            self.stop()
            raise

    @staticmethod
    def _start_node(node: RedisServer) -> None:
        # A port found free may be taken before the server binds it (or its bus port, + 10000)
        # by another process of a busy machine: the node then exits at start. A new port is
        # tried, twice at most, before the fixture fails.
        for attempt in range(3):
            try:
                node.start(
                    "--cluster-enabled", "yes",
                    "--cluster-node-timeout", "1000",
                    "--cluster-config-file", str(node.directory / "nodes.conf"),
                    # A replica syncs at once (the default waits 5 s for more replicas); one
                    # that never synced would not take over from a failed master.
                    "--repl-diskless-sync-delay", "0",
                )  # fmt: skip
                return
            except pytest.fail.Exception:
                if attempt == 2:
                    raise
                node.port = free_port()

    def wait_ok(self, nodes: list[RedisServer] | None = None) -> None:
        """Until every (running) node says cluster_state:ok and sees every slot served."""
        deadline = time.monotonic() + WAIT
        for node in nodes or self.running():
            while True:
                try:
                    with Resp("127.0.0.1", node.port) as resp:
                        info = resp.command("CLUSTER", "INFO")
                        if "cluster_state:ok" in info and "cluster_slots_ok:16384" in info:
                            break
                except (OSError, RespError):
                    pass
                if time.monotonic() > deadline:
                    pytest.fail(f"node {node.port} did not reach cluster_state:ok")
                time.sleep(0.05)

    def wait_replicas_synced(self) -> None:
        """Until every replica's link to its master is up (it has the master's data)."""
        deadline = time.monotonic() + WAIT
        for node in self.running():
            while True:
                with Resp("127.0.0.1", node.port) as resp:
                    info = resp.command("INFO", "replication")
                if "role:master" in info or "master_link_status:up" in info:
                    break
                if time.monotonic() > deadline:
                    pytest.fail(f"replica {node.port} did not sync with its master")
                time.sleep(0.05)

    def running(self) -> list[RedisServer]:
        return [n for n in self.nodes if n.proc is not None and n.proc.poll() is None]

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()

    def node_id(self, node: RedisServer) -> str:
        with Resp("127.0.0.1", node.port) as resp:
            return str(resp.command("CLUSTER", "MYID"))

    def owner(self, slot: int) -> RedisServer:
        """The master that serves ``slot`` (as a running node's CLUSTER SLOTS says)."""
        with Resp("127.0.0.1", self.running()[0].port) as resp:
            for start, end, master, *_ in resp.command("CLUSTER", "SLOTS"):
                if start <= slot <= end:
                    return next(n for n in self.nodes if n.port == int(master[1]))
        raise AssertionError(f"no master serves slot {slot}")

    def replica_of(self, master: RedisServer) -> RedisServer:
        """A running replica of ``master`` whose link to it is up."""
        for node in self.running():
            with Resp("127.0.0.1", node.port) as resp:
                info = resp.command("INFO", "replication")
            if f"master_port:{master.port}\r" in info and "master_link_status:up" in info:
                return node
        raise AssertionError(f"master {master.port} has no replica in sync")

    def masters(self) -> list[RedisServer]:
        with Resp("127.0.0.1", self.running()[0].port) as resp:
            ports = {int(entry[2][1]) for entry in resp.command("CLUSTER", "SLOTS")}
        return [n for n in self.nodes if n.port in ports]

    def slot_of(self, key: str) -> int:
        with Resp("127.0.0.1", self.running()[0].port) as resp:
            return int(resp.command("CLUSTER", "KEYSLOT", key))

    def move_slot(self, slot: int, target: RedisServer) -> int:
        """Moves ``slot`` to the master ``target`` as `redis-cli --cluster reshard` does, but
        with all of the slot's keys in ONE MIGRATE: a queue's script must never find some of
        its keys moved and others not (README "Redis Cluster"). Returns the keys moved."""
        source = self.owner(slot)
        moved = self.begin_move(slot, target)
        self.finish_move(slot, source, target)
        return moved

    def begin_move(self, slot: int, target: RedisServer) -> int:
        """Marks ``slot`` migrating to ``target`` and moves all of its keys there in one
        MIGRATE, leaving it so: its old master answers ASK for it (its keys are gone), until
        `finish_move`. Returns the keys moved."""
        source = self.owner(slot)
        assert source.port != target.port
        source_id, target_id = self.node_id(source), self.node_id(target)
        with Resp("127.0.0.1", source.port) as src, Resp("127.0.0.1", target.port) as dst:
            assert dst.command("CLUSTER", "SETSLOT", slot, "IMPORTING", source_id) == "OK"
            assert src.command("CLUSTER", "SETSLOT", slot, "MIGRATING", target_id) == "OK"
            keys = src.command("CLUSTER", "GETKEYSINSLOT", slot, 1_000_000)
            if keys:
                moved = src.command(
                    "MIGRATE", "127.0.0.1", target.port, "", 0, 10_000, "REPLACE", "KEYS", *keys
                )
                assert moved == "OK", moved
        return len(keys)

    def finish_move(self, slot: int, source: RedisServer, target: RedisServer) -> None:
        """Gives ``slot`` to ``target`` on every master (its old one answers MOVED now)."""
        target_id = self.node_id(target)
        for node in (target, source):
            with Resp("127.0.0.1", node.port) as resp:
                assert resp.command("CLUSTER", "SETSLOT", slot, "NODE", target_id) == "OK"
        for node in self.masters():
            if node.port not in (source.port, target.port):
                with Resp("127.0.0.1", node.port) as resp:
                    resp.command("CLUSTER", "SETSLOT", slot, "NODE", target_id)

    def wait_promoted(self, slot: int, dead: RedisServer) -> RedisServer:
        """Until a running node serves ``slot`` in place of ``dead``; that node."""
        deadline = time.monotonic() + WAIT
        while True:
            try:
                owner = self.owner(slot)
                if owner.port != dead.port:
                    self.wait_ok()
                    return owner
            except (OSError, RespError, AssertionError):
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"no replica took over slot {slot} from node {dead.port}")
            time.sleep(0.05)
