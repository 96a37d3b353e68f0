"""`Supervisor`: keeps N copies of one command running as child processes, for
``lanemq lanes worker --processes N``. It replaces a child that dies, backing off when a
process slot's children keep dying soon after they start, and on SIGTERM or SIGINT forwards
the signal to every child, waits ``grace`` seconds for them to leave and kills the rest.

It knows nothing of lanes: what a child runs (a `QueueManager` sharing its lanes through a
backend) is the command's business. Each line it says names the process slot ("2/4") and
the child's PID, so an operator (or a test) can follow a child."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

#: A child that lived at least this long died of something other than its start: its
#: replacement starts at once and the slot's back-off starts over.
STEADY_SECONDS = 10.0
#: The longest wait before replacing a child that keeps dying at start.
MAX_BACKOFF = 30.0
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


@dataclass
class _Slot:
    """One of the N places a child runs in; its child changes when one is replaced."""

    number: int
    process: asyncio.subprocess.Process | None = None
    started_at: float = 0.0
    quick_deaths: int = 0

    def alive(self) -> asyncio.subprocess.Process | None:
        process = self.process
        return process if process is not None and process.returncode is None else None


def backoff(quick_deaths: int) -> float:
    """Seconds to wait before replacing a child, after ``quick_deaths`` children in a row of
    its slot died soon after starting: the first is replaced at once (a crash happens), then
    0.5 s, 1 s, 2 s... up to `MAX_BACKOFF` (a child that cannot start must not spin)."""
    if quick_deaths <= 1:
        return 0.0
    return min(MAX_BACKOFF, 0.5 * 2.0 ** (quick_deaths - 2))


class Supervisor:
    """Runs ``command`` (a program and its arguments) ``processes`` times at once until
    SIGTERM or SIGINT; `run` returns the exit code: 0 when every child left by itself after
    the signal, 1 when some had to be killed or left with an error."""

    def __init__(
        self,
        command: Sequence[str],
        processes: int,
        grace: float,
        say: Callable[[str], None],
    ) -> None:
        if processes < 1:
            raise ValueError(f"processes must be at least 1, got {processes!r}")
        self._command = list(command)
        self._slots = [_Slot(number) for number in range(1, processes + 1)]
        self._grace = grace
        self._say = say
        self._stopping = asyncio.Event()
        self._stop_signal: int | None = None
        self._killed = False

    async def run(self) -> int:
        loop = asyncio.get_running_loop()
        for signum in STOP_SIGNALS:
            loop.add_signal_handler(signum, self._on_signal, signum)
        try:
            keepers = [loop.create_task(self._keep(slot)) for slot in self._slots]
            await self._stopping.wait()
            _, late = await asyncio.wait(keepers, timeout=self._grace)
            if late:
                self._kill_all(f"did not stop within {self._grace:g}s")
            codes = await asyncio.gather(*keepers)
        finally:
            for signum in STOP_SIGNALS:
                loop.remove_signal_handler(signum)
        clean = not self._killed and all(self._left_cleanly(code) for code in codes)
        self._say("stopped" if clean else "stopped, not cleanly")
        return 0 if clean else 1

    def _left_cleanly(self, code: int | None) -> bool:
        # A child that died of the very signal forwarded to it had not installed its handlers
        # yet, so it had not entered its manager either and held no command: that is clean.
        return code is None or code == 0 or code == -(self._stop_signal or 0)

    async def _keep(self, slot: _Slot) -> int | None:
        """Keeps a child running in ``slot`` until the supervisor stops; returns the last
        child's exit code (None if none was running then)."""
        while True:
            process = await self._start(slot)
            code = await process.wait()
            if self._stopping.is_set():
                return code
            lived = time.monotonic() - slot.started_at
            slot.quick_deaths = slot.quick_deaths + 1 if lived < STEADY_SECONDS else 1
            delay = backoff(slot.quick_deaths)
            later = f" in {delay:g}s" if delay else ""
            self._say(
                f"{self._name(slot)} (pid {process.pid}) exited unexpectedly (code {code}) "
                f"after {lived:.1f}s; starting another{later}"
            )
            try:
                await asyncio.wait_for(self._stopping.wait(), delay)
                return None  # stopped while backing off: nothing to replace
            except asyncio.TimeoutError:
                pass

    async def _start(self, slot: _Slot) -> asyncio.subprocess.Process:
        process = await asyncio.create_subprocess_exec(*self._command)
        slot.process = process
        slot.started_at = time.monotonic()
        self._say(f"{self._name(slot)} started (pid {process.pid})")
        if self._stop_signal is not None:
            # The signal came while this child was being started, after the others got it.
            _send(process, self._stop_signal)
        return process

    def _on_signal(self, signum: int) -> None:
        name = signal.Signals(signum).name
        if self._stopping.is_set():
            self._kill_all(f"{name} again")
            return
        self._stop_signal = signum
        self._stopping.set()
        self._say(f"{name}: stopping the children (they have {self._grace:g}s)")
        for slot in self._slots:
            process = slot.alive()
            if process is not None:
                _send(process, signum)

    def _kill_all(self, reason: str) -> None:
        for slot in self._slots:
            process = slot.alive()
            if process is not None:
                self._killed = True
                self._say(f"{self._name(slot)} (pid {process.pid}) killed: {reason}")
                _send(process, signal.SIGKILL)

    def _name(self, slot: _Slot) -> str:
        return f"process {slot.number}/{len(self._slots)}"


def _send(process: asyncio.subprocess.Process, signum: int) -> None:
    # (a child may end between the check that it runs and the signal: nothing to do then)
    with contextlib.suppress(ProcessLookupError):
        process.send_signal(signum)
