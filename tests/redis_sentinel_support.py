"""Redis Sentinel of a test's own: a master, a replica of it (``--replicaof``) and three
sentinels (``redis-server <conf> --sentinel``, each with a writable config file in the test's
directory) on free loopback ports, monitoring the master as ``m`` (quorum 2, down after 500 ms,
failover timeout 2 s); and what tests do to it: a coordinated failover (``SENTINEL failover``),
a master SIGKILLed by PID, and waiting for the sentinels to name the promoted replica."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
from redis_support import RedisServer, Resp, RespError, free_port

WAIT = 30.0  # upper bound for the set to form or fail over; never reached when it works
NAME = "m"


class Sentinel:
    """One sentinel process, stopped by PID."""

    def __init__(self, directory: Path, master_port: int) -> None:
        self.directory = directory
        self.port = free_port()
        self.config = directory / "sentinel.conf"
        directory.mkdir(parents=True, exist_ok=True)
        self.config.write_text(
            f"port {self.port}\nbind 127.0.0.1\ndir {directory}\n"
            f"sentinel monitor {NAME} 127.0.0.1 {master_port} 2\n"
            f"sentinel down-after-milliseconds {NAME} 500\n"
            f"sentinel failover-timeout {NAME} 2000\n"
            f"sentinel parallel-syncs {NAME} 1\n"
        )
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, binary: str) -> None:
        self.proc = subprocess.Popen(
            [binary, str(self.config), "--sentinel"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def command(self, *args: str | int) -> object:
        with Resp("127.0.0.1", self.port, timeout=2.0) as resp:
            return resp.command(*args)

    def stop(self) -> None:
        proc = self.proc
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


class RedisSentinelSet:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.servers = [RedisServer(directory / "server-0"), RedisServer(directory / "server-1")]
        self.sentinels = [
            Sentinel(directory / f"sentinel-{i}", self.servers[0].port) for i in range(3)
        ]

    @property
    def url(self) -> str:
        hosts = ",".join(f"127.0.0.1:{s.port}" for s in self.sentinels)
        return f"redis+sentinel://{hosts}/{NAME}"

    def start(self) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            pytest.fail("redis-server is not on PATH (scripts/test installs it)")
        try:
            # (a replica syncs at once: one that never synced would not be promoted)
            sync = ("--repl-diskless-sync-delay", "0")
            master, replica = self.servers
            master.start(*sync)
            replica.start(*sync, "--replicaof", "127.0.0.1", str(master.port))
            self.wait_synced(replica)
            for sentinel in self.sentinels:
                sentinel.start(binary)
            self.wait_formed()
        except BaseException:
            self.stop()
            raise

    def wait_synced(self, replica: RedisServer) -> None:
        """Until ``replica``'s link to its master is up (it has the master's data)."""
        deadline = time.monotonic() + WAIT
        while True:
            with Resp("127.0.0.1", replica.port) as resp:
                if "master_link_status:up" in resp.command("INFO", "replication"):
                    return
            if time.monotonic() > deadline:
                pytest.fail(f"replica {replica.port} did not sync")
            time.sleep(0.05)

    def wait_formed(self) -> None:
        """Until every sentinel sees the master, its replica and the other two sentinels (a
        failover needs a quorum that knows each other and a replica to promote)."""
        deadline = time.monotonic() + WAIT
        for sentinel in self.sentinels:
            while True:
                try:
                    fields = sentinel.command("SENTINEL", "master", NAME)
                    assert isinstance(fields, list)
                    info = dict(zip(fields[::2], fields[1::2], strict=True))
                    if int(info["num-slaves"]) >= 1 and int(info["num-other-sentinels"]) >= 2:
                        break
                except (OSError, RespError):
                    pass
                if time.monotonic() > deadline:
                    pytest.fail(f"sentinel {sentinel.port} did not see the whole set")
                time.sleep(0.1)

    def master(self) -> RedisServer:
        """The server the first sentinel that answers names as master."""
        for sentinel in self.sentinels:
            try:
                reply = sentinel.command("SENTINEL", "get-master-addr-by-name", NAME)
            except (OSError, RespError):
                continue
            assert isinstance(reply, list)
            return next(s for s in self.servers if s.port == int(reply[1]))
        pytest.fail("no sentinel answered")

    def failover(self) -> None:
        """A coordinated failover: the sentinels promote the replica once it caught up."""
        self.sentinels[0].command("SENTINEL", "failover", NAME)

    def kill_master(self) -> RedisServer:
        """SIGKILLs the master (a server this set started) and returns it."""
        master = self.master()
        assert master.proc is not None
        os.kill(master.proc.pid, signal.SIGKILL)
        master.proc.wait()
        return master

    def wait_promoted(self, old: RedisServer) -> RedisServer:
        """Until every sentinel names another server than ``old`` and it says it is a master."""
        deadline = time.monotonic() + WAIT
        while True:
            try:
                named = {
                    int(reply[1])
                    for sentinel in self.sentinels
                    if isinstance(
                        reply := sentinel.command("SENTINEL", "get-master-addr-by-name", NAME),
                        list,
                    )
                }
                if len(named) == 1 and old.port not in named:
                    new = next(s for s in self.servers if s.port in named)
                    with Resp("127.0.0.1", new.port) as resp:
                        role = resp.command("ROLE")
                    if isinstance(role, list) and role[0] == "master":
                        return new
            except (OSError, RespError):
                pass
            if time.monotonic() > deadline:
                pytest.fail("the sentinels did not promote the replica")
            time.sleep(0.05)

    def stop(self) -> None:
        for sentinel in self.sentinels:
            sentinel.stop()
        for server in self.servers:
            server.stop()
