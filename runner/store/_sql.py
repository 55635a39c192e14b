"""Read-only SQL over an experiment's store, finished or running.

A user's query reads the store and nothing else, and it is the database that says so, not a
pattern over the text:

- after a run the file is opened read-only with external access off and the configuration
  locked (:data:`LOCKED`): no write, no file or URL outside the store, no extension installed
  or loaded, no setting changed;
- during a run DuckDB lets no second process open the file, so the query goes to the run's
  store, whose database is locked the same way once open (:func:`lock_down`), and runs on a
  cursor of its own inside a ``READ ONLY`` transaction that is rolled back
  (:class:`~runner.store._queries.QueryService`).

With external access off DuckDB still lets a query read the database's own files (it adds them
to ``allowed_paths``, and no setting takes them out). Reading the store's file opens it a second
time in the process that holds it, and closing that drops the process's POSIX lock on it: another
process could then open the live store read-write. So before a query runs its parse tree is
checked (:func:`check_reads`), failing closed: it may name the store's tables and views, its own
CTEs and the table functions of :data:`TABLE_FUNCTIONS` (none reads a file), nothing else.

Either way it is one statement (``COMMIT; DELETE …`` is two) of a query kind (SELECT, which
``WITH``, ``FROM``-first, ``DESCRIBE``, ``SHOW`` and ``SUMMARIZE`` parse as, or EXPLAIN of one),
and it is interrupted at its time limit (at most :data:`MAX_QUERY_TIMEOUT_S`).
"""

from __future__ import annotations

import difflib
import json
import logging
import re
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import duckdb

from conditions import opening_repaired
from runner.store._errors import StoreError, first_line, joined_lines
from runner.store._written import held, loss_read, noted

Result = tuple[list[str], list[tuple[Any, ...]]]

QUERY_TIMEOUT_S = 60.0  # a user's query is stopped after this long unless told otherwise
MAX_QUERY_TIMEOUT_S = 600.0  # and never runs longer: a run's store serves its writes first

# The settings under which a user's query runs: nothing outside the store can be reached.
LOCKED: dict[str, bool] = {
    "enable_external_access": False,
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
    "allow_community_extensions": False,
    "lock_configuration": True,
}
_QUERY_KINDS = (duckdb.StatementType.SELECT, duckdb.StatementType.EXPLAIN)

# The table functions a query may call: numbers, lists, JSON values and DuckDB's catalogue.
# Every other one is refused — read_text, read_blob, glob, read_csv, read_parquet, read_duckdb,
# query (SQL in a string) and whatever a later DuckDB adds.
TABLE_FUNCTIONS = frozenset(
    {"range", "generate_series", "unnest", "json_each", "json_tree"}
    | {f"duckdb_{n}" for n in ("tables", "views", "columns", "constraints", "indexes",
                               "schemas", "databases", "types", "functions", "keywords",
                               "settings", "sequences", "dependencies")}
    | {f"pragma_{n}" for n in ("table_info", "storage_info", "database_size", "version")}
)  # fmt: skip
# What SHOW TABLES, SHOW ALL TABLES, SHOW DATABASES and SHOW SCHEMAS parse to.
_SHOW_SPECIAL = frozenset({'"tables"', "__show_tables_expanded", '"databases"', '"schemas"'})
# The kinds of table reference a query may hold; any other (a later DuckDB's) is refused.
_TABLE_REFS = frozenset(
    {"BASE_TABLE", "JOIN", "SUBQUERY", "TABLE_FUNCTION", "EMPTY", "EXPRESSION_LIST", "PIVOT",
     "SHOW_REF"}
)  # fmt: skip
# Scalar functions that take SQL text: json_serialize_plan binds (and so opens the files of) the
# query in its string, past this check; the others need no place in a reading of the store.
_SQL_TEXT_FUNCTION = re.compile(r"serialize|execute|^query", re.I)
# A CTE name that no replacement scan could take for a file (those need an extension).
_IDENTIFIER = re.compile(r"[a-z_][a-z0-9_]*")
# EXPLAIN [ANALYZE] before the query it explains, after any comments.
_EXPLAIN = re.compile(r"(?:\s|/\*.*?\*/|--[^\n]*)*EXPLAIN\s+(?:ANALY[SZ]E\s+)?", re.I | re.S)
_KINDS_SAID = "SELECT, WITH, DESCRIBE, SHOW, SUMMARIZE, or EXPLAIN of one"


