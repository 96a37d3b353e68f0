"""The SQLite-file backend: `LocalJobQueue`."""

from __future__ import annotations

import os
import weakref
from collections.abc import Awaitable
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypeAlias, get_args

from .. import _checks
from .._core import JobQueueCore
from ..exceptions import ConfigError
from ._common import _check_name_type, _open, _register
from ._gathered import GatheredAdds
from .queue import JobQueue

if TYPE_CHECKING:
    from .._core import JobOptions, JobRecord

#: How a `LocalJobQueue` syncs its commits (its ``sync=``).
LocalSync: TypeAlias = Literal["full", "normal"]
# The values `sync=` takes (local: URLs check theirs against it too).
_LOCAL_SYNCS: tuple[str, ...] = get_args(LocalSync)


class LocalJobQueue(JobQueue):
    """The job contract in a local SQLite file: durable (an acknowledged change survives the
    process being killed), needing no server, and shared safely by several processes on one
    machine. ``path`` is a directory (the queue lives in ``<path>/<name>.sqlite3``) or a file
    ending in ``.db``, ``.sqlite`` or ``.sqlite3``. A file belongs to one queue: opening it
    under another name, or a file of an unknown or newer format, raises `ConfigError`; a
    corrupted file raises `StorageError`. Nothing is changed in either case. Flows may span
    the queues of one directory (each file applies its own part in one transaction; what one
    queue's change means for another is delivered right after it commits, exactly once).

    ``sync`` is how hard this object's commits go to disk: ``"full"`` (the default) syncs
    every commit, so an acknowledged change survives a power loss; ``"normal"`` leaves commits
    in the OS's cache until the next checkpoint: an acknowledged change still survives the
    process being killed, but an OS crash or power loss may lose the newest commits (whole
    ones; the file stays consistent). The steps of a flow across files are fully synced either
    way. Anything else raises `ConfigError` before a file is touched."""

    def __init__(
        self,
        name: str,
        path: str | os.PathLike[str] = "./lanemq-data",
        *,
        max_payload_bytes: int = 16 * 1024 * 1024,
        max_events: int = 10_000,
        sync: LocalSync = "full",
    ) -> None:
        _check_name_type(name)
        _checks.unicode_text(name, "queue name")  # (before it is part of a path)
        if not isinstance(sync, str) or sync not in _LOCAL_SYNCS:
            raise ConfigError(f"invalid sync: {sync!r} (must be 'full' or 'normal')")
        target = Path(path)
        if target.suffix not in (".db", ".sqlite", ".sqlite3"):
            # (the core refuses a name outside the rule before the file is touched)
            target = target / f"{name}.sqlite3"
        self.path = target
        core = JobQueueCore.local(str(target), name, max_payload_bytes, max_events, sync)
        super().__init__(name, core)
        #: ``"full"`` or ``"normal"``, as given.
        self.sync: LocalSync = sync
        self._settings = (max_payload_bytes, max_events)
        # `sync="normal"` adds commit once per loop iteration, on the loop's thread when they
        # can (`GatheredAdds`); a full sync's fsync stays on the writer thread.
        self._gathered = GatheredAdds(core) if sync == "normal" else None
        _register(_local_queues, str(target.resolve()), self)

    def __repr__(self) -> str:
        synced = "" if self.sync == "full" else f", sync={self.sync!r}"
        return f"LocalJobQueue({self.name!r}, path={str(self.path)!r}{synced})"

    def _add_one(
        self, name: str, body: str, options: JobOptions | None, now: int
    ) -> Awaitable[JobRecord]:
        if self._gathered is None:
            return self._core.add(name, body, options, now)
        return self._gathered.gather(name, body, options, now)

    def sibling(self, name: str) -> JobQueue:
        """The queue ``name`` whose file is beside this one's: one this process opened, or a
        new one."""
        if name == self.name:
            return self
        _checks.unicode_text(name, "queue name")  # (before it is part of a path)
        target = self.path.parent / f"{name}.sqlite3"
        found = _open(_local_queues, str(target.resolve()))
        if found is not None:
            return found
        max_payload_bytes, max_events = self._settings
        return LocalJobQueue(
            name,
            self.path.parent,
            max_payload_bytes=max_payload_bytes,
            max_events=max_events,
            sync=self.sync,
        )


#: The local queues this process opened, by file: a flow's nodes in other queues come back as
#: those objects.
_local_queues: weakref.WeakValueDictionary[str, LocalJobQueue] = weakref.WeakValueDictionary()
