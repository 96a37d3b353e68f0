"""A TCP proxy on loopback that a fault test owns, between its worker processes and its
redis-server, to break the network the ways networks break: cut every connection (as a
restarted load balancer does), cut one, stall (accept and never answer, as a partition
leaves a half-open connection), or lose a reply (the command ran, the connection broke before
its answer came back). The connection a worker waits on is known by its traffic: it carries
BZPOPMIN."""

from __future__ import annotations

import asyncio
import contextlib


class Link:
    """One client connection and its upstream connection."""

    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, proxy: Proxy
    ) -> None:
        self.proxy = proxy
        self.client = (reader, writer)
        self.upstream: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        self.blocking = False  # a BZPOPMIN went through it
        self.listening = False  # an XREAD went through it (a worker's cancel listener)
        self.stalled = False  # bytes through it are dropped, both ways, from now on
        self.closed = False
        self.losing = False  # a command went through whose reply is cut (Proxy.lose_reply)

    def cut(self) -> None:
        """Closes both sides at once (a reset, not an orderly close)."""
        self.closed = True
        for side in (self.client, self.upstream):
            if side is not None:
                side[1].transport.abort()

    async def pump(
        self, source: asyncio.StreamReader, sink: asyncio.StreamWriter, to_server: bool
    ) -> None:
        with contextlib.suppress(ConnectionError, OSError):
            while data := await source.read(65536):
                # A write that begins with the command (the library's source, loaded on the
                # command connection, names it too).
                if to_server and b"\r\nBZPOPMIN\r\n" in data[:32].upper():
                    self.blocking = True
                if to_server and b"\r\nXREAD\r\n" in data[:32].upper():
                    self.listening = True
                if self.stalled:
                    continue
                if not to_server and self.losing:
                    break  # the server answered: the client never hears it
                if to_server and self.proxy.takes_reply(data):
                    self.losing = True
                sink.write(data)
                await sink.drain()
        self.cut()


class Proxy:
    """Forwards 127.0.0.1:<port> to 127.0.0.1:<upstream>."""

    def __init__(self, upstream: int) -> None:
        self.upstream = upstream
        self.links: list[Link] = []
        self.stall_new = False  # new connections are accepted and never answered
        self.reply_to_lose: bytes | None = None
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)

    @property
    def port(self) -> int:
        assert self._server is not None
        return int(self._server.sockets[0].getsockname()[1])

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def live(self) -> list[Link]:
        return [link for link in self.links if not link.closed]

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        link = Link(reader, writer, self)
        self.links.append(link)
        if self.stall_new:
            link.stalled = True
            await link.pump(reader, writer, to_server=True)  # reads and drops
            return
        try:
            link.upstream = await asyncio.open_connection("127.0.0.1", self.upstream)
        except OSError:
            link.cut()
            return
        up_reader, up_writer = link.upstream
        for source, sink, to_server in ((reader, up_writer, True), (up_reader, writer, False)):
            task = asyncio.create_task(link.pump(source, sink, to_server))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    def cut_all(self) -> int:
        """Cuts every live connection; how many."""
        links = self.live()
        for link in links:
            link.cut()
        return len(links)

    def blocking(self) -> list[Link]:
        return [link for link in self.live() if link.blocking]

    def listening(self) -> list[Link]:
        return [link for link in self.live() if link.listening]

    def cut_blocking(self) -> int:
        links = self.blocking()
        for link in links:
            link.cut()
        return len(links)

    def lose_reply(self, command: bytes) -> None:
        """The next write that carries ``command``, on any connection, reaches the server, and
        that connection is cut as the reply comes back, before the client gets it: the command
        is applied and its caller sees a lost connection. Once."""
        self.reply_to_lose = command

    def takes_reply(self, data: bytes) -> bool:
        """Whether ``data``, on its way to the server, is the write whose reply is lost."""
        if self.reply_to_lose is None or self.reply_to_lose not in data:
            return False
        self.reply_to_lose = None
        return True

    def stall(self, links: list[Link]) -> int:
        """Stops answering on ``links`` for good (they stay open)."""
        for link in links:
            link.stalled = True
        return len(links)

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        self.cut_all()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()