def check_query(sql: str) -> None:
    """Refuse anything but one statement of a query kind, or EXPLAIN of one (the connection
    refuses writes, :func:`check_reads` names outside the store).

    Raises
    ------
    StoreError
        Not SQL, several statements, or a statement that is not a query.
    """
    kind = _kind(sql)
    if kind not in _QUERY_KINDS:
        raise StoreError(f"only queries are allowed ({_KINDS_SAID}), not {kind.name}")
    if kind == duckdb.StatementType.EXPLAIN:
        inner = _kind(_explained(sql))
        if inner != duckdb.StatementType.SELECT:
            raise StoreError(f"only queries are allowed ({_KINDS_SAID}), not EXPLAIN {inner.name}")


def check_timeout(timeout_s: float) -> None:
    """Refuse a time limit past :data:`MAX_QUERY_TIMEOUT_S` (or not above 0)."""
    if not timeout_s > 0:  # nan too
        raise StoreError(f"a query's time limit is a number of seconds above 0, not {timeout_s:g}")
    if not timeout_s <= MAX_QUERY_TIMEOUT_S:
        raise StoreError(
            f"a query runs for at most {MAX_QUERY_TIMEOUT_S:g} s, not {timeout_s:g} (--timeout); "
            "narrow it (WHERE, LIMIT) to answer sooner"
        )


def _kind(sql: str) -> duckdb.StatementType:
    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as exc:
        raise StoreError(f"not valid SQL: {joined_lines(exc)}") from None
    if len(statements) != 1:
        raise StoreError(f"one statement at a time, not {len(statements)}")
    return statements[0].type


def _explained(sql: str) -> str:
    """The query an EXPLAIN [ANALYZE] explains; the text itself if it is not one."""
    found = _EXPLAIN.match(sql)
    return sql[found.end() :] if found else sql


def check_reads(con: duckdb.DuckDBPyConnection, sql: str) -> None:
    """Refuse a query (checked by :func:`check_query`) that names anything but the tables and
    views of ``con``'s catalogue, its own CTEs and :data:`TABLE_FUNCTIONS`: fail closed, from
    its parse tree, before DuckDB binds it (binding ``read_csv`` already opens its file).

    Raises
    ------
    StoreError
        It names a file, a function that reads one, or anything the check cannot see into.
    """
    tree = _parse_tree(con, _explained(sql))
    ctes = {_lower(key) for node in _nodes(tree) for key in _cte_names(node)}
    catalogue = _catalogue(con)
    for node in _nodes(tree):
        if node.get("class") == "FUNCTION":
            _check_function(node)
        elif _is_table_ref(node):
            _check_ref(node, ctes, catalogue)


def _check_function(call: dict[str, Any]) -> None:
    name = call.get("function_name")
    if not isinstance(name, str) or _SQL_TEXT_FUNCTION.search(name):
        raise StoreError(
            f"a query reads the store and nothing else: {_lower(name)}() is not one it may call "
            "(it takes SQL in a string, which this check cannot see into)"
        )


def _is_table_ref(node: dict[str, Any]) -> bool:
    """A table reference serialises its type, alias and sample; an expression its class too,
    a query node (which has a sample) no alias."""
    return {"type", "alias", "sample"} <= node.keys() and "class" not in node


