"""Typed options and submits: mypy --strict accepts correct uses (typed_ok.py) and reports a
misspelt option or a wrong argument, so a typo fails in the editor and in CI, not in
production. The run-time side: the same mistakes raise, and nothing is added."""

from __future__ import annotations

import inspect
import re
import textwrap
import typing
from collections.abc import Callable
from pathlib import Path
from typing import TypedDict

import lanemq
import mypy.api
import pytest
from lanemq import InMemoryJobQueue, Job, JobOptions, JobQueue, JobWorker
from lanemq.sync import SyncQueue

HERE = Path(__file__).parent

PRELUDE = """\
from __future__ import annotations

from typing import TypedDict

from lanemq import InMemoryJobQueue, Job, JobOptions, QueueManager
from lanemq.sync import InMemoryJobQueue as SyncMemoryQueue


async def cancel_session(session_id: str, *, force: bool = False) -> int:
    return 1


def render(template: str, count: int) -> str:
    return template * count


class EmailData(TypedDict):
    to: str


class SendResult(TypedDict):
    message_id: str


async def main(
    queue: InMemoryJobQueue, manager: QueueManager, sent: Job[EmailData, SendResult]
) -> None:
    sync_queue = SyncMemoryQueue("q")
    print(sync_queue)
"""

#: (name, the line mypy must refuse, a fragment of its message)
MISTAKES = [
    ("add-misspelt", 'await queue.add("send", {}, priorty=1)', 'argument "priorty"'),
    ("add-wrong-type", 'await queue.add("send", {}, delay="5s")', 'Argument "delay" to "add"'),
    ("sync-add-misspelt", 'sync_queue.add("send", {}, atempts=3)', 'argument "atempts"'),
    (
        "bulk-misspelt",
        'await queue.add_bulk([("a", 1, JobOptions(priorty=1))])',
        'argument "priorty" for "JobOptions"',
    ),
    ("bulk-shape", 'await queue.add_bulk([("a", 1, 2, 3)])', 'type "tuple[str, int, int, int]"'),
    ("submit-arg-type", 'await manager.submit("control", cancel_session, 42)', "submit"),
    (
        "submit-misspelt-kwarg",
        'await manager.submit("control", cancel_session, "s", forse=True)',
        'argument "forse"',
    ),
    ("submit-missing-arg", 'manager.submit_nowait("query", render, "ab")', "submit_nowait"),
    (
        "submit-result-type",
        'text: str = await manager.submit("control", cancel_session, "s")',
        "submit",  # (the command returns an int)
    ),
    # A job is typed by its data (from add) and its result (from an annotation).
    (
        "job-data-type",
        'count: int = (await queue.add("send", EmailData(to="a"))).data',
        'expression has type "EmailData", variable has type "int"',
    ),
    ("job-data-key", 'await queue.add("send", EmailData(too="a"))', '"too"'),
    ("job-data-field", 'print(sent.data["from"])', '"from"'),
    (
        "job-result-type",
        "text: str = await sent.wait()",
        'expression has type "SendResult", variable has type "str"',
    ),
    ("job-update-data", 'await sent.update_data({"to": 1})', '"to" has type "str"'),
    (
        "sync-job-data-type",
        'count: int = sync_queue.add("send", EmailData(to="a")).data',
        'expression has type "EmailData", variable has type "int"',
    ),
]


def _errors(output: str) -> dict[tuple[str, int], list[str]]:
    """mypy's error lines, by (file name, line)."""
    found: dict[tuple[str, int], list[str]] = {}
    for match in re.finditer(r"^(.+?):(\d+): error: (.*)$", output, re.MULTILINE):
        found.setdefault((Path(match[1]).name, int(match[2])), []).append(match[3])
    return found


