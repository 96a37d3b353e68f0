"""The exception tree: one base for every lanemq error, job and lane errors alike, under its
package-wide name `LanemqError`; `LaneError` stays the same class for existing code."""

from __future__ import annotations

import inspect

import lanemq
import pytest
from lanemq import ConfigError, InMemoryJobQueue, LaneError, LanemqError, exceptions


def test_lane_error_is_the_package_base_under_its_first_name() -> None:
    assert LaneError is LanemqError


def test_every_lanemq_exception_derives_from_the_base() -> None:
    classes = [
        value
        for name, value in vars(exceptions).items()
        if inspect.isclass(value) and issubclass(value, BaseException) and not name.startswith("_")
    ]
    assert len(classes) > 15
    assert all(issubclass(cls, LanemqError) for cls in classes), classes
    assert set(exceptions.__all__) <= set(lanemq.__all__)


async def test_a_job_error_from_the_core_is_caught_by_the_base() -> None:
    queue = InMemoryJobQueue("errors")
    with pytest.raises(LanemqError) as caught:
        await queue.add("x", None, priority=-1)
    assert isinstance(caught.value, ConfigError)
