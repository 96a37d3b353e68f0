"""The Redis backend: `RedisJobQueue`."""

from __future__ import annotations

import os
import weakref
from typing import TypeVar

from .._core import RedisQueueCore
from .._redis_url import foreign_scheme, redact_url, redis_url_problem
from ..exceptions import BackendConnectionError, ConfigError
from ._common import _check_name_type, _open, _register
from .queue import JobQueue

_R = TypeVar("_R", bound="RedisJobQueue")


class RedisJobQueue(JobQueue):
    """The job contract on Redis or Valkey, for many processes on many hosts. Every state
    transition is one Lua script; all keys of a queue share the hash tag ``{name}`` under
    ``prefix``, so a queue lives on one Redis Cluster slot. A server whose maxmemory-policy may
    evict keys is refused (`ConfigError`) unless ``allow_eviction``; a user who may read it
    neither from ``INFO memory`` nor from ``CONFIG GET`` gets a warning on the ``lanemq``
    logger instead. Flows may span the queues of one server and prefix; on Redis Cluster those
    queues must share a slot, so give them a prefix with a hash tag (``prefix="{app}"``), as
    BullMQ's flows require.

    Making the object does no I/O (a module-level queue imports fine while Redis is down): the
    first call connects, or ``await queue.connect()``, or ``async with queue``. Connecting
    never blocks the event loop and gives up after ``connect_timeout`` seconds with
    `BackendConnectionError` (`BackendAuthenticationError` when the credentials are refused).
    Queue objects of one URL and options share their connections. ``url`` is
    ``redis://[[user]:password@]host[:port][/db]``, ``rediss://...`` (TLS: the certificate must
    chain to the system's authorities or to those in the PEM file ``tls_ca_file``) or
    ``unix:///path/to/redis.sock[?db=N&user=U&pass=P]`` or, for a Redis Cluster,
    ``redis+cluster://[[user]:password@]host:port[,host:port...]`` (seed nodes: the
    queue's calls go to the master of its hash tag's slot, README "Redis Cluster") or, behind
    Redis Sentinel, ``redis+sentinel://[[user]:password@]host:port[,host:port...]/<master>[/db]``
    (``?sentinel_password=`` for the sentinels' own; the calls go to the master they name and
    follow it through a failover, README "Redis Sentinel"); one that does not parse raises
    `ConfigError` at once. The password is kept in the Rust core only: ``url`` (and ``repr``)
    show it masked.

    ``min_replicas_ack=N`` makes every call that adds jobs (``add``, ``add_bulk``, flows) wait
    until N replicas of the server have its write (``WAIT``, at most ``replica_ack_timeout``
    seconds) and raise `StorageError` if fewer have: the jobs are added on the master either
    way, and a failover can still lose them (README "Redis Cluster"). Such a queue object
    makes all of its calls the ordinary way (not on the event loop's wire)."""

    def __init__(
        self,
        name: str,
        url: str = "redis://127.0.0.1:6379/0",
        *,
        prefix: str = "lanemq",
        max_payload_bytes: int = 16 * 1024 * 1024,
        max_events: int = 10_000,
        allow_eviction: bool = False,
        connect_timeout: float = 5.0,
        tls_ca_file: str | os.PathLike[str] | None = None,
        min_replicas_ack: int = 0,
        replica_ack_timeout: float = 1.0,
    ) -> None:
        _check_name_type(name)
        if not isinstance(url, str):
            raise ConfigError(f"invalid url: a {type(url).__name__} (must be a str)")
        scheme = foreign_scheme(url)
        if scheme is not None:
            raise BackendConnectionError(
                f"cannot connect to {redact_url(url)!r}: {scheme}:// is not a Redis server's "
                "URL (use redis://host:port, rediss://, unix://, redis+cluster:// or "
                "redis+sentinel://)"
            )
        problem = redis_url_problem(url)
        if problem:
            raise ConfigError(f"invalid Redis URL {redact_url(url)!r}: {problem}")
        if not (isinstance(connect_timeout, (int, float)) and 0 < connect_timeout < float("inf")):
            raise ConfigError(f"invalid connect_timeout: {connect_timeout!r} (must be > 0 seconds)")
        if isinstance(min_replicas_ack, bool) or not isinstance(min_replicas_ack, int):
            raise ConfigError(f"invalid min_replicas_ack: {min_replicas_ack!r} (must be an int)")
        if min_replicas_ack < 0:
            raise ConfigError(f"invalid min_replicas_ack: {min_replicas_ack!r} (must be >= 0)")
        # (bounded by connect_timeout when used: the connection WAIT holds answers by then)
        bound = connect_timeout if min_replicas_ack else float("inf")
        if not (
            isinstance(replica_ack_timeout, (int, float))
            and 0 < replica_ack_timeout <= bound
            and replica_ack_timeout != float("inf")
        ):
            raise ConfigError(
                f"invalid replica_ack_timeout: {replica_ack_timeout!r} (must be > 0 seconds and "
                f"at most connect_timeout, {connect_timeout!r})"
            )
        if tls_ca_file is not None and not os.path.isfile(tls_ca_file):
            raise ConfigError(f"invalid tls_ca_file: {os.fspath(tls_ca_file)!r} (no such file)")
        core = RedisQueueCore(
            url,
            name,
            prefix,
            max_payload_bytes,
            max_events,
            allow_eviction,
            max(1, round(connect_timeout * 1000)),
            None if tls_ca_file is None else os.fspath(tls_ca_file),
            min_replicas_ack,
            max(1, min(round(replica_ack_timeout * 1000), 2**32 - 1)),
        )
        self._attach(name, core, prefix)

    #: The Redis binding: the calls of every backend, and the Redis queue's own.
    _core: RedisQueueCore

    def _attach(self, name: str, core: RedisQueueCore, prefix: str) -> None:
        super().__init__(name, core)
        #: The server's URL, password masked.
        self.url = core.masked_url()
        self.prefix = prefix
        # Equal for queue objects that share connections (no secret in it).
        self._server = core.server_id()
        _register(_redis_queues, (self._server, prefix, name), self)

    def __repr__(self) -> str:
        return f"RedisJobQueue({self.name!r}, url={self.url!r}, prefix={self.prefix!r})"

    async def connect(self) -> None:
        """Connects now (if this process has no connection to the server yet) and checks the
        server for this queue; a later call would do it anyway. Raises
        `BackendConnectionError` (`BackendAuthenticationError`) or `ConfigError`."""
        await self._core.connect()

    async def __aenter__(self: _R) -> _R:
        await self.connect()
        return self

    async def _wait_reachable(self, timeout: float) -> bool:
        return await self._core.wait_reachable(timeout)

    def sibling(self, name: str) -> JobQueue:
        """A queue of the same server, prefix and settings (sharing the connections): one
        this process made, or a new one."""
        if name == self.name:
            return self
        found = _open(_redis_queues, (self._server, self.prefix, name))
        if found is not None:
            return found
        _check_name_type(name)
        sibling = RedisJobQueue.__new__(RedisJobQueue)
        sibling._attach(name, self._core.sibling(name), self.prefix)
        return sibling


#: The Redis queues this process made, by (server id, prefix, name): a flow's nodes in other
#: queues come back as those objects.
_redis_queues: weakref.WeakValueDictionary[tuple[int, str, str], RedisJobQueue] = (
    weakref.WeakValueDictionary()
)
