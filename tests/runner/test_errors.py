"""The one error tree (issue 41): drawn in ``runner/_errors.py``'s docstring, equal to the real
subclasses of :class:`GroundbenchError`, and every class of it told in one line and an exit
status by the one mapping the command line and the Ray boundary share."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re

import pytest

import conditions
import runner
import runner._errors
import scoring
from scoring import GroundbenchError

KEY = "sk-proj-abcdef0123456789"  # key-shaped: never in a line told
OURS = ("scoring.", "conditions.", "runner.")  # a test's own subclasses are not the tree's


def _import_every_module() -> None:
    """Every module of the three packages, so that every subclass is defined (the command line
    left out: its modules define no error)."""
    for package in (scoring, conditions, runner):
        for found in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
            if not found.name.startswith("runner.cli"):
                importlib.import_module(found.name)


def _real_tree() -> dict[str, str | None]:
    """Each class of the tree, ours only (a test's own subclasses left out), to its parent."""
    _import_every_module()
    parents: dict[str, str | None] = {GroundbenchError.__name__: None}
    todo = [GroundbenchError]
    while todo:
        cls = todo.pop()
        for sub in cls.__subclasses__():
            if sub.__module__.startswith(OURS):
                parents[sub.__name__] = cls.__name__
                todo.append(sub)
    return parents


def _drawn_tree() -> dict[str, str | None]:
    """The tree as the docstring draws it: a class's parent is the nearest line above it
    drawn less deep."""
    doc = runner._errors.__doc__ or ""
    drawing = doc.split("::", 1)[1].split("\n\n")[1]
    parents: dict[str, str | None] = {}
    path: list[tuple[int, str]] = []  # (column of its name, name) of the line's ancestors
    for line in drawing.splitlines():
        found = re.search(r"[A-Za-z]\w*", line)
        assert found is not None, line
        column, name = found.start(), found.group()
        while path and path[-1][0] >= column:
            path.pop()
        parents[name] = path[-1][1] if path else None
        path.append((column, name))
    return parents


def test_the_drawn_tree_is_the_real_one() -> None:
    assert _drawn_tree() == _real_tree()


def _every_class() -> list[type[GroundbenchError]]:
    _import_every_module()
    found: list[type[GroundbenchError]] = []
    todo: list[type[GroundbenchError]] = [GroundbenchError]
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo.extend(
            s
            for s in cls.__subclasses__()
            if s.__module__.startswith(("scoring.", "conditions.", "runner."))
        )
    return found


ARGUMENTS: dict[str, tuple[object, ...]] = {"TooLarge": (10_000, 200)}  # a message of its own


def _made(cls: type[GroundbenchError], message: str) -> GroundbenchError:
    """An instance of ``cls``, the message given to each argument it needs (one at least:
    ``Exception``'s own signature asks for none)."""
    if cls.__name__ in ARGUMENTS:
        return cls(*ARGUMENTS[cls.__name__])
    needed = [
        p
        for p in list(inspect.signature(cls.__init__).parameters.values())[1:]
        if p.default is inspect.Parameter.empty
        and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    return cls(*[message] * max(len(needed), 1))


@pytest.mark.parametrize("cls", _every_class(), ids=lambda c: c.__name__)
def test_every_class_is_told_in_one_line_and_an_exit_status_the_key_never_in_it(
    cls: type[GroundbenchError],
) -> None:
    if cls.__name__ == "CallError":  # never raised itself, only as one of its kinds
        assert all(hasattr(kind, "kind") for kind in cls.__subclasses__())
        return
    error = _made(cls, f"refused with {KEY}")
    told = runner._errors.told(error)
    assert told is not None
    assert told.status == 2
    assert "\n" not in told.line and KEY not in told.line
    assert told.line == str(error).replace(KEY, "[redacted]")


def test_anything_else_is_a_bug_and_told_in_no_line() -> None:
    assert runner._errors.told(ValueError("a bug")) is None
    assert runner._errors.told(KeyError("a bug")) is None


def test_the_scoring_and_conditions_errors_stay_value_errors() -> None:
    assert issubclass(scoring.ScoringError, ValueError)
    assert issubclass(conditions.ConditionsError, ValueError)
