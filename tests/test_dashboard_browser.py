"""The dashboard in a real headless browser: Debian's Chromium (/usr/bin/chromium, which
scripts/test installs), driven by Playwright, against ``lanemq dashboard`` run as a
subprocess. It follows what an operator does: the overview's counts, the failed jobs, one
job's page, Retry, and the job waiting again. Every wait is bounded."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Coroutine, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import pytest
from dashboard_support import failed_job, serve
from lanemq import LocalJobQueue
from playwright.sync_api import Browser, Page, expect, sync_playwright

CHROMIUM = "/usr/bin/chromium"
STEP_MS = 10_000  # upper bound for one browser step; never reached when things work
T = TypeVar("T")


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"{CHROMIUM} is missing: scripts/test installs it (apt-get install chromium)")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, timeout=30_000)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    made = browser.new_page(viewport={"width": 1200, "height": 800})
    made.set_default_timeout(STEP_MS)
    made.set_default_navigation_timeout(STEP_MS)
    try:
        yield made
    finally:
        made.close()


async def fill(directory: Path) -> str:
    """A queue ``q`` with one failed job (its id is returned) and two waiting ones, and the
    metrics of jobs finished over the last minutes (as a worker records them)."""
    queue = LocalJobQueue("q", directory)
    job = await failed_job(queue, data={"to": "ann@example.com"}, reason="SMTPError: 421")
    await queue.add("send", {"to": "bob@example.com"})
    await queue.add("send", {"to": "cy@example.com"})
    minute = int(time.time() * 1000) // 60_000 * 60_000
    await queue.record_metrics("completed", [(minute - 60_000 * i, 3) for i in (4, 2, 1)], 60)
    await queue.record_metrics("failed", [(minute, 1)], 60)
    await queue.close()
    return job.id


async def state_of(directory: Path, job_id: str) -> str:
    queue = LocalJobQueue("q", directory)
    try:
        return await queue.get_state(job_id)
    finally:
        await queue.close()


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    """Runs ``coroutine`` to the end in a thread of its own: Playwright's sync API keeps an
    event loop running in this one."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result(timeout=STEP_MS / 1000)


def test_an_operator_retries_a_failed_job(tmp_path: Path, page: Page) -> None:
    data = tmp_path / "data"
    job_id = run(fill(data))
    with serve(f"local:{data}", "--queue", "q", cwd=tmp_path) as server:
        page.goto(server.url + "/")
        row = page.locator('tr[data-queue="q"]')
        expect(row.locator('[data-state="waiting"]')).to_have_text("2")
        expect(row.locator('[data-state="failed"]')).to_have_text("1")

        # The charts are drawn by the page's script: a bar per minute with jobs.
        page.goto(server.url + "/queues/q")
        chart = page.locator("section.chart svg")
        expect(chart.locator("rect.bar-completed")).to_have_count(3)
        expect(chart.locator("rect.bar-failed")).to_have_count(1)

        page.go_back()
        row.locator('[data-state="failed"]').click()
        expect(page.locator("h1")).to_contain_text("jobs of q")
        page.locator(f'tr[data-job="{job_id}"] td a').first.click()
        expect(page.locator("dd.job-state")).to_have_text("failed")
        expect(page.locator("pre.error-text")).to_have_text("SMTPError: 421")

        shot = page.screenshot(full_page=True, timeout=STEP_MS)
        assert shot.startswith(b"\x89PNG\r\n\x1a\n") and len(shot) > 1000

        page.get_by_role("button", name="Retry").click()
        expect(page.locator("dd.job-state")).to_have_text("waiting")
        expect(page.locator("p.notice")).to_have_text("The job is waiting again.")
        # The notice is shown once: the script took it out of the address.
        assert "done=" not in page.url
    assert run(state_of(data, job_id)) == "waiting"


def test_an_operator_searches_by_data_and_opens_a_job(tmp_path: Path, page: Page) -> None:
    data = tmp_path / "data"
    job_id = run(fill(data))
    with serve(f"local:{data}", "--queue", "q", cwd=tmp_path) as server:
        page.goto(server.url + "/queues/q")
        box = page.get_by_role("search")
        box.get_by_label("Search").fill("to=bob@example.com")
        box.get_by_role("button", name="Search").click()
        expect(page.locator("h1")).to_contain_text("Search the jobs of q")
        rows = page.locator("table.search-results tbody tr")
        expect(rows).to_have_count(1)
        expect(rows.first.locator("td").nth(1)).to_have_text("send")

        # By id, in the failed jobs only, and on to the job's page.
        page.get_by_label("Search").fill(job_id)
        page.get_by_label("in").select_option("failed")
        page.get_by_role("button", name="Search").click()
        expect(rows).to_have_count(1)
        rows.first.locator("td a").first.click()
        expect(page.locator("dd.job-state")).to_have_text("failed")


async def add_jobs(directory: Path, count: int) -> None:
    queue = LocalJobQueue("q", directory)
    try:
        await queue.add_bulk([("send", {"n": n}) for n in range(count)])
    finally:
        await queue.close()


def test_the_counts_move_without_a_reload(tmp_path: Path, page: Page) -> None:
    """The overview's counts, a queue page's and a job list's total."""
    data = tmp_path / "data"
    run(fill(data))
    with serve(f"local:{data}", "--queue", "q", cwd=tmp_path) as server:
        for path, waiting in (
            ("/", page.locator('tr[data-queue="q"] [data-state="waiting"]')),
            ("/queues/q", page.locator('table.counts [data-state="waiting"]')),
            ("/queues/q/jobs/waiting", page.locator('h1 [data-state="waiting"]')),
        ):
            page.goto(server.url + path)
            before = int(waiting.inner_text())
            # A marker of this very document: a reload would lose it.
            page.evaluate("window.lanemqMarker = 'this document'")
            run(add_jobs(data, 3))
            expect(waiting).to_have_text(str(before + 3))
            assert page.evaluate("window.lanemqMarker") == "this document", path


PHONE = {"width": 390, "height": 844}


def test_the_pages_fit_a_phone(tmp_path: Path, browser: Browser) -> None:
    data = tmp_path / "data"
    job_id = run(fill(data))
    context = browser.new_context(
        viewport=PHONE, is_mobile=True, has_touch=True, device_scale_factor=2
    )
    phone = context.new_page()
    phone.set_default_timeout(STEP_MS)
    try:
        with serve(f"local:{data}", "--queue", "q", cwd=tmp_path) as server:
            for path in (
                "/",
                "/queues/q",
                "/queues/q/jobs/failed",
                f"/queues/q/job/{job_id}",
                "/queues/q/search?q=send",
            ):
                phone.goto(server.url + path)
                expect(phone.locator("main h1")).to_be_visible()
                # A phone's browser widens the page to its content (window.innerWidth
                # grows with it): nothing may stick out of the phone's own width.
                widths = phone.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
                assert widths == [PHONE["width"], PHONE["width"]], (path, widths)
                expect(phone.locator("header.top a.brand")).to_be_in_viewport()

            # The nav's links are there to tap: from the job's page to its queue, then home.
            phone.goto(f"{server.url}/queues/q/job/{job_id}")
            crumb = phone.locator("nav.crumbs a", has_text="q").first
            expect(crumb).to_be_in_viewport()
            crumb.tap()
            expect(phone.locator("main h1")).to_contain_text("q")
            assert phone.url == f"{server.url}/queues/q"
            phone.locator("header.top a.brand").tap()
            expect(phone.locator("main h1")).to_have_text("Queues")
    finally:
        context.close()
