"""What lanemq offers to watch it run: Prometheus metrics (`lanemq.observability.prometheus`),
OpenTelemetry spans and metrics (`otel`), lane metrics sinks (`metrics_sink`,
`otel_metrics_sink`), threshold monitors (`monitor`) and the worker registry and per-minute
metrics of job queues (`observe`). Each is also importable by its older path, ``lanemq.otel``,
``lanemq.prometheus`` and so on.

This package imports none of them: Prometheus and OpenTelemetry are optional extras, loaded only
by the module that needs one."""
