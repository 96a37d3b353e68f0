"""Running the ```python blocks of Markdown files as programs: what a reader copies from the
README or from a page of the documentation site must work as it stands. Used by
tests/test_readme_snippets.py and tests/test_guide_snippets.py, which collect the blocks when
the tests are collected, so a new section's snippet is tested without any change there.

A snippet runs as ``python snippet.py`` in a fresh directory, with ``LANEMQ_REDIS_URL`` set to
the test redis-server when it mentions that variable, and must exit with status 0 (no
top-level ``await``: wrap the code in ``async def main()`` and ``asyncio.run(main())``). A
fragment that cannot run on its own is marked ```python no-run (sparingly): it is then only
compiled, so it still has to be valid Python."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUN_WAIT = 60.0  # upper bound for a snippet to finish; never reached when things work
FENCE = re.compile(r"^ {0,3}(`{3,})(.*)$")


@dataclass(frozen=True)
class Snippet:
    source: str  # the Markdown file, relative to the repository: "docs/guide/workers.md"
    line: int  # of the opening fence
    section: str  # the heading it is under
    code: str
    flags: tuple[str, ...]  # the words after the language: "no-run"

    @property
    def runs(self) -> bool:
        return "no-run" not in self.flags

    @property
    def name(self) -> str:
        """The test id: where the block is, file and line, then its section."""
        slug = re.sub(r"[^a-z0-9]+", "-", self.section.lower()).strip("-")
        return f"{self.source}:{self.line}:{slug}"


def python_blocks(text: str, source: str) -> list[Snippet]:
    """The ```python (or ```py) blocks of a Markdown text, with the heading above each."""
    found: list[Snippet] = []
    section = "top"
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if opening is None:
            if lines[index].startswith("#"):
                section = lines[index].lstrip("#").strip()
            index += 1
            continue
        fence, info = opening[1], opening[2].split()
        body: list[str] = []
        index += 1
        while index < len(lines) and not lines[index].strip().startswith(fence):
            body.append(lines[index])
            index += 1
        start = index - len(body)  # 1-based line of the opening fence
        if index == len(lines):
            # (a line of prose that starts with backticks opens a fence that hides every block
            # after it, from the reader and from these tests alike)
            raise ValueError(f"{source}:{start}: a fence that is never closed")
        if info and info[0] in ("python", "py"):
            code = "\n".join(body) + "\n"
            found.append(Snippet(source, start, section, code, tuple(info[1:])))
        index += 1  # past the closing fence
    return found


def snippets_of(path: Path) -> list[Snippet]:
    """The Python blocks of one Markdown file of the repository."""
    return python_blocks(path.read_text(encoding="utf-8"), path.relative_to(ROOT).as_posix())


def run_snippet(snippet: Snippet, workdir: Path, redis_url: Callable[[], str]) -> None:
    """Runs a block as ``python snippet.py`` in `workdir` and fails the test, with its stderr,
    unless it exits 0 without a traceback. `redis_url` is called (starting the test server)
    only for a block that mentions ``LANEMQ_REDIS_URL``."""
    script = workdir / "snippet.py"
    script.write_text(snippet.code, encoding="utf-8")
    env = None
    if "LANEMQ_REDIS_URL" in snippet.code:
        env = {**os.environ, "LANEMQ_REDIS_URL": redis_url()}
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=workdir,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=RUN_WAIT,
    )
    assert done.returncode == 0, f"{snippet.name} failed:\n{done.stderr}"
    assert "Traceback" not in done.stderr, done.stderr


def compile_snippet(snippet: Snippet) -> None:
    """A no-run block must still be valid Python: raises SyntaxError naming file:line."""
    ast.parse(snippet.code, filename=snippet.name)
