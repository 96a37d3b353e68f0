"""`ServiceConfig` and `QueueConfig`: what a service's queues are, where they live, and which of
them a process consumes, as plain data (built in code, from a dict, or from a TOML or JSON
file). Everything is checked when the config is made, before any queue is opened, so a bad
config raises naming the bad value and opens nothing."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..exceptions import ConfigError
from ._checks import check_url, keywords, known_keys, listed, masked_repr, worker_keywords

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the 3.10 fallback
    import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]

#: Where a queue lives when neither it nor its service names a connection: a `LocalJobQueue`
#: in ``./lanemq-data``, as `LocalJobQueue`'s own default.
DEFAULT_URL = "local:./lanemq-data"


@dataclass(frozen=True, repr=False)
class QueueConfig:
    """One queue of a service. ``url`` is its connection (`lanemq.from_url`'s forms), None for
    the service's; ``options`` are keywords of the queue's constructor (``prefix=``,
    ``max_events=``, ...) over the service's; ``worker`` are `JobWorker` keywords
    (``concurrency=``, ``lease=``, ...) over the service's, used where the process consumes
    the queue."""

    name: str
    url: str | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    worker: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ConfigError(f"invalid queue name {self.name!r} (a non-empty str)")
        where = f"queue {self.name!r}"
        check_url(self.url, where)
        object.__setattr__(self, "options", keywords(self.options, f"{where}: options"))
        object.__setattr__(self, "worker", worker_keywords(self.worker, where))

    def __repr__(self) -> str:
        return masked_repr(self)


@dataclass(frozen=True, init=False, repr=False)
class ServiceConfig:
    """A service's queues (`QueueConfig`, or bare names) and the defaults they fall back to:
    ``url``, the service's connection (None: the ``default_url`` of `build_service`,
    `DEFAULT_URL` unless given); ``options`` and ``worker``, keywords every queue takes unless
    it sets its own (a queue's value wins key by key). ``consume`` names the queues a process
    consumes by default: none means a producer only (`build_service`'s ``consume=`` overrides
    it per process, since which queues a process consumes is a deployment fact)."""

    name: str
    queues: tuple[QueueConfig, ...]
    url: str | None
    consume: tuple[str, ...]
    options: Mapping[str, Any]
    worker: Mapping[str, Any]

    def __init__(
        self,
        name: str,
        queues: Iterable[QueueConfig | str],
        *,
        url: str | None = None,
        consume: Iterable[str] = (),
        options: Mapping[str, Any] | None = None,
        worker: Mapping[str, Any] | None = None,
    ) -> None:
        if not isinstance(name, str) or not name:
            raise ConfigError(f"invalid service name {name!r} (a non-empty str)")
        where = f"service {name!r}"
        made = tuple(_queue_config(item, where) for item in listed(queues, "queues"))
        seen: set[str] = set()
        for queue in made:
            if queue.name in seen:
                raise ConfigError(f"{where}: queue {queue.name!r} is declared twice")
            seen.add(queue.name)
        check_url(url, where)
        values = {
            "name": name,
            "queues": made,
            "url": url,
            "options": keywords({} if options is None else options, f"{where}: options"),
            "worker": worker_keywords({} if worker is None else worker, where),
        }
        for key, value in values.items():
            object.__setattr__(self, key, value)
        object.__setattr__(self, "consume", self.checked_consume(consume))

    def __repr__(self) -> str:
        return masked_repr(self)

    # ------------------------------------------------------------------ reading

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ServiceConfig:
        """A config from plain data (a parsed TOML or JSON document): ``name``, ``queues`` (a
        table of queue name to its ``url``, ``options`` and ``worker``, or a list of names),
        and the service's ``url``, ``consume``, ``options`` and ``worker``. An unknown key
        raises `ConfigError` naming it."""
        if not isinstance(data, Mapping):
            raise ConfigError(f"a service config is a table, got {type(data).__name__}")
        known_keys(data, {"name", "queues", "url", "consume", "options", "worker"}, "service")
        if "name" not in data or "queues" not in data:
            raise ConfigError("a service config needs 'name' and 'queues'")
        raw = data["queues"]
        if isinstance(raw, Mapping):
            queues: list[QueueConfig | str] = []
            for name, table in raw.items():
                if not isinstance(table, Mapping):
                    raise ConfigError(
                        f"queue {name!r}: expected a table, got a {type(table).__name__}"
                    )
                known_keys(table, {"url", "options", "worker"}, f"queue {name!r}")
                queues.append(QueueConfig(name, **table))
        else:
            queues = list(listed(raw, "queues"))
        return cls(
            data["name"],
            queues,
            url=data.get("url"),
            consume=data.get("consume", ()),
            options=data.get("options", {}),
            worker=data.get("worker", {}),
        )

    @classmethod
    def load(cls, path: str | Path) -> ServiceConfig:
        """A config from a ``.toml`` or ``.json`` file (the `from_dict` shape; in TOML, a
        ``[queues.<name>]`` table per queue)."""
        path = Path(path)
        if path.suffix not in (".toml", ".json"):
            raise ConfigError(f"unknown service config format {str(path)!r} (use .toml or .json)")
        text = path.read_text(encoding="utf-8")
        try:
            data = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
        except (tomllib.TOMLDecodeError, ValueError) as error:
            raise ConfigError(f"invalid service config {str(path)!r}: {error}") from None
        return cls.from_dict(data)

    # --------------------------------------------------------------- fallbacks

    @property
    def queue_names(self) -> tuple[str, ...]:
        """The declared queues' names, in order."""
        return tuple(queue.name for queue in self.queues)

    def queue(self, name: str) -> QueueConfig:
        """The declared queue ``name``; `ConfigError` naming it (and the declared ones) if
        there is none."""
        for queue in self.queues:
            if queue.name == name:
                return queue
        raise ConfigError(
            f"service {self.name!r} has no queue {name!r} "
            f"(its queues: {', '.join(self.queue_names) or 'none'})"
        )

    def url_of(self, name: str, default_url: str = DEFAULT_URL) -> str:
        """The queue's connection: its own, else the service's, else ``default_url``."""
        own = self.queue(name).url
        return own if own is not None else self.url if self.url is not None else default_url

    def options_of(self, name: str) -> dict[str, Any]:
        """The queue's constructor keywords: the service's, overridden by the queue's."""
        return {**self.options, **self.queue(name).options}

    def worker_options_of(self, name: str) -> dict[str, Any]:
        """The queue's `JobWorker` keywords: the service's, overridden by the queue's."""
        return {**self.worker, **self.queue(name).worker}

    def checked_consume(self, consume: Iterable[str]) -> tuple[str, ...]:
        """``consume`` as a tuple of declared queue names (each once); a name the service does
        not declare raises `ConfigError` naming it."""
        names: list[str] = []
        for name in listed(consume, "consume"):
            self.queue(name)  # (raises for an undeclared name)
            if name not in names:
                names.append(name)
        return tuple(names)


def _queue_config(item: object, where: str) -> QueueConfig:
    if isinstance(item, QueueConfig):
        return item
    if isinstance(item, str):
        return QueueConfig(item)
    raise ConfigError(f"{where}: a queue is a QueueConfig or a name, got {item!r}")
