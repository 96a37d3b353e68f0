"""Every ```python block of README.md runs as a complete program (the rules, and the running,
are tests/snippet_support.py's, shared with the documentation site's pages)."""

from __future__ import annotations

from pathlib import Path

import pytest
from snippet_support import ROOT, Snippet, compile_snippet, python_blocks, run_snippet, snippets_of

SNIPPETS = snippets_of(ROOT / "README.md")
RUNNABLE = [snippet for snippet in SNIPPETS if snippet.runs]


def test_the_readme_has_runnable_snippets() -> None:
    # Guards the collection below: a parser that found nothing would test nothing.
    sections = {snippet.section for snippet in RUNNABLE}
    assert {"Lanes in five minutes", "Jobs in five minutes"} <= sections


def test_python_blocks_are_found_with_their_flags() -> None:
    text = "# A\n```python\nprint(1)\n```\n## B\n```sh\nls\n```\n````python no-run\nx = (\n````\n"
    blocks = python_blocks(text, "doc.md")
    assert [(b.line, b.section, b.code, b.runs, b.name) for b in blocks] == [
        (2, "A", "print(1)\n", True, "doc.md:2:a"),
        (9, "B", "x = (\n", False, "doc.md:9:b"),
    ]


def test_a_fence_that_never_closes_is_an_error() -> None:
    # Prose that starts a line with backticks opens a fence: the blocks after it would vanish.
    text = "# A\ntext\n```` ```python no-run ```` in prose\n```python\nx = 1\n```\n"
    with pytest.raises(ValueError, match=r"doc\.md:3: a fence that is never closed"):
        python_blocks(text, "doc.md")


@pytest.mark.parametrize("snippet", RUNNABLE, ids=[snippet.name for snippet in RUNNABLE])
def test_snippet_runs(snippet: Snippet, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    run_snippet(snippet, tmp_path, lambda: str(request.getfixturevalue("redis_url")))


def test_no_run_snippets_compile() -> None:
    for snippet in SNIPPETS:
        if not snippet.runs:
            compile_snippet(snippet)
