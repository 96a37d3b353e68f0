"""Every public name of lanemq has a docstring: each public module, each name in its `__all__`
(or, without one, each public class and function it defines), and the public methods and
properties of each public class, those made in Rust (`lanemq._core`, whose docstrings are the
`///` comments of crates/lanemq-py) included. A method that overrides a documented one keeps
its docstring, as `help()` shows it (`inspect.getdoc`). The API reference (docs/reference/, built by
scripts/doc) shows these docstrings: a name without one is a blank entry there.

The modules are those the reference pages render (their ``::: module`` lines), so a module added
to the reference is checked here without a change, and the test fails naming every name that
lacks a docstring, not only the first."""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import inspect
import re
import types
from collections.abc import Iterator
from pathlib import Path

REFERENCE = Path(__file__).resolve().parent.parent / "docs" / "reference"
RENDERS = re.compile(r"^::: ([\w.]+)\s*$", re.MULTILINE)

# The public modules: each must have a page of the reference (a guard on the collection).
PUBLIC_MODULES = {
    "lanemq",
    "lanemq.dashboard",
    "lanemq.events",
    "lanemq.exceptions",
    "lanemq.flows",
    "lanemq.job",
    "lanemq.jobs",
    "lanemq.lanes",
    "lanemq.lanes.protocols",
    "lanemq.metrics_sink",
    "lanemq.monitor",
    "lanemq.observe",
    "lanemq.otel",
    "lanemq.otel_metrics_sink",
    "lanemq.prometheus",
    "lanemq.schedulers",
    "lanemq.storage",
    "lanemq.sync",
    "lanemq.urls",
    "lanemq.wiring",
    "lanemq.worker",
}


def rendered_modules() -> set[str]:
    """The modules the reference pages render (a ``::: lanemq.jobs.JobQueue`` line renders a
    class, which its module's names cover)."""
    rendered = {m for page in REFERENCE.glob("*.md") for m in RENDERS.findall(page.read_text())}
    return {name for name in rendered if importlib.util.find_spec(name) is not None}


def public_names(module: types.ModuleType) -> list[str]:
    declared = getattr(module, "__all__", None)
    if declared is not None:
        return list(declared)
    return [
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and (inspect.isclass(value) or inspect.isfunction(value))
        and value.__module__ == module.__name__
    ]


def own_doc(value: object) -> str:
    """The docstring `value` carries (an override's is the method's it overrides): not one
    Python or a dataclass made up for it."""
    doc = inspect.getdoc(value) if inspect.isroutine(value) else getattr(value, "__doc__", None)
    if not isinstance(doc, str):
        return ""
    if inspect.isclass(value):
        if dataclasses.is_dataclass(value) and doc.startswith(f"{value.__name__}("):
            return ""  # dataclass's generated signature, not a description
        if any(doc is getattr(base, "__doc__", None) for base in value.__mro__[1:]):
            return ""  # inherited from a base (an Enum's, a NamedTuple's)
    return doc.strip()


def is_documentable(value: object) -> bool:
    """Classes, functions and methods (Python or Rust): constants and aliases have no
    docstring of their own."""
    return inspect.isclass(value) or inspect.isroutine(value) or inspect.ismodule(value)


def members(cls: type) -> Iterator[tuple[str, object]]:
    """The public methods and properties of `cls` that lanemq defines, inherited ones included
    (a queue's methods live in its per-concern bases)."""
    seen: set[str] = set()
    for klass in cls.__mro__:
        if not klass.__module__.startswith("lanemq"):
            continue
        for name, attr in vars(klass).items():
            if name.startswith("_") or name in seen:
                continue
            seen.add(name)
            if isinstance(attr, (staticmethod, classmethod)):
                yield name, attr.__func__
            elif isinstance(attr, property) or inspect.isroutine(attr):
                yield name, attr
            elif inspect.isgetsetdescriptor(attr):
                yield name, attr  # a property made in Rust (a pyo3 getter)
            # (a dataclass's fields, member descriptors, are described by its docstring and
            # shown by its signature: they have no docstring of their own to check)


def undocumented() -> list[str]:
    missing: list[str] = []
    checked: set[int] = set()

    def check(path: str, value: object) -> bool:
        if id(value) in checked:
            return False
        checked.add(id(value))
        if not own_doc(value):
            missing.append(path)
        return True

    for module_name in sorted(rendered_modules()):
        module = importlib.import_module(module_name)
        check(module_name, module)
        for name in public_names(module):
            value = getattr(module, name)
            if not is_documentable(value) or not check(f"{module_name}.{name}", value):
                continue
            if inspect.isclass(value):
                for member, attr in members(value):
                    check(f"{module_name}.{name}.{member}", attr)
    return missing


def test_the_reference_renders_every_public_module() -> None:
    assert rendered_modules() >= PUBLIC_MODULES


def test_own_doc_sees_through_made_up_docstrings() -> None:
    @dataclasses.dataclass
    class Bare:
        x: int

    @dataclasses.dataclass
    class Told:
        """A point."""

        x: int

    assert own_doc(Bare) == ""
    assert own_doc(Told) == "A point."
    assert own_doc(ValueError) != ""
    assert own_doc(type("Sub", (ValueError,), {})) == ""


def test_every_public_name_has_a_docstring() -> None:
    missing = undocumented()
    assert not missing, f"{len(missing)} public names have no docstring:\n" + "\n".join(missing)
