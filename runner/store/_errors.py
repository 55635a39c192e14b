"""The store's errors: one readable line each."""

from __future__ import annotations

from runner._errors import RunnerError


class StoreError(RunnerError):
    """The experiment file cannot be used as a store, or a query on it cannot run."""


def first_line(exc: Exception) -> str:
    """The first line of a (DuckDB) error's message, for a one-line error of ours."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
