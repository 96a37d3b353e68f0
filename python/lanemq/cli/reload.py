"""``lanemq worker --reload``: for development, the command becomes a supervisor that runs the
worker (the same command without ``--reload``) in a child process and restarts it when a
source file changes. A restart is SIGTERM's graceful stop: the child stops claiming, running
jobs get its ``--grace``, the rest go back to waiting; only then does the new child start, so
two versions of the code never run at once. SIGTERM or SIGINT to the supervisor stops the
child the same way and the supervisor exits with the child's code (0 on a clean stop).

The watching is watchfiles' (Rust's notify underneath: inotify, FSEvents, ...), with its
default filter for editor and VCS noise, narrowed to ``*.py`` and the config file."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

log = logging.getLogger("lanemq.cli")

SIGNALS = (signal.SIGTERM, signal.SIGINT)


def watchfiles_module() -> Any:
    """The watchfiles module, or a usage error saying which extra brings it."""
    try:
        import watchfiles
    except ImportError:
        raise click.UsageError(
            "--reload needs the watchfiles package: pip install 'lanemq[reload]'"
        ) from None
    return watchfiles


def source_filter(config_file: Path | None) -> Any:
    """Python files and the config file, minus what watchfiles' default filter drops
    (``__pycache__``, ``.git``, virtualenvs, editor swap files)."""
    watchfiles_module()
    from watchfiles import Change, DefaultFilter

    config = None if config_file is None else str(config_file.resolve())

    class SourceFilter(DefaultFilter):
        def __call__(self, change: Change, path: str) -> bool:
            wanted = path.endswith(".py") or path == config
            return wanted and super().__call__(change, path)

    return SourceFilter()


class Supervisor:
    """Runs ``command`` as a child; restarts it on a change; forwards the stop signals."""

    def __init__(
        self, command: Sequence[str], watched: Sequence[Path], config_file: Path | None
    ) -> None:
        self.command = list(command)
        self.watched = [path.resolve() for path in watched]
        self.config_file = config_file
        self.child: asyncio.subprocess.Process | None = None
        self.stopping = asyncio.Event()
        self.signals = 0
        self._exits: set[asyncio.Task[None]] = set()
        # The children already sent SIGTERM by a restart or stop (a second one from us would be
        # their "release the running jobs at once"; and their exit is no surprise to report).
        self._stopped: set[int] = set()

    async def run(self) -> int:
        loop = asyncio.get_running_loop()
        for signum in SIGNALS:
            loop.add_signal_handler(signum, self._on_signal, signum)
        watcher = loop.create_task(self._watch())
        try:
            await self._start()
            await self.stopping.wait()
            # (the watcher first: a restart under way must not start a child after this one)
            watcher.cancel()
            await asyncio.gather(watcher, return_exceptions=True)
            if self.child is not None and self.child.returncode is not None:
                return 0  # it had exited by itself (waiting for a fix): nothing to stop
            return await self._stop_child()
        finally:
            watcher.cancel()
            for signum in SIGNALS:
                loop.remove_signal_handler(signum)

    def _on_signal(self, signum: int) -> None:
        self.signals += 1
        name = signal.Signals(signum).name
        if self.signals == 1:
            log.info("%s: stopping the worker process gracefully", name)
        else:
            # (the child counts its signals: a second one releases its running jobs at once)
            log.warning("%s again: passing it on to the worker process", name)
            self._signal_child(signal.SIGTERM)
        self.stopping.set()

    async def _watch(self) -> None:
        watchfiles = watchfiles_module()
        paths = [*self.watched]
        if self.config_file is not None:
            paths.append(self.config_file.resolve())
        log.info("watching %s for changes", ", ".join(str(path) for path in paths))
        async for changes in watchfiles.awatch(
            *paths, watch_filter=source_filter(self.config_file), stop_event=self.stopping
        ):
            log.info("changed: %s; restarting the worker process", _shown(changes))
            await self._stop_child()
            if self.stopping.is_set():
                return
            await self._start()

    async def _start(self) -> None:
        self.child = await asyncio.create_subprocess_exec(
            *self.command,
            # Its own session: a Ctrl-C at the terminal reaches the supervisor only, which
            # passes on one SIGTERM (two would be the child's "release at once").
            start_new_session=True,
        )
        log.info("worker process %d started", self.child.pid)
        exits = asyncio.get_running_loop().create_task(self._report_exit(self.child))
        self._exits.add(exits)  # (a task nothing refers to may be collected while it runs)
        exits.add_done_callback(self._exits.discard)

    async def _report_exit(self, child: asyncio.subprocess.Process) -> None:
        code = await child.wait()
        if child.pid not in self._stopped and not self.stopping.is_set():
            # (an import error, say: the next change starts it again)
            log.warning(
                "worker process %d exited with code %d; waiting for a change", child.pid, code
            )

    def _signal_child(self, signum: int) -> None:
        child = self.child
        if child is not None and child.returncode is None:
            try:
                child.send_signal(signum)
            except ProcessLookupError:
                pass

    async def _stop_child(self) -> int:
        """SIGTERM to the child, then its exit code (it has its --grace to release)."""
        child = self.child
        if child is None:
            return 0
        if child.pid not in self._stopped:
            self._stopped.add(child.pid)
            self._signal_child(signal.SIGTERM)
        code = await child.wait()
        log.info("worker process %d exited with code %d", child.pid, code)
        return code


def _shown(changes: set[tuple[Any, str]]) -> str:
    """The changed paths, relative to the current directory (where the targets are)."""
    return ", ".join(sorted({os.path.relpath(path) for _, path in changes}))


def child_command(args: Sequence[str]) -> list[str]:
    """``lanemq worker args...`` run by this interpreter (the same environment)."""
    return [sys.executable, "-m", "lanemq", "worker", *args]


def run_supervisor(args: Sequence[str], watched: Sequence[Path], config_file: Path | None) -> int:
    watchfiles_module()  # missing: a usage error before anything starts
    for directory in watched:
        if not directory.is_dir():
            raise click.BadParameter(
                f"{str(directory)!r} is not a directory", param_hint="--reload-dir"
            )
    supervisor = Supervisor(child_command(args), watched, config_file)
    return asyncio.run(supervisor.run())


__all__ = ["Supervisor", "child_command", "run_supervisor", "source_filter"]
