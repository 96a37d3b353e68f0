"""The import paths users and modules rely on keep working after a module moves into a package
(issue 28: `lanemq.queue` into `lanemq.jobs`, and the others that move the same way): every
public name of `lanemq`, every module path the package has had, and every name of
`lanemq.queue`, each the same object as where it now lives."""

from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path

import lanemq
import lanemq.jobs
import lanemq.queue
import pytest

PACKAGE = Path(lanemq.__file__).resolve().parent

# Every module of the package before issue 28 (the extension aside): each must still import.
# The private modules of the worker and the lanes (`_worker_*`, `_handle`, `_metrics_feed`)
# moved into `lanemq.worker` and `lanemq.lanes` without a stub: nothing outside the package
# imported them.
MODULE_PATHS = """
lanemq lanemq._checks lanemq._hub lanemq._json
lanemq._redis_url lanemq._results lanemq._retry_failed lanemq._tracing lanemq.cli
lanemq.cli.dashboard_command lanemq.cli.logs lanemq.cli.metrics lanemq.cli.output
lanemq.cli.queue_commands lanemq.cli.queue_views lanemq.cli.queues_command lanemq.cli.targets
lanemq.cli.worker_command lanemq.dashboard lanemq.dashboard._actions lanemq.dashboard._app
lanemq.dashboard._hosts lanemq.dashboard._pages lanemq.dashboard._render
lanemq.dashboard._security lanemq.dashboard._source lanemq.events lanemq.exceptions
lanemq.flows lanemq.job lanemq.lanes lanemq.metrics_sink lanemq.monitor lanemq.observe
lanemq.otel lanemq.otel_metrics_sink lanemq.prometheus lanemq.queue lanemq.schedulers
lanemq.storage lanemq.sync lanemq.urls lanemq.worker
""".split()

# The names `lanemq.queue` had (its `__all__`, and those other modules import from it).
QUEUE_NAMES = [
    "STATES",
    "BulkItem",
    "InMemoryJobQueue",
    "JobQueue",
    "JobResult",
    "LocalJobQueue",
    "LocalSync",
    "MemoryGroup",
    "QueueEvent",
    "QueueStats",
    "RedisJobQueue",
    "_LOCAL_SYNCS",
    "_local_queues",
    "_redis_queues",
]

# `JobQueue`'s public methods and properties before the split: the parts must add up to them.
JOB_QUEUE_API = """
add add_bulk add_flow add_log claim clean clear_logs clear_rate_limit close complete
complete_and_claim complete_many count_pending count_schedulers drain events fail fail_many
finished_result get_children_values get_counts_per_priority get_deduplication_job_id
get_deduplication_ttl get_dependencies get_dependencies_count get_ignored_children_failures
get_job get_job_count get_job_counts get_log_entries get_logs get_max_active get_metrics
get_rate_limit
get_rate_limit_ttl get_scheduler get_state get_stats get_workers heartbeat_worker is_maxed
is_paused list_jobs list_jobs_with_total list_queues list_schedulers max_payload_bytes
move_to_delayed obliterate pause promote promote_due promote_jobs publish_event rate_limit
read_events record_metrics recover_stalled release remote remove remove_child_dependency
remove_deduplication_key remove_orphaned_jobs remove_rate_limit_key remove_scheduler
remove_unprocessed_children remove_worker renew renew_many reschedule resume retry_job
save_stacktrace set_max_active set_rate_limit sibling trim_events update_data update_priority
update_progress upsert_scheduler wait_and_claim wait_for_job wait_reachable
cancel cancel_group count_groups delay_job get_group_counts get_group_defaults get_group_limits
is_group_paused list_groups pause_group remove_group resume_group set_group_defaults
last_cancel_seq wait_cancels
set_group_limits
remove_jobs search_jobs
""".split()


@pytest.mark.parametrize("path", MODULE_PATHS)
def test_every_module_path_still_imports(path: str) -> None:
    assert importlib.import_module(path).__name__ == path


def test_python_dash_m_lanemq_still_finds_its_main() -> None:
    # (found, not imported: importing it runs the command)
    assert importlib.util.find_spec("lanemq.__main__") is not None


@pytest.mark.parametrize("name", lanemq.__all__)
def test_every_public_name_of_lanemq_imports(name: str) -> None:
    namespace: dict[str, object] = {}
    exec(f"from lanemq import {name}", namespace)
    assert namespace[name] is getattr(lanemq, name)


@pytest.mark.parametrize("name", QUEUE_NAMES)
def test_every_name_of_lanemq_queue_is_the_one_in_lanemq_jobs(name: str) -> None:
    moved = getattr(lanemq.jobs, name, None)
    if moved is None:  # (the private registries live in their backend's module)
        moved = next(
            getattr(importlib.import_module(f"lanemq.jobs.{m}"), name)
            for m in ("local", "redis")
            if hasattr(importlib.import_module(f"lanemq.jobs.{m}"), name)
        )
    assert getattr(lanemq.queue, name) is moved


def test_lanemq_exports_the_queue_classes_of_lanemq_jobs() -> None:
    for name in lanemq.jobs.__all__:
        if name in lanemq.__all__:
            assert getattr(lanemq, name) is getattr(lanemq.jobs, name)


def test_job_queue_keeps_its_public_methods() -> None:
    public = sorted(n for n in dir(lanemq.JobQueue) if not n.startswith("_"))
    assert public == sorted(JOB_QUEUE_API)


def test_no_module_of_the_jobs_package_is_over_500_lines() -> None:
    for path in [*sorted((PACKAGE / "jobs").glob("*.py")), PACKAGE / "queue.py"]:
        lines = len(path.read_text().splitlines())
        assert lines <= 500, f"{path.name}: {lines} lines"
