"""Scraping a Prometheus endpoint over real HTTP and reading the samples back with
prometheus-client's own parser."""

from __future__ import annotations

import asyncio
import urllib.request
from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families

SCRAPE_WAIT = 10.0  # upper bound for one scrape; never reached when things work


@dataclass(frozen=True)
class Scrape:
    """The samples of one scrape: ``(sample name, labels)`` -> value."""

    samples: dict[tuple[str, frozenset[tuple[str, str]]], float]

    def value(self, metric: str, /, **labels: str) -> float | None:
        """The sample with exactly these labels, or None if there is none."""
        return self.samples.get((metric, frozenset(labels.items())))

    def total(self, metric: str, /, **labels: str) -> float:
        """The sum of the samples called ``metric`` whose labels include ``labels``."""
        wanted = set(labels.items())
        return sum(v for (n, have), v in self.samples.items() if n == metric and wanted <= have)

    def names(self) -> set[str]:
        return {name for name, _ in self.samples}


def scrape_now(url: str) -> Scrape:
    with urllib.request.urlopen(url, timeout=SCRAPE_WAIT) as response:
        text = response.read().decode()
    samples = {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }
    return Scrape(samples)


async def scrape(url: str) -> Scrape:
    """GETs ``url`` (``http://host:port/metrics``) from a thread, so the event loop, which
    the endpoint's collector does not need, goes on meanwhile."""
    return await asyncio.to_thread(scrape_now, url)
