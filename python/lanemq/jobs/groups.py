"""Groups: fair turns between the groups of a queue at the claim, limits per group, and the
management of one group (`JobQueue.add(..., group=...)`)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..exceptions import ConfigError
from ._base import QueueBase
from ._common import check_group


@dataclass(frozen=True)
class GroupLimits:
    """Limits of a group (`JobQueue.get_group_limits`) or the defaults of every group
    (`JobQueue.get_group_defaults`). None: no limit (defaults), the default's (a group)."""

    concurrency: int | None = None
    """At most this many active jobs of the group at once, across every worker and process."""
    rate: tuple[int, float] | None = None
    """At most ``rate[0]`` claims of the group per ``rate[1]`` seconds."""
    max_size: int | None = None
    """At most this many jobs of the group waiting or delayed: an add beyond it raises
    `GroupMaxSizeExceededError` and writes nothing."""


@dataclass(frozen=True)
class GroupInfo:
    """One group as `JobQueue.list_groups` shows it."""

    name: str
    paused: bool
    counts: dict[str, int]
    """Jobs of the group per state, as `JobQueue.get_job_counts` counts them."""


def _rate(rate: tuple[int, float] | None) -> tuple[int | None, float | None]:
    """``rate`` as the bindings take it, or `ConfigError` naming the whole value (the user
    wrote ``rate=``, not the two fields it becomes)."""
    if rate is None:
        return None, None
    if isinstance(rate, tuple) and len(rate) == 2:
        most, seconds = rate
        count_ok = isinstance(most, int) and not isinstance(most, bool) and most >= 1
        seconds_ok = (
            isinstance(seconds, int | float)
            and not isinstance(seconds, bool)
            and 0 < seconds < math.inf
        )
        if count_ok and seconds_ok:
            return most, seconds
    raise ConfigError(
        f"invalid rate: {rate!r} (must be (max, seconds): an integer >= 1 and a number of "
        "seconds > 0, or None)"
    )


class QueueGroups(QueueBase):
    """The part of `JobQueue` that sets and reads groups."""

    async def set_group_defaults(
        self,
        *,
        concurrency: int | None = None,
        rate: tuple[int, float] | None = None,
        max_size: int | None = None,
    ) -> None:
        """Sets the limits every group has unless `set_group_limits` overrides them, held
        across every worker and process: ``concurrency`` (active jobs of one group at once),
        ``rate`` (``(max, seconds)``: claims of one group per window) and ``max_size`` (jobs of
        one group waiting or delayed; an add beyond it raises `GroupMaxSizeExceededError`).
        None: no limit. Replaces the defaults as a whole."""
        rate_max, rate_duration = _rate(rate)
        await self._core.set_group_defaults(concurrency, rate_max, rate_duration, max_size)

    async def get_group_defaults(self) -> GroupLimits:
        """The limits every group has unless overridden (`set_group_defaults`)."""
        return GroupLimits(*await self._core.get_group_defaults())

    async def set_group_limits(
        self,
        group: str,
        *,
        concurrency: int | None = None,
        rate: tuple[int, float] | None = None,
        max_size: int | None = None,
    ) -> None:
        """Overrides the defaults for ``group`` (a limit left None is the default's); replaces
        the group's earlier overrides. A concurrency below the group's active jobs holds the
        group back until enough of them end."""
        check_group(group)
        rate_max, rate_duration = _rate(rate)
        await self._core.set_group_limits(group, concurrency, rate_max, rate_duration, max_size)

    async def get_group_limits(self, group: str) -> GroupLimits:
        """``group``'s overrides as set (None where it takes the default's)."""
        check_group(group)
        return GroupLimits(*await self._core.get_group_limits(group))

    async def pause_group(self, group: str, *, now: int | None = None) -> None:
        """Holds ``group``'s jobs back from every worker's claims (its active jobs run on);
        other groups go on. Holds for a group that has no jobs yet too."""
        check_group(group)
        await self._core.pause_group(group, now)

    async def resume_group(self, group: str, *, now: int | None = None) -> None:
        """Lets ``group``'s jobs be claimed again, waking idle workers."""
        check_group(group)
        await self._core.resume_group(group, now)

    async def is_group_paused(self, group: str) -> bool:
        """Whether ``group`` is paused (`pause_group`); known for a group with no jobs yet too."""
        check_group(group)
        return await self._core.is_group_paused(group)

    async def get_group_counts(self, group: str, *states: str) -> dict[str, int]:
        """`get_job_counts` for the jobs of ``group``: counts per state, in the order asked;
        every state when none."""
        check_group(group)
        return await self._core.get_group_counts(group, list(states))

    async def list_groups(self, start: int = 0, count: int = 100) -> list[GroupInfo]:
        """The groups that hold jobs, are paused or have limits of their own, sorted by name:
        ``count`` of them from ``start`` (`count_groups` says how many there are)."""
        if start < 0 or count < 0:
            raise ConfigError(f"invalid page: start={start}, count={count} (must be >= 0)")
        rows, _ = await self._core.list_groups(start, count)
        return [GroupInfo(name, paused, counts) for name, paused, counts in rows]

    async def count_groups(self) -> int:
        """How many groups `list_groups` pages through."""
        _, total = await self._core.list_groups(0, 0)
        return total

    async def remove_group(self, group: str, *, now: int | None = None) -> int:
        """Removes ``group``'s waiting, prioritized and delayed jobs (as `remove` would each);
        returns how many. Its active jobs run on."""
        check_group(group)
        return await self._core.remove_group(group, now)