def _check_ref(ref: dict[str, Any], ctes: set[str], catalogue: set[tuple[str, str, str]]) -> None:
    kind = ref["type"]
    if kind not in _TABLE_REFS:
        raise StoreError(f"a query reads the store and nothing else: it cannot hold {kind}")
    if kind == "TABLE_FUNCTION":
        name = _lower(ref.get("function", {}).get("function_name"))
        if name not in TABLE_FUNCTIONS:
            raise StoreError(
                f"a query reads the store and nothing else: {name}() is not one it may call "
                "(it may call range, generate_series, unnest, json_each, json_tree and the "
                "duckdb_* catalogue)"
            )
    elif kind == "BASE_TABLE" or (kind == "SHOW_REF" and ref.get("show_type") == "SHOW"):
        named = tuple(_lower(ref.get(k)) for k in ("catalog_name", "schema_name", "table_name"))
        if not _known(named, ctes, catalogue):
            shown = ".".join(n for n in named if n)
            raise StoreError(
                f"no table or view {shown!r} in the store{_did_you_mean(named[2], ctes, catalogue)}"
                " (SHOW TABLES lists them); a query reads the store and nothing else"
            )
    elif (
        kind == "SHOW_REF"
        and ref.get("show_type") == "SHOW_SPECIAL"
        and ref.get("table_name") not in _SHOW_SPECIAL  # SHOW TABLES and the like only
    ):
        raise StoreError("a query reads the store and nothing else: not that SHOW")


def _did_you_mean(name: str, ctes: set[str], catalogue: set[tuple[str, str, str]]) -> str:
    """DuckDB's own hint for a misspelt name, which this check, refusing first, would hide:
    ``: did you mean "cell_summary"?``; nothing where no name is close."""
    close = difflib.get_close_matches(name, sorted(ctes | {n for _, _, n in catalogue}), n=1)
    return f': did you mean "{close[0]}"?' if close else ""


def _known(named: tuple[str, ...], ctes: set[str], catalogue: set[tuple[str, str, str]]) -> bool:
    database, schema, name = named
    if not database and not schema and name in ctes and _IDENTIFIER.fullmatch(name):
        return True
    return any(name == n and database in ("", d) and schema in ("", s) for d, s, n in catalogue)


def _parse_tree(con: duckdb.DuckDBPyConnection, sql: str) -> Any:
    """DuckDB's parse tree of one SELECT, as JSON (``json_serialize_sql``)."""
    row = con.execute("SELECT json_serialize_sql(?)", [sql]).fetchone()
    try:
        tree = json.loads(row[0]) if row else {}
    except (RecursionError, ValueError):  # nested past what Python's decoder follows
        raise StoreError("the query is nested too deeply to be checked; write it flatter") from None
    statements = tree.get("statements") if isinstance(tree, dict) else None
    if tree.get("error") or not isinstance(statements, list) or len(statements) != 1:
        why = tree.get("error_message", "not one SELECT") if isinstance(tree, dict) else ""
        raise StoreError(
            f"the query cannot be checked to read only the store ({why}); write it as a SELECT"
        )
    return statements[0]


def _nodes(tree: Any) -> Iterator[dict[str, Any]]:
    """Every object in ``tree``, iteratively (a deep query recurses nothing here)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            yield node
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


def _cte_names(node: dict[str, Any]) -> Iterator[Any]:
    entries = (
        node.get("cte_map", {}).get("map", []) if isinstance(node.get("cte_map"), dict) else []
    )
    for entry in entries:
        if isinstance(entry, dict):
            yield entry.get("key")


def _catalogue(con: duckdb.DuckDBPyConnection) -> set[tuple[str, str, str]]:
    """(database, schema, name) of every table and view ``con`` sees, DuckDB's own included."""
    rows = con.execute(
        "SELECT database_name, schema_name, table_name FROM duckdb_tables() UNION ALL "
        "SELECT database_name, schema_name, view_name FROM duckdb_views()"
    ).fetchall()
    return {(_lower(d), _lower(s), _lower(n)) for d, s, n in rows}


