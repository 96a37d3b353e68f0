"""The least an asyncio caller can pay for one awaited Redis call: a PING on a socket the event
loop watches (``loop.add_reader`` and ``sock.send``, as lanemq's wire does it, with no client
and no parsing). ``benches/round_trip.py`` prints it beside lanemq's add; ``compare.py``'s
lanemq runner measures it in the same run as the table, for the floors of add_single,
process@1 and latency.

Only the standard library: the runners import it on any Python.
"""

from __future__ import annotations

import asyncio
import socket
import time


class LoopSocketPing:
    """One TCP connection to Redis whose replies the running loop reads with ``add_reader``;
    `ping()` sends ``PING`` and awaits the next reply. Open it inside the loop that uses it."""

    def __init__(self, host: str, port: int) -> None:
        self.loop = asyncio.get_running_loop()
        self.sock = socket.create_connection((host, port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.setblocking(False)
        self.replies: list[asyncio.Future[bytes]] = []
        self.loop.add_reader(self.sock.fileno(), self._on_readable)

    def _on_readable(self) -> None:
        data = self.sock.recv(65536)
        # One PING in flight at a time, so each read is one whole "+PONG\r\n".
        if self.replies and not self.replies[0].done():
            self.replies.pop(0).set_result(data)

    async def ping(self) -> None:
        reply: asyncio.Future[bytes] = self.loop.create_future()
        self.replies.append(reply)
        self.sock.send(b"PING\r\n")
        await reply

    def close(self) -> None:
        self.loop.remove_reader(self.sock.fileno())
        self.sock.close()


async def round_trip_us(host: str, port: int, calls: int, warmup: int = 200) -> float:
    """Microseconds per awaited loop-socket PING, over `calls` PINGs one after another."""
    pinger = LoopSocketPing(host, port)
    try:
        for _ in range(warmup):
            await pinger.ping()
        started = time.perf_counter()
        for _ in range(calls):
            await pinger.ping()
        return (time.perf_counter() - started) * 1e6 / calls
    finally:
        pinger.close()
