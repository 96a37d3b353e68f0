"""Wiring a service from its config, as the owlmeans seed does: one call (`build_service`)
makes the producers of every queue a service declares and, in a process configured to consume
some of them, their workers; a process that consumes nothing holds no worker and no blocking
connection. An `Entrypoint` is one queue's handlers, routed by job name, with the hooks an
application reacts with (``on_dead``: a job failed for good).

```python no-run
from lanemq.wiring import Entrypoint, ServiceConfig, build_service

config = ServiceConfig.from_dict({
    "name": "mailer",
    "url": "local:./lanemq-data",          # the service's connection
    "worker": {"concurrency": 4},          # every worker's, unless its queue says otherwise
    "queues": {"emails": {"worker": {"concurrency": 16}}, "reports": {}},
})
service = build_service(config, consume=["emails"])   # [] in a process that only produces
service.serve("emails", Entrypoint({"send": send}, on_dead=compensate))
async with service:                                   # runs the workers, closes everything
    await service.producer("reports").add("weekly", {"week": 12})
```"""

from __future__ import annotations

from ._config import DEFAULT_URL, QueueConfig, ServiceConfig
from ._entrypoint import DeadHook, Entrypoint, Handler
from ._service import Service, build_service

__all__ = [
    "DEFAULT_URL",
    "DeadHook",
    "Entrypoint",
    "Handler",
    "QueueConfig",
    "Service",
    "ServiceConfig",
    "build_service",
]
