"""The `QueueManager` a ``lanemq lanes worker`` target names, and the life of one worker
process with it: enter ``async with manager:``, run until SIGTERM or SIGINT (or until the
supervisor is gone), leave (the manager's close gives unfinished named commands back)."""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
import signal

from ..lanes import QueueManager
from .targets import Target, describe_error, import_target, kind_of, needs_arguments

log = logging.getLogger("lanemq.cli")

#: How often a child looks whether its supervisor still lives (a supervisor killed with
#: SIGKILL cannot forward anything, and its children must not run on unsupervised).
PARENT_CHECK_SECONDS = 1.0
EXPECTED = "a QueueManager or a function without arguments that returns one"


async def manager_of(target: Target) -> QueueManager:
    """The manager ``target`` names (a factory is called, and awaited if async)."""
    value = import_target(target)
    if isinstance(value, QueueManager):
        return value
    if not callable(value):
        raise target.error(f"is {kind_of(value)}; expected {EXPECTED}")
    if needs_arguments(value):
        raise target.error(f"is a function that takes arguments; expected {EXPECTED}")
    try:
        made = value()
        if inspect.isawaitable(made):
            made = await made
    except Exception as error:
        log.error("calling %s failed", target.spec, exc_info=True)
        raise target.error(f"calling it raised {describe_error(error)}") from None
    if not isinstance(made, QueueManager):
        raise target.error(f"returned {kind_of(made)}; expected a QueueManager")
    return made


async def run_child(target: Target) -> None:
    """One worker process: its manager runs until SIGTERM or SIGINT, then leaves gracefully.
    Signals after the first are ignored: on Ctrl-C the terminal signals every child and the
    supervisor forwards the signal too, and that second one must not cut the leaving short."""
    supervisor = os.getppid()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    # (before the target is imported: a signal from then on is a graceful stop)
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    manager = await manager_of(target)
    async with manager:
        log.info("pid %d: lanes of %s running", os.getpid(), target.spec)
        while not stop.is_set():
            try:
                await asyncio.wait_for(stop.wait(), PARENT_CHECK_SECONDS)
            except asyncio.TimeoutError:
                if os.getppid() != supervisor:
                    log.warning("pid %d: the supervisor is gone; leaving", os.getpid())
                    stop.set()
        log.info("pid %d: leaving (unfinished named commands go back)", os.getpid())
