"""Every ```python block of the documentation site's pages (docs/**/*.md) runs as a complete
program, by the README's rules (tests/snippet_support.py): an example of the guide is one a
reader can copy. Blocks are collected from the files, so a new page is tested as it lands."""

from __future__ import annotations

from pathlib import Path

import pytest
from snippet_support import ROOT, Snippet, compile_snippet, run_snippet, snippets_of

PAGES = sorted((ROOT / "docs").rglob("*.md"))
SNIPPETS = [snippet for page in PAGES for snippet in snippets_of(page)]
RUNNABLE = [snippet for snippet in SNIPPETS if snippet.runs]


def test_the_guide_pages_have_runnable_snippets() -> None:
    # Guards the collection below: a page whose examples stopped being found would test nothing.
    pages = {snippet.source for snippet in RUNNABLE}
    assert {
        "docs/index.md",
        "docs/guide/concepts.md",
        "docs/guide/backends.md",
        "docs/guide/workers.md",
        "docs/guide/deployment.md",
        "docs/guide/observability.md",
        "docs/guide/flows.md",
        "docs/guide/schedulers.md",
        "docs/guide/groups.md",
        "docs/guide/lanes.md",
        "docs/guide/migrating/bullmq.md",
        "docs/guide/migrating/celery.md",
        "docs/guide/migrating/arq.md",
    } <= pages


@pytest.mark.parametrize("snippet", RUNNABLE, ids=[snippet.name for snippet in RUNNABLE])
def test_snippet_runs(snippet: Snippet, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    run_snippet(snippet, tmp_path, lambda: str(request.getfixturevalue("redis_url")))


def test_no_run_snippets_compile() -> None:
    for snippet in SNIPPETS:
        if not snippet.runs:
            compile_snippet(snippet)
