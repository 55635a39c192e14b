"""Read-only SQL over an experiment's store, finished or running.

A user's query reads the store and nothing else, and it is the database that says so, not a
pattern over the text:

- after a run the file is opened read-only with external access off and the configuration
  locked (:data:`LOCKED`): no write, no file or URL outside the store, no extension installed
  or loaded, no setting changed;
- during a run DuckDB lets no second process open the file, so the query goes to the run's
  store, whose database is locked the same way once open (:func:`lock_down`), and runs on a
  cursor of its own inside a ``READ ONLY`` transaction that is rolled back.

Either way it is one statement (``COMMIT; DELETE …`` is two) of a query kind (SELECT, which
``WITH``, ``FROM``-first, ``DESCRIBE``, ``SHOW`` and ``SUMMARIZE`` parse as, or EXPLAIN), and it
is interrupted at its time limit.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb

from conditions import opening_repaired
from runner.store._errors import StoreError, first_line

Result = tuple[list[str], list[tuple[Any, ...]]]

QUERY_TIMEOUT_S = 30.0  # a user's query is stopped after this long unless told otherwise

# The settings under which a user's query runs: nothing outside the store can be reached.
LOCKED: dict[str, bool] = {
    "enable_external_access": False,
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
    "allow_community_extensions": False,
    "lock_configuration": True,
}
_QUERY_KINDS = (duckdb.StatementType.SELECT, duckdb.StatementType.EXPLAIN)


def check_query(sql: str) -> None:
    """Refuse anything but one statement of a query kind (the connection refuses writes).

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
    if kind not in _QUERY_KINDS:
        raise StoreError(
            f"only queries are allowed (SELECT, WITH, DESCRIBE, SHOW, EXPLAIN), not {kind.name}"
        )


def lock_down(con: duckdb.DuckDBPyConnection) -> None:
    """Lock a writer's database as :data:`LOCKED` does a reader's: its own writes go on.

    The store loads rows through registered Arrow tables, which need no external access.
    A database this process opened and locked before stays locked.
    """
    (locked,) = con.execute("SELECT current_setting('lock_configuration')").fetchone() or (0,)
    if locked:
        return
    for name, value in LOCKED.items():
        con.execute(f"SET {name} = {str(value).lower()}")


# Runs a checked query through the store of the run that holds the file.
ThroughRun = Callable[[Path, str, float], Result]


def query_store(
    path: Path,
    sql: str,
    through_run: ThroughRun | None = None,
    timeout_s: float = QUERY_TIMEOUT_S,
) -> Result:
    """Run a read-only query on the store at ``path``: the file if free, else — given
    ``through_run`` — the running store of the run that holds it.

    Raises
    ------
    StoreError
        The query is not read-only, fails, runs past ``timeout_s``, or the file is held by a
        run this process cannot reach.
    """
    check_query(sql)
    try:
        con = read_only(path, locked=True)
    except StoreError as exc:
        if "a run holds the file" not in str(exc) or through_run is None:
            raise
        return through_run(path, sql, timeout_s)
    with con:
        return run_query(con, sql, path, timeout_s)


def read_only(path: Path | str, *, locked: bool = False) -> duckdb.DuckDBPyConnection:
    """The experiment file opened read-only (refused while a run's store holds it);
    ``locked``: with the :data:`LOCKED` settings, for a user's query.

    Raises
    ------
    StoreError
        No such file, not a DuckDB file, or a running store holds it.
    """
    path = Path(path)
    if not path.exists():
        raise StoreError(f"{path}: no such experiment file")
    config: dict[str, str | bool | int | float | list[str]] = dict(LOCKED) if locked else {}
    try:
        return opening_repaired(
            path, lambda: duckdb.connect(str(path), read_only=True, config=config)
        )
    except duckdb.IOException as exc:
        if "lock" in str(exc).lower():
            raise StoreError(
                f"{path}: a run holds the file; query it once the run has ended"
            ) from None
        raise StoreError(f"{path}: cannot open read-only: {first_line(exc)}") from None
    except duckdb.Error as exc:
        raise StoreError(f"{path}: cannot open read-only: {first_line(exc)}") from None


def run_query(
    con: duckdb.DuckDBPyConnection,
    sql: str,
    where: Path | str,
    timeout_s: float = QUERY_TIMEOUT_S,
) -> Result:
    """Column names and rows of ``sql`` on ``con``, interrupted at ``timeout_s``; a failing
    query is one line."""
    expired = threading.Event()

    def expire() -> None:
        expired.set()
        con.interrupt()

    timer = threading.Timer(timeout_s, expire)
    timer.daemon = True
    timer.start()
    try:
        result = con.execute(sql)
        names = [d[0] for d in result.description or []]
        return names, result.fetchall()
    except duckdb.InterruptException:
        if not expired.is_set():
            raise StoreError(f"{where}: the query was cancelled by its client") from None
        raise StoreError(
            f"{where}: the query was stopped at its time limit of {timeout_s:g} s; narrow it "
            "(WHERE, LIMIT) or allow it longer (--timeout)"
        ) from None
    except duckdb.Error as exc:
        raise StoreError(f"{where}: {_reason(exc)}") from None
    finally:
        timer.cancel()


def _reason(exc: duckdb.Error) -> str:
    """DuckDB's first line, said plainly where it refused a write or an outside read."""
    line = first_line(exc)
    if "read-only" in line:
        return f"only queries are allowed, and this one writes ({line})"
    if isinstance(exc, duckdb.PermissionException) or "disabled" in line:
        return f"a query reads the store and nothing else ({line})"
    if "extension" in line:
        return f"a query reads the store and nothing else: no extension is loaded ({line})"
    return line
