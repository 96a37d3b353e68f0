"""`lanemq.monitor`: threshold monitors of lane managers and job
queues. It lives in `lanemq.observability.monitor`; this path stays,
re-exporting its names, for the imports that name it."""

from __future__ import annotations

from .observability.monitor import TOTAL, LaneMonitor, MonitorAlert, MonitorReading, QueueMonitor

__all__ = ["TOTAL", "LaneMonitor", "MonitorAlert", "MonitorReading", "QueueMonitor"]
