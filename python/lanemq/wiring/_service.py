"""`build_service`: a service's producers, and the workers of the queues this process consumes,
made from its `ServiceConfig`. `Service` holds them and runs the workers (``async with``)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any

from ..exceptions import ConfigError
from ..queue import InMemoryJobQueue, JobQueue, LocalJobQueue
from ..urls import from_url
from ..worker import JobWorker
from ..worker._close import check_seconds
from ._checks import check_queue_options, queue_class
from ._config import DEFAULT_URL, ServiceConfig
from ._entrypoint import Entrypoint


class Service:
    """The queues of one service as this process uses them: a producer (`JobQueue`) for every
    declared queue, and a `JobWorker` for each queue the process consumes, none otherwise: a
    producer-only process holds no worker and so no blocking connection. ``async with
    service:`` runs the workers and, on the way out, closes them (their running jobs get
    ``close_grace`` seconds, None: as long as they take) and then the queues. Made by
    `build_service`."""

    def __init__(
        self,
        config: ServiceConfig,
        queues: Mapping[str, JobQueue],
        workers: Mapping[str, JobWorker],
        close_grace: float | None = None,
    ) -> None:
        self.config = config
        self.name = config.name
        self._queues = MappingProxyType(dict(queues))
        self._workers = MappingProxyType(dict(workers))
        self._close_grace = close_grace
        self._started: list[JobWorker] = []
        self._closed = False
        self._stop = asyncio.Event()  # (set by close: what run() waits for)

    @property
    def queues(self) -> Mapping[str, JobQueue]:
        """Every declared queue, by name (read-only)."""
        return self._queues

    @property
    def workers(self) -> Mapping[str, JobWorker]:
        """The workers of the queues this process consumes, by queue name (read-only; empty
        in a producer-only process)."""
        return self._workers

    @property
    def consuming(self) -> tuple[str, ...]:
        """The names of the queues this process consumes."""
        return tuple(self._workers)

    def producer(self, name: str) -> JobQueue:
        """The queue ``name`` to add jobs to; `ConfigError` if the service does not declare
        it."""
        queue = self._queues.get(name)
        if queue is None:
            self.config.queue(name)  # (raises naming the declared queues)
        assert queue is not None
        return queue

    def worker(self, name: str) -> JobWorker:
        """The worker of queue ``name``; `ConfigError` if the service does not declare it, or
        this process does not consume it."""
        worker = self._workers.get(name)
        if worker is None:
            self.config.queue(name)
            raise ConfigError(
                f"service {self.name!r}: this process does not consume queue {name!r} "
                f"(it consumes: {', '.join(self._workers) or 'none'})"
            )
        return worker

    def serve(self, name: str, entrypoint: Entrypoint) -> bool:
        """Attaches ``entrypoint`` to the worker of queue ``name`` if this process consumes
        it, and says whether it did: the same wiring code runs in every process, and only
        those that consume the queue run its handlers. A queue the service does not declare
        raises `ConfigError`."""
        if not isinstance(entrypoint, Entrypoint):
            raise TypeError(f"serve takes an Entrypoint, got {entrypoint!r}")
        self.config.queue(name)
        worker = self._workers.get(name)
        if worker is None:
            return False
        entrypoint.attach(worker)
        return True

    async def start(self) -> None:
        """Starts every worker (in the background, on this event loop)."""
        if self._closed:
            raise RuntimeError(f"service {self.name!r} is closed")
        for worker in self._workers.values():
            if worker not in self._started:
                await worker.__aenter__()
                self._started.append(worker)

    async def run(self) -> None:
        """Runs the workers until `close()` is called (from another task) or this task is
        cancelled (Ctrl-C under `asyncio.run`), then closes everything: the body of a
        worker process, ``asyncio.run(service.run())``."""
        try:
            await self.start()
            await self._stop.wait()
        finally:
            await self.close()

    async def close(self) -> None:
        """Closes the workers (their running jobs get ``close_grace`` seconds, None: as long as
        they take; then they are released back to waiting), then every queue; `run()`
        returns. Closing again does nothing; a closed service does not start again."""
        self._stop.set()
        try:
            for worker in self._started:
                await worker.close(grace=self._close_grace)
        finally:
            self._started.clear()
            if not self._closed:
                self._closed = True
                for queue in self._queues.values():
                    await queue.close()

    async def __aenter__(self) -> Service:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    def __repr__(self) -> str:
        return (
            f"<Service {self.name!r} queues={list(self._queues)} consuming={list(self._workers)}>"
        )


def build_service(
    config: ServiceConfig | Mapping[str, Any],
    consume: Iterable[str] | None = None,
    *,
    entrypoints: Mapping[str, Entrypoint] | None = None,
    default_url: str = DEFAULT_URL,
    close_grace: float | None = None,
) -> Service:
    """The `Service` of ``config`` (a `ServiceConfig`, or the dict `ServiceConfig.from_dict`
    reads) for this process: a producer for every declared queue, at its connection (the
    queue's ``url``, else the service's, else ``default_url``) with its options (the queue's
    over the service's); and a `JobWorker` (the queue's worker options over the service's)
    for each queue in ``consume`` (None: the config's ``consume``; empty: none, a producer
    only). ``entrypoints`` maps queue names to the `Entrypoint` each runs (`Service.serve`:
    attached where this process consumes the queue). ``close_grace``: seconds the running jobs
    get when the service closes (`JobWorker.close`; None: as long as they take).

    Queues of one connection with the same options are siblings (`JobQueue.sibling`): they
    share the connections, and flows may span them. Everything is checked before a queue is
    opened: a bad name, option or URL raises `ConfigError` naming it and opens nothing.
    Nothing connects here (a Redis queue connects at its first call)."""
    check_seconds("close_grace", close_grace)
    if not isinstance(config, ServiceConfig):
        config = ServiceConfig.from_dict(config)
    consumed = config.consume if consume is None else config.checked_consume(consume)
    served = dict(entrypoints or {})
    for name, entrypoint in served.items():
        config.queue(name)
        if not isinstance(entrypoint, Entrypoint):
            raise TypeError(f"entrypoints[{name!r}] is not an Entrypoint: {entrypoint!r}")
    plans = [
        (name, config.url_of(name, default_url), config.options_of(name))
        for name in config.queue_names
    ]
    for name, url, options in plans:
        check_queue_options(url, options, f"service {config.name!r}, queue {name!r}")
    for name in consumed:  # (the values, by JobWorker itself, before a queue is opened)
        JobWorker(InMemoryJobQueue(name), **config.worker_options_of(name))
    queues: dict[str, JobQueue] = {}
    firsts: list[tuple[str, dict[str, Any], JobQueue]] = []
    # Local queues last: their constructor makes the file, so an error in a URL or an option
    # of any other queue is raised before a file is made.
    local_last = sorted(plans, key=lambda plan: queue_class(plan[1]) is LocalJobQueue)
    for name, url, options in local_last:
        kin = next((queue for u, o, queue in firsts if u == url and o == options), None)
        if kin is None:
            queues[name] = from_url(url, name, **options)
            firsts.append((url, options, queues[name]))
        else:
            queues[name] = kin.sibling(name)
    queues = {name: queues[name] for name in config.queue_names}  # (the declared order)
    workers = {name: JobWorker(queues[name], **config.worker_options_of(name)) for name in consumed}
    service = Service(config, queues, workers, close_grace)
    for name, entrypoint in served.items():
        service.serve(name, entrypoint)
    return service
