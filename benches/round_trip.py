"""What one awaited call costs from asyncio on this machine: lanemq's add against bare round
trips, of redis-py's asyncio client and of a socket the loop watches with no client at all.

    python benches/round_trip.py            # starts its own redis-server; about half a minute

add_single and the latency targets are sums of such awaited calls. The loop-socket PING
(``loop.add_reader`` and ``sock.send``, as lanemq's wire does it, without parsing) is the
least an asyncio caller can pay for one; redis-py adds its client's Python on top. lanemq's
add pays the loop-socket round trip, its binding, and the add function in Redis (INFO
commandstats, printed as "in Redis"); "lanemq _core.add" is the binding's call alone, without
the Python `add` around it. Each line is one run of --calls calls, alternating,
--rounds times.

"client CPU" is this process's CPU per call (``time.process_time``: every thread, the event
loop's and the binding's runtime thread). Unlike the wall time, a busy machine does not inflate
it: lanemq add's client CPU less the loop-socket PING's is what the binding adds to a call
beyond the least an asyncio caller pays, the part of add_single's time over its floor that the
client owns.
"""

import argparse
import asyncio
import sys
import time

import redis
import redis.asyncio as aredis
from _support import RedisServer
from comparison.floors import LoopSocketPing
from lanemq import RedisJobQueue


async def measure(port, calls, rounds):
    sync = redis.Redis(port=port)
    queue = RedisJobQueue("round-trip", f"redis://127.0.0.1:{port}/0")
    client = aredis.Redis(port=port)
    await queue.add("warm", None)
    await client.ping()

    async def lanemq_add(i):
        await queue.add("noop", {"i": i})

    # The binding's add alone (the payload encoded, no `Job`): what `queue.add` costs less
    # this is its Python layer, and this less the loop-socket PING is the binding's and the
    # kernel's share (the add's request is some 700 bytes, its keys mostly; the PING's 6).
    now = int(time.time() * 1000)

    async def binding_add(_):
        await queue._core.add("noop", '{"i":1}', None, now)

    async def ping(_):
        await client.ping()

    async def eval_return(_):
        await client.eval("return 1", 0)

    pinger = LoopSocketPing("127.0.0.1", port)  # the floor compare.py uses too

    async def loop_ping(_):
        await pinger.ping()

    cases = [
        ("lanemq add", lanemq_add, "cmdstat_fcall"),
        ("lanemq _core.add", binding_add, "cmdstat_fcall"),
        ("redis-py PING", ping, None),
        ("redis-py EVAL 'return 1'", eval_return, "cmdstat_eval"),
        ("loop-socket PING", loop_ping, None),
    ]
    print(f"{'call':26} {'per second':>11} {'us per call':>12} {'in Redis':>9} {'client CPU':>11}")
    for _ in range(rounds):
        for label, call, stat in cases:
            sync.config_resetstat()
            start, cpu = time.perf_counter(), time.process_time()
            for i in range(calls):
                await call(i)
            elapsed = time.perf_counter() - start
            used = (time.process_time() - cpu) * 1e6 / calls
            server = sync.info("commandstats").get(stat, {}).get("usec", 0) if stat else 0
            inside = f"{server / calls:8.1f}" if stat else "       -"
            print(
                f"{label:26} {calls / elapsed:11,.0f} {elapsed * 1e6 / calls:12.1f} {inside} "
                f"{used:11.1f}"
            )
    pinger.close()
    await client.aclose()
    await queue.close()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--calls", type=int, default=5_000)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--redis-server", default="redis-server")
    a = p.parse_args()
    server = RedisServer(a.redis_server)  # a private server, no persistence
    server.start()
    try:
        asyncio.run(measure(server.port, a.calls, a.rounds))
    finally:
        server.cleanup()


if __name__ == "__main__":
    sys.exit(main())