def _lower(name: object) -> str:
    return name.lower() if isinstance(name, str) else ""  # DuckDB's names ignore case


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
        The query is not read-only, names a file, fails, runs past ``timeout_s`` (at most
        :data:`MAX_QUERY_TIMEOUT_S`), or the file is held by a run this process cannot reach.
    """
    check_timeout(timeout_s)
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
    con = opened_read_only(path, locked=locked)
    _say_loss(path, con)
    return con


def opened_read_only(path: Path, *, locked: bool = False) -> duckdb.DuckDBPyConnection:
    """:func:`read_only`, saying nothing of a loss (to see whether a run holds the file)."""
    if not path.exists():
        raise StoreError(f"{path}: no such experiment file")
    config: dict[str, str | bool | int | float | list[str]] = dict(LOCKED) if locked else {}
    try:
        con = opening_repaired(
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
    return con


def _say_loss(path: Path, con: duckdb.DuckDBPyConnection) -> None:
    """One line if the file holds less than its note says was written (a log cut short): what
    is read, a table pasted into a paper, lacks those rows."""
    claimed = noted(path)
    found = held(con) if claimed is not None else None
    said = loss_read(path, claimed, found) if claimed and found else None
    if said is not None:
        logging.getLogger("groundbench.store").warning("groundbench: %s", said)


def run_query(
    con: duckdb.DuckDBPyConnection,
    sql: str,
    where: Path | str,
    timeout_s: float = QUERY_TIMEOUT_S,
) -> Result:
    """Column names and rows of ``sql`` on ``con``, interrupted at ``timeout_s``; a failing
    query is one line."""
    deadline = time.monotonic() + timeout_s

    def why() -> str | None:
        return timed_out(timeout_s) if time.monotonic() >= deadline else None

    with Watch(con, why):
        return execute(con, sql, where, why)


TICK_S = 0.1  # how often a query's watch looks whether it is to be stopped


class Watch:
    """Interrupts the statement on ``con`` once ``why()`` names a reason to stop it, and again
    each tick until the watch ends: DuckDB forgets an interrupt that comes before a statement
    starts (between the check and the query, or before the transaction begins)."""

    def __init__(
        self, con: duckdb.DuckDBPyConnection, why: Callable[[], str | None], tick_s: float = TICK_S
    ) -> None:
        self._con, self._why, self._tick_s = con, why, tick_s
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="groundbench-query", daemon=True)

    def __enter__(self) -> Watch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()  # no interrupt reaches ``con`` once its owner goes on to close it

    def _watch(self) -> None:
        while not self._done.wait(self._tick_s):
            if self._why() is not None:
                self._con.interrupt()


# Why a query was interrupted, as its error line says it (after the store's path).
CANCELLED = "the query was cancelled by its client"


def timed_out(timeout_s: float) -> str:
    return (
        f"the query was stopped at its time limit of {timeout_s:g} s; narrow it (WHERE, LIMIT) "
        f"or allow it longer (--timeout, at most {MAX_QUERY_TIMEOUT_S:g} s)"
    )


def execute(
    con: duckdb.DuckDBPyConnection, sql: str, where: Path | str, why: Callable[[], str | None]
) -> Result:
    """Column names and rows of ``sql`` on ``con`` once :func:`check_reads` lets it run; a
    failing query is one line, an interrupted one says ``why()`` it was stopped."""
    try:
        check_reads(con, sql)
        result = con.execute(sql)
        names = [d[0] for d in result.description or []]
        return names, result.fetchall()
    except duckdb.InterruptException:
        raise StoreError(f"{where}: {why() or CANCELLED}") from None
    except duckdb.Error as exc:
        raise StoreError(f"{where}: {_reason(exc)}") from None
    except StoreError as exc:
        raise StoreError(f"{where}: {exc}") from None


def _reason(exc: duckdb.Error) -> str:
    """DuckDB's message on one line, hints kept ('Did you mean "cell_summary"?'), said plainly
    where it refused a write or an outside read."""
    line = joined_lines(exc)
    if "read-only" in line:
        return f"only queries are allowed, and this one writes ({line})"
    if isinstance(exc, duckdb.PermissionException) or "disabled" in line:
        return f"a query reads the store and nothing else ({line})"
    if "extension" in line:
        return f"a query reads the store and nothing else: no extension is loaded ({line})"
    return line
