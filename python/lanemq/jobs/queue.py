"""`JobQueue`: the job contract as Python sees it, over any Rust backend (`JobQueueCore`),
made of one part per concern of the contract."""

from __future__ import annotations

from ..exceptions import ConfigError
from ._base import QueueBase
from .admin import QueueAdmin
from .cancels import QueueCancels
from .dedup import QueueDedup
from .events import QueueEvents
from .flows import QueueFlows
from .groups import QueueGroups
from .lifecycle import QueueLifecycle
from .observe import QueueObserve
from .reads import QueueReads
from .schedulers import QueueSchedulers
from .search import QueueSearch


class JobQueue(
    QueueLifecycle,
    QueueFlows,
    QueueReads,
    QueueSearch,
    QueueAdmin,
    QueueDedup,
    QueueSchedulers,
    QueueEvents,
    QueueObserve,
    QueueGroups,
    QueueCancels,
):
    """The job contract over a backend core. Subclasses choose the backend."""

    # (declared here too, so the class itself names its attributes for readers and the
    # reference (docs/reference/jobs.md); `QueueBase` sets it)
    name: str

    def sibling(self, name: str) -> JobQueue:
        """The queue ``name`` of this queue's backend, which flows may span: of the same
        `MemoryGroup`, a local file in the same directory, or a Redis queue of the same server
        and prefix. A queue this process already made is returned as it is (flow nodes in
        other queues come back as those objects)."""
        if name == self.name:
            return self
        raise ConfigError(f"queue {name!r} is not reachable from queue {self.name!r}")


# The class attributes every class has, which are not a part's own.
_EVERY_CLASS_HAS = frozenset(("__module__", "__qualname__", "__doc__", "__dict__", "__weakref__"))


def _hold_the_parts_as_own(queue: type) -> None:
    """Puts the parts' methods (the same objects) in ``queue``'s own namespace, as they were
    before the split: `vars(JobQueue)` and `help(JobQueue)` show the whole contract on the class
    itself, not spread over base classes no page documents, and a lookup stops at the first
    class. (The reference renders the parts' methods through `inherited_members`.)"""
    for part in (QueueBase, *queue.__mro__[1:-2]):
        for name, value in vars(part).items():
            if name not in _EVERY_CLASS_HAS and name not in vars(queue):
                setattr(queue, name, value)


_hold_the_parts_as_own(JobQueue)
