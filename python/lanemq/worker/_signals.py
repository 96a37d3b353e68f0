"""``JobWorker.run(install_signal_handlers=True)``: SIGTERM or SIGINT closes the worker
gracefully, a second one forces; the handlers that were there before come back when run()
returns. Unix only (`loop.add_signal_handler`), from the main thread."""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._worker import JobWorker

log = logging.getLogger("lanemq.worker")

SIGNALS = (signal.SIGTERM, signal.SIGINT)


class SignalHandlers:
    """The loop's handlers for `SIGNALS` while a worker runs."""

    def __init__(self, worker: JobWorker, loop: asyncio.AbstractEventLoop, grace: float | None):
        self._worker = worker
        self._loop = loop
        self._grace = grace
        self._received = 0
        self._closing: set[asyncio.Task[None]] = set()
        # Per signal: the Python-level handler, and the loop's own handler (callback, args)
        # if it had one (`remove_signal_handler` would otherwise leave the default).
        self._saved: list[tuple[signal.Signals, Any, tuple[Callable[..., Any], Any] | None]] = []

    def install(self) -> None:
        """Raises `RuntimeError` where the loop cannot handle signals (not the main thread,
        not Unix); then nothing is left changed."""
        try:
            for sig in SIGNALS:
                self._saved.append((sig, signal.getsignal(sig), self._loop_handler(sig)))
                self._loop.add_signal_handler(sig, self._on_signal, sig)
        except (NotImplementedError, RuntimeError, ValueError) as error:
            self.restore()
            raise RuntimeError(
                "install_signal_handlers needs an event loop that handles signals: Unix, "
                f"running in the main thread ({error})"
            ) from error

    def _loop_handler(self, sig: signal.Signals) -> tuple[Callable[..., Any], Any] | None:
        # asyncio's Unix loops keep their handlers there; there is no public way to read one.
        handles: dict[int, asyncio.Handle] = getattr(self._loop, "_signal_handlers", {})
        handle = handles.get(sig)
        callback = getattr(handle, "_callback", None)
        if callback is None:
            return None
        return callback, getattr(handle, "_args", ())

    def restore(self) -> None:
        """Puts back what was there before `install`."""
        while self._saved:
            sig, previous, loop_handler = self._saved.pop()
            try:
                self._loop.remove_signal_handler(sig)
                if loop_handler is not None:
                    callback, args = loop_handler
                    self._loop.add_signal_handler(sig, callback, *args)
                elif previous is not None:
                    signal.signal(sig, previous)
            except (NotImplementedError, RuntimeError, ValueError):
                log.warning("worker %s: could not restore the %s handler", self._worker.id, sig)

    def _on_signal(self, sig: signal.Signals) -> None:
        self._received += 1
        worker = self._worker
        if self._received == 1:
            log.info(
                "worker %s: %s received: closing (grace %ss; again to force)",
                worker.id,
                sig.name,
                self._grace,
            )
            closing = self._loop.create_task(worker.close(grace=self._grace))
        else:
            log.warning("worker %s: %s received again: forcing close", worker.id, sig.name)
            closing = self._loop.create_task(worker.close(force=True))
        self._closing.add(closing)

    async def finish(self) -> None:
        """Waits for the close() calls the signals started (they end with run())."""
        if self._closing:
            await asyncio.gather(*self._closing, return_exceptions=True)
