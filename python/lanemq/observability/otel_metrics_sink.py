"""`OTelMetricsSink`: lane metrics as OpenTelemetry instruments, for
``QueueManager(metrics_sink=...)``. It uses only the metrics API of ``opentelemetry-api``; the
application installs the SDK and its exporter (OTLP, Prometheus...), as OpenTelemetry
intends: without an SDK the instruments are no-ops.

Instruments (attributes ``lanemq.manager``, ``lanemq.lane``):

* ``lanemq.lane.commands`` (counter, ``{command}``), with ``lanemq.event``: one of
  `lanemq.metrics_sink.COUNTERS` (submitted, started, completed, failed, ...);
* ``lanemq.lane.command.duration`` (histogram, ``s``): each attempt's run time;
* ``lanemq.lane.command.wait.duration`` (histogram, ``s``): submit (or retry due) to start."""

from __future__ import annotations

from typing import Any

try:
    from opentelemetry import metrics
    from opentelemetry.metrics import Meter
except ImportError as missing:  # pragma: no cover - installed in tests
    raise ImportError(
        "lanemq.otel_metrics_sink needs opentelemetry-api: pip install opentelemetry-api"
    ) from missing

from .._core import __version__
from ..exceptions import ConfigError


class OTelMetricsSink:
    """Sends a `QueueManager`'s lane counters and durations to OpenTelemetry instruments of
    ``meter`` (by default ``metrics.get_meter("lanemq")`` of the global meter provider),
    with ``lanemq.manager=manager`` on every measurement.

    `reset` changes nothing: OpenTelemetry counters only go up (and the exporter's
    temporality decides what a backend sees), so `QueueManager.reset_metrics` resets only
    the manager's own counters."""

    def __init__(self, meter: Meter | None = None, *, manager: str = "default") -> None:
        if not manager or not isinstance(manager, str):
            raise ConfigError(f"invalid manager name: {manager!r}")
        meter = metrics.get_meter("lanemq", __version__) if meter is None else meter
        self.manager = manager
        self._commands = meter.create_counter(
            "lanemq.lane.commands", unit="{command}", description="Lane command events."
        )
        self._durations = {
            "latency": meter.create_histogram(
                "lanemq.lane.command.duration",
                unit="s",
                description="Run time of each lane command attempt.",
            ),
            "queue_wait": meter.create_histogram(
                "lanemq.lane.command.wait.duration",
                unit="s",
                description="Time a lane command waited from submit (or retry due) to start.",
            ),
        }
        # Attribute dicts by (lane, counter) and by lane: made once, not per measurement.
        self._event_attributes: dict[tuple[str, str], dict[str, Any]] = {}
        self._lane_attributes: dict[str, dict[str, Any]] = {}

    def increment(self, lane: str, counter: str, n: int = 1) -> None:
        """Adds ``n`` to the commands counter, the lane and the counter's name as attributes."""
        attributes = self._event_attributes.get((lane, counter))
        if attributes is None:
            attributes = self._event_attributes[lane, counter] = {
                **self._for_lane(lane),
                "lanemq.event": counter,
            }
        self._commands.add(n, attributes)

    def observe(self, lane: str, kind: str, seconds: float) -> None:
        """Records one duration of the lane in the histogram of its ``kind`` (``latency`` or
        ``queue_wait``)."""
        histogram = self._durations.get(kind)
        if histogram is not None:
            histogram.record(seconds, self._for_lane(lane))

    def reset(self) -> None:
        """Nothing to do (see the class's docstring)."""

    def _for_lane(self, lane: str) -> dict[str, Any]:
        attributes = self._lane_attributes.get(lane)
        if attributes is None:
            attributes = self._lane_attributes[lane] = {
                "lanemq.manager": self.manager,
                "lanemq.lane": lane,
            }
        return attributes


__all__ = ["OTelMetricsSink"]
