"""The store's errors: one readable line each."""

from __future__ import annotations

from runner._errors import RunnerError


class StoreError(RunnerError):
    """The experiment file cannot be used as a store, or a query on it cannot run."""


DAMAGED_FILE = "the file is damaged: restore it from a copy"


def first_line(exc: Exception) -> str:
    """The first line of a (DuckDB) error's message, for a one-line error of ours; a block that
    fails its checksum also says what to do (a damaged log is repaired on opening, a damaged
    store file cannot be)."""
    text = str(exc).strip()
    line = text.splitlines()[0] if text else type(exc).__name__
    return f"{line}; {DAMAGED_FILE}" if "Corrupt database file" in line else line
