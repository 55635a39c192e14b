"""Rows as the store takes them, and the store opened for reading."""

from __future__ import annotations

from pathlib import Path

import duckdb

from runner.backends import AttemptRecord
from runner.store._schema import RESPONSE_COLUMNS
from runner.store._store import ResponseRow, StoreError, _first_line


def response_row(record: AttemptRecord) -> ResponseRow:
    """``record`` as a tuple in the store's column order: cheap to ship between processes."""
    return tuple(getattr(record, column) for column in RESPONSE_COLUMNS)


def read_only(path: Path | str) -> duckdb.DuckDBPyConnection:
    """The experiment file opened read-only (refused while a run's store holds it).

    Raises
    ------
    StoreError
        No such file, not a DuckDB file, or a running store holds it.
    """
    path = Path(path)
    if not path.exists():
        raise StoreError(f"{path}: no such experiment file")
    try:
        return duckdb.connect(str(path), read_only=True)
    except duckdb.IOException as exc:
        if "lock" in str(exc).lower():
            raise StoreError(
                f"{path}: a run holds the file; query it once the run has ended"
            ) from None
        raise StoreError(f"{path}: cannot open read-only: {_first_line(exc)}") from None
    except duckdb.Error as exc:
        raise StoreError(f"{path}: cannot open read-only: {_first_line(exc)}") from None
