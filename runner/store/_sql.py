"""Read-only SQL over an experiment's store, finished or running.

Only queries run: one statement, a SELECT (``WITH``, ``FROM``-first, ``DESCRIBE``, ``SHOW``,
``SUMMARIZE`` parse as one) or an ``EXPLAIN`` of one. DuckDB lets no second process open a file
that a writer holds, so during a run the query goes to the run's store actor, which runs it
inside a transaction it rolls back; after the run the file is opened read-only.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb

from runner.store._errors import StoreError, first_line

Result = tuple[list[str], list[tuple[Any, ...]]]

_EXPLAIN = re.compile(r"^\s*explain\s+(analyze\s+)?", re.IGNORECASE)


def check_query(sql: str) -> None:
    """Refuse anything but one read-only statement.

    Raises
    ------
    StoreError
        Not SQL, several statements, or a statement that is not a query.
    """
    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as exc:
        raise StoreError(f"not valid SQL: {first_line(exc)}") from None
    if len(statements) != 1:
        raise StoreError(f"one statement at a time, not {len(statements)}")
    kind = statements[0].type
    if kind == duckdb.StatementType.EXPLAIN:  # EXPLAIN ANALYZE runs what it explains
        check_query(_EXPLAIN.sub("", sql, count=1))
        return
    if kind != duckdb.StatementType.SELECT:
        raise StoreError(
            f"only queries are allowed (SELECT, WITH, DESCRIBE, SHOW, EXPLAIN), not {kind.name}"
        )


# Runs a checked query through the store of the run that holds the file.
ThroughRun = Callable[[Path, str], Result]


def query_store(path: Path, sql: str, through_run: ThroughRun | None = None) -> Result:
    """Run a read-only query on the store at ``path``: the file if free, else — given
    ``through_run`` — the running store of the run that holds it.

    Raises
    ------
    StoreError
        The query is not read-only, fails, or the file is held by a run this process cannot
        reach.
    """
    check_query(sql)
    try:
        con = read_only(path)
    except StoreError as exc:
        if "a run holds the file" not in str(exc) or through_run is None:
            raise
        return through_run(path, sql)
    with con:
        return run_query(con, sql, path)


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
        raise StoreError(f"{path}: cannot open read-only: {first_line(exc)}") from None
    except duckdb.Error as exc:
        raise StoreError(f"{path}: cannot open read-only: {first_line(exc)}") from None


def run_query(con: duckdb.DuckDBPyConnection, sql: str, where: Path | str) -> Result:
    """Column names and rows of ``sql`` on ``con``; a failing query is one line."""
    try:
        result = con.execute(sql)
        names = [d[0] for d in result.description or []]
        return names, result.fetchall()
    except duckdb.Error as exc:
        raise StoreError(f"{where}: {first_line(exc)}") from None
