"""The store that lanes shared by processes keep their commands and slots in: the contract of
`lanemq._core.LocalLaneStore` (a SQLite file) and `lanemq._core.RedisLaneStore` (Lua on
Redis, Redis Cluster or Sentinel), as `QueueManager(..., backend=...)` drives them.

One store (a backend and a name) holds: the lanes' settings, written by the first manager;
every command not yet finished, pending in its lane (FIFO), waiting to retry, or running and
held by a process; the live processes, each with a lease and the command names it runs; each
lane's rate bucket; the outcomes not yet collected by their submitters; the dead letters.

Every operation is one atomic step of the store (a Lua script; a SQLite ``BEGIN IMMEDIATE``
transaction), so what one process decides holds against every other. Times are the store's
clock in milliseconds (Redis ``TIME``; the system clock on local).

**Dispatch** (`claim`) is the in-process dispatcher's decision, made over the shared lanes as if
one dispatcher ran for every process, of which the claiming process takes the commands it can
run: repeatedly, of the lanes that have a pending command some live process can run and whose
capacity lets them start one, take the lane with the lowest effective priority number (its
priority less the boost its oldest pending command has earned by waiting), then the lower
configured priority, then the lower lane index; its oldest such command starts. Capacity: the
lane's active commands are below its ``max_concurrency``; with a global cap, the free global
slots exceed the other lanes' unfilled ``min_concurrency`` reservations
(``min - active``, summed); a rate-limited lane has a token (a bucket of ``permits`` tokens
refilled evenly over ``per_ms``, bursting to ``permits``; a token is spent when a command
starts). A command this process can run is claimed: it holds its slot (and spent its token). A
command that only another live process can run is *owed* to it: it takes its slot and token
for the rest of this claim only, so this process never takes a lower lane's slot that a higher
lane's command needs, and the owing process claims it when it looks. A command no live process
can run (a name nobody live registered) is passed over and blocks nothing.

**Turns:** a process that already holds a command of a lane leaves a named command of that lane
to an *idle* live process that registered its name (owed to it, as above). A process is idle
when its latest claim took nothing; it stops being idle when a claim takes something or it
leaves. So with three processes on one lane of ``max_concurrency=2``, work spreads over two.

**Leases and recovery:** a process's lease (``lease_ms`` from its latest `join` or `renew`)
covers every command it holds. `claim`, `renew` and `enqueue` first recover the processes whose
lease has expired: each held named command goes back to the front of its lane if it was never
recovered before (it runs again once at most), or else fails for good (a dead letter with the
error ``"LeaseExpiredError: the process running it stopped renewing its lease"``); each held or
pending callable of that process is dropped (only that process could run it, and its
submitter, the same process, is gone); the process is forgotten. Its slots are free again.

**Outcomes** go to a named command's submitter (`outcomes`). A callable's outcome does not:
its owner, which ran it, settles its handle itself; `complete` and `fail` of a callable only free
its slot (and `fail` keeps its dead letter).

**Wakes:** `enqueue`, a command's end (`complete`, `fail`, `release`, `cancel`) and a recovery
wake every live process (a Redis list per process holding at most one token; a counter on
local); a batch (`enqueue_many`, `complete_many`) wakes them once. An outcome wakes its
submitter; `wait` returns when the process has been woken since its previous `wait` returned,
or at its timeout.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Protocol

# (lane_id, priority, min_concurrency, max_concurrency, rate_permits, rate_per_ms,
#  boost_deadline_ms, boost_steps): a lane as the store dispatches it. The rate fields are both
# None or both set; boost_steps are (remaining fraction, boost) pairs, as `PriorityBoost` has.
LaneSpec = tuple[str, int, int, int, int | None, int | None, int | None, list[tuple[float, int]]]

# (lane index, name, owner, payload): a command as `LaneStore.enqueue` takes it, for
# `enqueue_many`.
NewCommand = tuple[int, str | None, str | None, str | None]

# (id, lane index, name or None for a callable, payload JSON text or None, attempt (1 at the
#  first run), submitter process id): a command `claim` gave this process.
Claimed = tuple[int, int, str | None, str | None, int, str]

# (id, ok, text): ok: ``text`` is the result as JSON text; not ok: the error as
# ``"ClassName: message"``, or ``"CancelledError: ..."`` for a cancelled command.
Outcome = tuple[int, bool, str]

# (command_id, command_type, lane_id, error, attempts, failed_at (unix milliseconds, as
#  `DeadLetter.failed_at`)).
LetterRecord = tuple[int, str, str, str, int, int]


class LaneStore(Protocol):
    """The shared lanes' store (see the module's docstring for the semantics)."""

    def setup(self, config: str, lanes: list[LaneSpec], global_max: int | None) -> Awaitable[str]:
        """Stores the lanes (and ``config``, their settings as JSON text) if the store has none
        yet, atomically; returns the stored ``config``, which the caller compares with its own.
        Dispatch always uses the stored lanes."""
        ...

    def join(self, pid: str, names: list[str], lease_ms: int) -> Awaitable[None]:
        """Makes ``pid`` a live process running ``names``, its lease ending in ``lease_ms``."""
        ...

    def renew(self, pid: str, names: list[str], lease_ms: int) -> Awaitable[list[int]]:
        """Extends ``pid``'s lease (and its names, which may have grown), joining it again if
        it had been recovered; returns the ids this process may believe it holds but no longer
        does (recovered by another process meanwhile): their outcomes will be refused."""
        ...

    def leave(self, pid: str) -> Awaitable[None]:
        """Forgets ``pid`` (a manager that closes): drops its pending callables. Its held
        commands must have been completed, failed or released before."""
        ...

    def enqueue(
        self, submitter: str, lane: int, name: str | None, owner: str | None, payload: str | None
    ) -> Awaitable[int]:
        """Adds a pending command at the back of lane number ``lane``: a named command
        (``name`` and its ``payload`` as JSON text; any live process that registered ``name``
        may run it) or a callable that only process ``owner`` runs (``payload`` None). Returns
        its id (positive, increasing). Its outcome goes to ``submitter``."""
        ...

    def enqueue_many(self, submitter: str, commands: list[NewCommand]) -> Awaitable[list[int]]:
        """`enqueue` of each command, in order (FIFO within a lane), in one atomic step with
        one wake of every live process for the batch; returns their ids in that order. A bad
        command refuses the whole batch with `enqueue`'s error, nothing written; an empty
        batch returns [] and writes nothing."""
        ...

    def claim(self, pid: str, max_n: int) -> Awaitable[tuple[list[Claimed], int | None]]:
        """Recovers expired processes, moves due retries back to their lanes (at the back),
        then dispatches, claiming at most ``max_n`` commands this process can run. Also returns
        the milliseconds until a retry falls due or a rate token comes for a lane with a
        pending command this process can run (None: nothing timed)."""
        ...

    def complete(self, pid: str, command_id: int, result: str) -> Awaitable[bool]:
        """Ends a held command with its result (JSON text) for its submitter and frees its
        slot. False, and nothing changed, when ``pid`` no longer holds it."""
        ...

    def complete_many(self, pid: str, results: list[tuple[int, str]]) -> Awaitable[list[bool]]:
        """`complete` of each (command_id, result), in one atomic step with one wake of every
        live process for the batch (when any ended); returns per entry what `complete` would
        have (False for an id ``pid`` does not hold: the others still end)."""
        ...

    def fail(
        self,
        pid: str,
        command_id: int,
        error: str,
        retry_in_ms: int | None,
        command_type: str,
        letter_limit: int,
    ) -> Awaitable[bool]:
        """Ends a held command's attempt with ``error`` (``"ClassName: message"``) and frees its
        slot: with ``retry_in_ms`` it waits that long, holding no slot, then goes back to its
        lane; without, it fails for good: its error goes to its submitter and a dead letter is
        kept (the newest ``letter_limit``). False, and nothing changed, when ``pid`` no longer
        holds it."""
        ...

    def release(self, pid: str, command_id: int) -> Awaitable[bool]:
        """Gives a held command back unfinished (its process is closing): it goes back to the
        front of its lane (a callable: is dropped) and its slot is free."""
        ...

    def cancel(self, command_id: int) -> Awaitable[bool]:
        """Withdraws a pending or retry-waiting command (its submitter gets a
        ``"CancelledError: ..."`` outcome). False when it is running or gone."""
        ...

    def outcomes(self, pid: str) -> Awaitable[list[Outcome]]:
        """Takes the outcomes that arrived for commands ``pid`` submitted, oldest first."""
        ...

    def wait(self, pid: str, timeout_ms: int) -> Awaitable[None]:
        """Returns when ``pid`` was woken since the previous `wait` returned (at once if it
        was), or after ``timeout_ms``."""
        ...

    def stats(self) -> Awaitable[list[tuple[int, int, int]]]:
        """Per lane, in lane order: (pending, active, retrying), across every process."""
        ...

    def dead_letters(self) -> Awaitable[list[LetterRecord]]:
        """The dead letters kept, oldest first."""
        ...

    def clear_all(self) -> Awaitable[None]:
        """Deletes everything the store holds (settings, commands, processes, letters)."""
        ...

    def close(self) -> None:
        """Releases the store's file or connections."""
        ...