def test_mypy_accepts_correct_uses_and_reports_each_mistake(tmp_path: Path) -> None:
    files = [str(HERE / "typed_ok.py")]
    expected: dict[str, tuple[int, str]] = {}
    for name, mistake, fragment in MISTAKES:
        source = PRELUDE + textwrap.indent(mistake, "    ") + "\n"
        path = tmp_path / f"mistake_{name.replace('-', '_')}.py"
        path.write_text(source)
        files.append(str(path))
        expected[path.name] = (source.count("\n"), fragment)
    config = tmp_path / "mypy.ini"
    config.write_text("[mypy]\n")  # not the project's: the flags below are the whole setup
    stdout, stderr, status = mypy.api.run(
        [
            "--config-file",
            str(config),
            "--strict",
            "--python-version",
            "3.10",
            "--cache-dir",
            str(tmp_path / "mypy-cache"),
            "--no-color-output",
            "--no-error-summary",
            *files,
        ]
    )
    assert stderr == "", stderr
    errors = _errors(stdout)
    assert [key for key in errors if key[0] == "typed_ok.py"] == [], stdout
    for file_name, (line, fragment) in expected.items():  # one error, on the mistake's line
        at_file = {key: messages for key, messages in errors.items() if key[0] == file_name}
        assert list(at_file) == [(file_name, line)], f"{file_name}: {stdout}"
        messages = at_file[(file_name, line)]
        assert any(fragment in message for message in messages), (file_name, fragment, messages)
    assert status == 1


# ------------------------------------------------------------------ run time


def test_sync_add_has_the_signature_of_the_async_add() -> None:
    def shape(fn: Callable[..., object]) -> list[tuple[str, object, object]]:
        params = list(inspect.signature(fn).parameters.values())[1:]  # (without self)
        return [(p.name, p.kind, p.default) for p in params]

    assert shape(SyncQueue.add) == shape(JobQueue.add)


def test_keyword_defaults_are_the_job_options_defaults() -> None:
    params = inspect.signature(JobQueue.add).parameters.values()
    # (``repeat`` is no job option: it makes a job scheduler instead of the job; ``parent``
    # names the job's parent, which only a flow step writes into its options)
    not_options = ("now", "repeat", "parent")
    defaults = {
        p.name: p.default for p in params if p.kind is p.KEYWORD_ONLY and p.name not in not_options
    }
    assert len(defaults) == 14
    assert JobOptions(**defaults) == JobOptions()


async def test_option_mistakes_raise_at_run_time_and_add_nothing() -> None:
    queue = InMemoryJobQueue("typed")
    with pytest.raises(TypeError, match="priorty"):
        await queue.add("send", {}, priorty=1)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="either as JobOptions or as keywords"):
        await queue.add("send", {}, JobOptions(priority=2), priority=3)
    with pytest.raises(TypeError, match="multiple values for keyword argument 'priority'"):
        await queue.add("send", {}, {"priority": 2}, priority=3)
    assert await queue.count_pending() == 0
    # A dict merges with keywords; JobOptions with keywords left at their defaults is fine.
    merged = await queue.add("send", {}, {"delay": 5.0}, priority=3)
    assert (merged.priority, merged.state) == (3, "delayed")
    plain = await queue.add("send", {}, JobOptions(attempts=4), priority=0, lifo=False)
    assert plain.options.attempts == 4
    flow_option = await queue.add("send", {}, {"parent_policy": "ignore_dependency_on_failure"})
    assert flow_option.options.parent_policy == "ignore_dependency_on_failure"
    assert lanemq.JobOptions() == (await queue.add("send", {})).options


class EmailData(TypedDict):
    to: str


class SendResult(TypedDict):
    message_id: str


async def test_a_typed_processor_runs_and_its_annotations_resolve() -> None:
    queue = InMemoryJobQueue("typed")
    worker = JobWorker(queue)

    @worker.processor("send")
    async def send(job: Job[EmailData, SendResult]) -> SendResult:
        return {"message_id": f"id-{job.data['to']}"}

    job = await queue.add("send", EmailData(to="ops"))
    assert await worker.run_until_idle() == 1
    assert await job.wait(timeout=5) == {"message_id": "id-ops"}
    hints = typing.get_type_hints(send)  # (the subscripted Job exists at run time)
    assert hints["job"] == Job[EmailData, SendResult]
    assert typing.get_args(hints["job"]) == (EmailData, SendResult)
