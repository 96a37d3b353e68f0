"""`LocalStorage`: makes named lane commands and dead letters durable in a local file.

A named command is written (and fsynced) before `submit_named` returns, and removed once it
completes or fails for good (or is cancelled with `handle.cancel()`). Whatever is still stored
when the manager next starts runs again, including commands that were pending or running when
the manager closed. Dead letters are stored too and come back into `dead_letters()`. The file
is an append-only journal written by the Rust core, compacted as it grows."""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from collections import deque
from pathlib import Path
from typing import Any

from . import _checks
from ._core import DeadLetter, DurableJournal
from .exceptions import ConfigError

COMMAND = "cmd:"
LETTER = "dlq:"


class LocalStorage:
    """Durable state of a `QueueManager`, kept in ``directory/<name>.journal``."""

    def __init__(
        self, directory: str | os.PathLike[str], name: str = "lanes", dead_letter_limit: int = 1000
    ) -> None:
        if not name or "/" in name or name in (".", ".."):
            raise ConfigError(f"invalid storage name: {name!r}")
        _checks.unicode_text(name, "storage name")  # (before it is part of a path)
        if dead_letter_limit < 0:
            raise ConfigError(f"invalid dead_letter_limit: {dead_letter_limit} (must be >= 0)")
        self.path = Path(directory) / f"{name}.journal"
        self._name = name
        self._limit = dead_letter_limit
        self._journal: DurableJournal | None = None
        self._opening: asyncio.Future[None] | None = None
        self._commands: list[tuple[str, str, str, Any]] = []
        self._letters: list[DeadLetter] = []
        self._letter_keys: deque[str] = deque()
        self._live: set[str] = set()  # every key the journal holds (for clear_all)

    async def open(self) -> None:
        """Opens the journal (once) and loads what it holds."""
        if self._journal is not None:
            return
        journal = await asyncio.to_thread(DurableJournal, self.path, f"lanes:{self._name}")
        for key, value in journal.take_entries():
            self._live.add(key)
            record = json.loads(value)
            if key.startswith(COMMAND):
                self._commands.append((key, record["lane"], record["name"], record["payload"]))
            elif key.startswith(LETTER):
                self._letter_keys.append(key)
                self._letters.append(DeadLetter(**record))
        self._journal = journal

    def pending_commands(self) -> list[tuple[str, str, str, Any]]:
        """Stored commands not yet finished, oldest first: (key, lane_id, name, payload).
        Handed out once, to the manager that replays them."""
        commands, self._commands = self._commands, []
        return commands

    def dead_letters(self) -> list[DeadLetter]:
        """Stored dead letters, oldest first."""
        letters, self._letters = self._letters, []
        return letters

    def _require(self) -> DurableJournal:
        if self._journal is None:
            raise RuntimeError("LocalStorage is not open")
        return self._journal

    async def store_command(self, lane_id: str, name: str, payload: Any) -> str:
        """Writes a command and returns its key once it is on disk."""
        try:
            body = json.dumps({"lane": lane_id, "name": name, "payload": payload}, allow_nan=False)
        except (TypeError, ValueError) as error:
            raise TypeError(f"payload of {name!r} is not JSON-serialisable: {error}") from None
        key = f"{COMMAND}{uuid.uuid4().hex}"
        await self._require().put(key, body)
        self._live.add(key)
        return key

    async def forget(self, key: str) -> None:
        """Deletes a stored command (it finished): it no longer runs at the next start."""
        await self._require().delete(key)
        self._live.discard(key)

    async def bury(self, key: str | None, letter: DeadLetter | None) -> None:
        """Replaces a stored command by its dead letter, in one atomic write, dropping the
        oldest stored letters past the limit. ``key`` None: keeps the letter of a command that
        was never stored (an ad-hoc one)."""
        ops: list[tuple[str, str | None]] = [] if key is None else [(key, None)]
        if letter is not None and self._limit > 0:
            letter_key = f"{LETTER}{uuid.uuid4().hex}"
            record = {
                "command_id": letter.command_id,
                "command_type": letter.command_type,
                "lane_id": letter.lane_id,
                "error": letter.error,
                "attempts": letter.attempts,
                "failed_at": letter.failed_at,
            }
            ops.append((letter_key, json.dumps(record)))
            self._letter_keys.append(letter_key)
            while len(self._letter_keys) > self._limit:
                ops.append((self._letter_keys.popleft(), None))
        await self._require().apply(ops)
        for op_key, value in ops:
            if value is None:
                self._live.discard(op_key)
            else:
                self._live.add(op_key)

    async def clear_all(self) -> None:
        """Deletes every stored command and dead letter, in one atomic write."""
        journal = self._require()
        ops: list[tuple[str, str | None]] = [(key, None) for key in sorted(self._live)]
        if ops:
            await journal.apply(ops)
        self._live.clear()
        self._commands = []
        self._letters = []
        self._letter_keys.clear()

    def close(self) -> None:
        """Releases the file and its lock."""
        if self._journal is not None:
            self._journal.close()
            self._journal = None
