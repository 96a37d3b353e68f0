"""Worker targets: ``module.path:attr`` names a `JobWorker`, a list of them, or a zero-argument
function (sync or async) returning either; a TOML config file lists targets with optional
concurrencies. Every problem is a `click.UsageError` (exit code 2) naming the target."""

from __future__ import annotations

import importlib
import inspect
import logging
import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from ..worker import JobWorker

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the 3.10 fallback
    import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]

log = logging.getLogger("lanemq.cli")

CONFIG_KEYS = ("target", "concurrency")


@dataclass(frozen=True)
class Target:
    """One ``module.path:attr``, with the concurrency to give its workers (None: their own)
    and where it was named, for messages."""

    spec: str
    concurrency: int | None = None
    origin: str = ""

    def error(self, problem: str) -> click.UsageError:
        where = f" ({self.origin})" if self.origin else ""
        return click.UsageError(f"target {self.spec!r}{where}: {problem}")


def importable_cwd() -> None:
    """Puts the current directory first on ``sys.path``, as ``python -m`` does, so targets in
    the project the command runs from import without installing it."""
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)


def read_config(path: Path) -> list[Target]:
    """The targets of a config file::

        [[workers]]
        target = "app.jobs:email_worker"
        concurrency = 20            # optional

    Unknown keys are refused, so a typo does not go unnoticed."""
    origin = f"in {path}"
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise click.UsageError(f"cannot read config file {str(path)!r}: {error}") from None
    extra = sorted(set(document) - {"workers"})
    if extra:
        raise click.UsageError(
            f"config file {str(path)!r}: unknown key {extra[0]!r} (use [[workers]])"
        )
    entries = document.get("workers")
    if not isinstance(entries, list) or not entries:
        raise click.UsageError(
            f"config file {str(path)!r} names no targets: add [[workers]] tables with a target"
        )
    targets = []
    for number, entry in enumerate(entries, 1):
        where = f"config file {str(path)!r}, [[workers]] #{number}"
        if not isinstance(entry, dict):
            raise click.UsageError(f'{where}: expected a table with target = "module:attr"')
        unknown = sorted(set(entry) - set(CONFIG_KEYS))
        if unknown:
            raise click.UsageError(
                f"{where}: unknown key {unknown[0]!r} (keys: {', '.join(CONFIG_KEYS)})"
            )
        spec = entry.get("target")
        if not isinstance(spec, str):
            raise click.UsageError(f'{where}: target must be a string "module:attr"')
        concurrency = entry.get("concurrency")
        if concurrency is not None and (
            isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1
        ):
            raise click.UsageError(
                f"{where}: concurrency must be an integer >= 1, got {concurrency!r}"
            )
        targets.append(Target(spec, concurrency, origin))
    return targets


def import_target(target: Target) -> Any:
    """The object ``target`` names."""
    module_name, colon, attr_path = target.spec.partition(":")
    if not colon or not module_name or not attr_path:
        raise target.error("expected 'module.path:attribute'")
    try:
        value: Any = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        missing = error.name or ""
        if module_name == missing or module_name.startswith(missing + "."):
            raise target.error(
                f"no module named {missing!r} (the current directory, {os.getcwd()}, and "
                "the installed packages were searched)"
            ) from None
        log.error("importing %s failed", module_name, exc_info=True)
        raise target.error(f"importing {module_name!r} failed: {error}") from None
    except Exception as error:
        log.error("importing %s failed", module_name, exc_info=True)
        raise target.error(f"importing {module_name!r} raised {describe_error(error)}") from None
    for part in attr_path.split("."):
        try:
            value = getattr(value, part)
        except AttributeError:
            raise target.error(f"{module_name!r} has no attribute {attr_path!r}") from None
    return value


def _workers(value: Any) -> list[JobWorker] | None:
    """``value`` as a non-empty list of workers, or None if it is not one."""
    if isinstance(value, JobWorker):
        return [value]
    if isinstance(value, list | tuple) and value and all(isinstance(w, JobWorker) for w in value):
        return list(value)
    return None


async def workers_of(target: Target) -> list[JobWorker]:
    """The workers ``target`` names (a factory is called, and awaited if async)."""
    value = import_target(target)
    found = _workers(value)
    if found is not None:
        return found
    if not callable(value):
        raise target.error(
            f"is {kind_of(value)}; expected a JobWorker, a list of them, or a function "
            "without arguments that returns one"
        )
    if needs_arguments(value):
        # Likely a processor (``async def send(job)``) named by mistake: say so rather than
        # call it and report its TypeError.
        raise target.error(
            "is a function that takes arguments; name a JobWorker, a list of them, or a "
            "function without arguments that returns one (a processor is registered on a "
            "JobWorker, not run by itself)"
        )
    try:
        made = value()
        if inspect.isawaitable(made):
            made = await made
    except Exception as error:
        log.error("calling %s failed", target.spec, exc_info=True)
        raise target.error(f"calling it raised {describe_error(error)}") from None
    found = _workers(made)
    if found is None:
        raise target.error(f"returned {kind_of(made)}; expected a JobWorker or a list of them")
    return found


async def resolve(targets: Iterable[Target], concurrency: int | None) -> list[JobWorker]:
    """The workers of every target, each once (a target or worker named twice is wired
    once), their concurrency set to the target's own, else ``concurrency`` (None: kept)."""
    seen_specs: dict[str, Target] = {}
    chosen: dict[int, tuple[JobWorker, int | None, Target]] = {}
    for target in targets:
        earlier = seen_specs.get(target.spec)
        if earlier is not None:
            if earlier.concurrency != target.concurrency:
                raise target.error(
                    f"named twice with different concurrencies ({earlier.concurrency} and "
                    f"{target.concurrency})"
                )
            continue
        seen_specs[target.spec] = target
        wanted = target.concurrency if target.concurrency is not None else concurrency
        for worker in await workers_of(target):
            found = chosen.get(id(worker))
            if found is not None and found[1] != wanted:
                raise target.error(
                    f"worker {worker.id} is also named by {found[2].spec!r}, with another "
                    f"concurrency ({found[1]} and {wanted})"
                )
            chosen.setdefault(id(worker), (worker, wanted, target))
    workers = []
    for worker, wanted, _ in chosen.values():
        if wanted is not None:
            worker.concurrency = wanted
        workers.append(worker)
    return workers


def needs_arguments(value: Any) -> bool:
    """Whether calling ``value`` without arguments cannot work (a required parameter)."""
    try:
        parameters = inspect.signature(value).parameters.values()
    except (TypeError, ValueError):  # no signature to read (some builtins): just call it
        return False
    named = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return any(
        p.default is p.empty and p.kind in (*named, inspect.Parameter.KEYWORD_ONLY)
        for p in parameters
    )


def kind_of(value: Any) -> str:
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{text} (type {type(value).__name__})"


def describe_error(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
