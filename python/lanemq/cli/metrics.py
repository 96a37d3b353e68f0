"""``lanemq worker --metrics-port``: a Prometheus endpoint for the workers the command runs,
on prometheus-client (the ``lanemq[prometheus]`` extra), which is imported only then."""

from __future__ import annotations

import logging
from types import ModuleType
from typing import Any

import click

from ..worker import JobWorker

log = logging.getLogger("lanemq.cli")


def prometheus_module() -> ModuleType:
    """`lanemq.prometheus`, or a `click.UsageError` (exit 2) saying what to install."""
    try:
        from ..observability import prometheus
    except ImportError as missing:
        raise click.UsageError(
            f"--metrics-port needs prometheus-client ({missing}): pip install 'lanemq[prometheus]'"
        ) from None
    return prometheus


class MetricsEndpoint:
    """The collector instrumenting the workers (their queues' counts included), refreshed on
    the workers' loop, and the HTTP server that serves it with prometheus-client's default
    registry (so the process and Python metrics come along)."""

    def __init__(self, collector: Any, server: Any) -> None:
        self._collector = collector
        self._server = server

    @classmethod
    async def open(cls, workers: list[JobWorker], port: int, addr: str) -> MetricsEndpoint:
        """Raises `click.ClickException` (exit 1) if it cannot listen at ``addr:port``."""
        prometheus = prometheus_module()
        collector = prometheus.LanemqCollector()
        for worker in workers:
            collector.instrument(worker)
        try:
            server = prometheus.start_metrics_server(port, addr)
        except OSError as error:
            collector.unregister()
            raise click.ClickException(
                f"cannot serve metrics at {addr}:{port}: {error.strerror or error}"
            ) from None
        await collector.start()
        host = f"[{server.addr}]" if ":" in server.addr else server.addr
        log.info("serving metrics at http://%s:%d/metrics", host, server.port)
        return cls(collector, server)

    async def close(self) -> None:
        self._server.stop()
        await self._collector.stop()
        self._collector.unregister()
