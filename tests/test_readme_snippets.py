"""Every ```python block of README.md runs as a complete program: a snippet a user copies must
work as it stands. Blocks are found when the tests are collected, so a new section's snippet
is tested without any change here.

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
from dataclasses import dataclass
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"
RUN_WAIT = 60.0  # upper bound for a snippet to finish; never reached when things work
FENCE = re.compile(r"^ {0,3}(`{3,})(.*)$")


@dataclass(frozen=True)
class Snippet:
    line: int  # of the opening fence
    section: str  # the heading it is under
    code: str
    flags: tuple[str, ...]  # the words after the language: "no-run"

    @property
    def runs(self) -> bool:
        return "no-run" not in self.flags

    @property
    def name(self) -> str:
        slug = re.sub(r"[^a-z0-9]+", "-", self.section.lower()).strip("-")
        return f"README.md:{self.line}:{slug}"


def python_blocks(text: str) -> list[Snippet]:
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
        if info and info[0] in ("python", "py"):
            found.append(Snippet(start, section, "\n".join(body) + "\n", tuple(info[1:])))
        index += 1  # past the closing fence
    return found


SNIPPETS = python_blocks(README.read_text(encoding="utf-8"))
RUNNABLE = [snippet for snippet in SNIPPETS if snippet.runs]


def test_the_readme_has_runnable_snippets() -> None:
    # Guards the collection below: a parser that found nothing would test nothing.
    sections = {snippet.section for snippet in RUNNABLE}
    assert {"Lanes in five minutes", "Jobs in five minutes"} <= sections


def test_python_blocks_are_found_with_their_flags() -> None:
    text = "# A\n```python\nprint(1)\n```\n## B\n```sh\nls\n```\n````python no-run\nx = (\n````\n"
    blocks = python_blocks(text)
    assert [(b.line, b.section, b.code, b.runs) for b in blocks] == [
        (2, "A", "print(1)\n", True),
        (9, "B", "x = (\n", False),
    ]


@pytest.mark.parametrize("snippet", RUNNABLE, ids=[snippet.name for snippet in RUNNABLE])
def test_snippet_runs(snippet: Snippet, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    script = tmp_path / "snippet.py"
    script.write_text(snippet.code, encoding="utf-8")
    env = None
    if "LANEMQ_REDIS_URL" in snippet.code:  # (the server starts only for such snippets)
        env = {**os.environ, "LANEMQ_REDIS_URL": str(request.getfixturevalue("redis_url"))}
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=RUN_WAIT,
    )
    assert done.returncode == 0, f"{snippet.name} failed:\n{done.stderr}"
    assert "Traceback" not in done.stderr, done.stderr


def test_no_run_snippets_compile() -> None:
    for snippet in SNIPPETS:
        if not snippet.runs:
            ast.parse(snippet.code, filename=snippet.name)
