"""Each package's public surface is its ``__all__``: every public name its ``__init__`` binds is
listed, every listed name exists, and the list is sorted (httpx's ``test_exported_members``).
``runner`` itself exports nothing; its subpackages do."""

from __future__ import annotations

import importlib
import types

import pytest

PACKAGES = (
    "conditions",
    "scoring",
    "runner.backends",
    "runner.distributed",
    "runner.overlays",
    "runner.pages",
    "runner.reports",
    "runner.simulator",
    "runner.store",
)


@pytest.mark.parametrize("name", PACKAGES)
def test_all_lists_exactly_the_public_names_in_order(name: str) -> None:
    package = importlib.import_module(name)
    exported = list(getattr(package, "__all__", []))
    assert exported, f"{name} has no __all__"
    for n in exported:  # bound now where the package imports its names on first use
        getattr(package, n)
    bound = {
        n
        for n, value in vars(package).items()
        if not n.startswith("_") and not isinstance(value, types.ModuleType) and n != "annotations"
    }
    assert set(exported) == bound, (set(exported) - bound, bound - set(exported))
    # Constants first, then the rest in code-point order (classes before functions).
    assert exported == sorted(exported, key=lambda n: (not n.isupper(), n))
    assert len(exported) == len(set(exported))
