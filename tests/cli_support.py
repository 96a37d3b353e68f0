"""Running ``python -m lanemq`` as a real subprocess in a test's directory."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from lanemq import LocalJobQueue

CLI_WAIT = 60.0  # upper bound for one command; never reached when things work


@dataclass(frozen=True)
class Result:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        assert self.code == 0, f"exit code {self.code}; stderr:\n{self.err}"
        return json.loads(self.out)


async def lanemq(*args: str, cwd: Path, stdin: str = "") -> Result:
    """Runs ``python -m lanemq args...`` in ``cwd`` (``stdin`` as its input) to the end."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "lanemq",
        *args,
        cwd=cwd,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(stdin.encode()), CLI_WAIT)
    except asyncio.TimeoutError:
        proc.kill()
        await proc.wait()
        raise
    assert proc.returncode is not None
    return Result(proc.returncode, out.decode(), err.decode())


#: The local queue the `lanemq queue` tests drive: "email" in ``./data`` of the test's directory.
EMAIL_URL = "local:./data"


@pytest.fixture(name="queue")
async def email_queue(tmp_path: Path) -> AsyncIterator[LocalJobQueue]:
    """The ``queue`` fixture of a module that imports it: that queue, opened through the API."""
    opened = LocalJobQueue("email", tmp_path / "data")
    try:
        yield opened
    finally:
        await opened.close()


async def email_cli(tmp_path: Path, *args: str, stdin: str = "") -> Result:
    """``lanemq queue local:./data email args...`` in the test's directory."""
    return await lanemq("queue", EMAIL_URL, "email", *args, cwd=tmp_path, stdin=stdin)
