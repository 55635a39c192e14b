"""A consistent copy of a store a run holds, for ``report`` and ``show`` during the run.

DuckDB lets no second process open a file a run's store holds, not even read-only, and the
run's database is locked down (:func:`~runner.store._sql.lock_down`: no ``ATTACH``, no
``COPY TO``), so it cannot write a copy of itself to a file either. Instead the run's store
reads every table into Arrow inside one ``READ ONLY`` transaction (:func:`copy_store`, served
like a user's query: a slot, a time limit, a client that must keep saying it waits), with the
definitions of its tables and views, and hands that over; this process writes it into a DuckDB
file in a temporary folder of its own (:func:`write_copy`), the report reads that file, and
the folder is removed after (:func:`reading`).

What the run's store sends is checked before anything is made of it, as if it were anyone's:
a table or view named as a plain identifier, each definition one ``CREATE TABLE`` or
``CREATE VIEW`` of that name, run on a connection with external access off and its settings
locked (:data:`~runner.store._sql.LOCKED`), so no file outside the temporary folder is read or
written; anything else is one line.
"""

from __future__ import annotations

import contextlib
import re
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pyarrow as pa

from runner.store._errors import StoreError, first_line
from runner.store._sql import LOCKED, opened_read_only, read_only

SNAPSHOT_TIMEOUT_S = 300.0  # a run's store copies its tables within this, or gives up
SNAPSHOT_FILE = "snapshot.duckdb"
HELD = "a run holds the file"  # what read_only says of a file a run's store holds

# A table a snapshot holds and a store never does: when it was taken. A report reading one
# knows the requests left are being sent, not left for the next run.
SNAPSHOT_TABLE = "groundbench_snapshot"

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_INCOMING = "__groundbench_incoming"  # the Arrow rows of the table being written
_OURS = frozenset({SNAPSHOT_TABLE, _INCOMING})  # names a copy sent may not take


@dataclass(frozen=True)
class CopiedTable:
    """One table of a store: its definition and every row."""

    name: str
    definition: str  # CREATE TABLE …, as DuckDB's catalogue says it
    rows: pa.Table


@dataclass(frozen=True)
class StoreCopy:
    """Every table and view of a store, read in one transaction."""

    taken: datetime  # when, UTC
    answers: int  # stored answers (not errors) in the copy
    tables: tuple[CopiedTable, ...]
    views: tuple[tuple[str, str], ...]  # (name, CREATE VIEW …)


def copy_store(cursor: duckdb.DuckDBPyConnection) -> StoreCopy:
    """Every table and view of ``cursor``'s database, as its transaction sees them: begun
    ``READ ONLY`` by the caller, the copy is of one moment, whatever is written meanwhile."""
    tables = tuple(
        CopiedTable(name, definition, _arrow(cursor, f'SELECT * FROM "{name}"'))
        for name, definition in cursor.execute(
            "SELECT table_name, sql FROM duckdb_tables() WHERE database_name = "
            "current_database() AND schema_name = 'main' AND NOT temporary AND NOT internal "
            "ORDER BY table_oid"
        ).fetchall()
    )
    views = tuple(
        (str(name), str(definition))
        for name, definition in cursor.execute(
            "SELECT view_name, sql FROM duckdb_views() WHERE database_name = current_database() "
            "AND schema_name = 'main' AND NOT temporary AND NOT internal ORDER BY view_oid"
        ).fetchall()
    )
    answers = 0
    if any(t.name == "responses" for t in tables):
        (answers,) = cursor.execute(
            "SELECT count(*) FROM responses WHERE outcome = 'answer'"
        ).fetchone() or (0,)
    return StoreCopy(datetime.now(UTC), int(answers), tables, views)


def _arrow(cursor: duckdb.DuckDBPyConnection, sql: str) -> pa.Table:
    relation = cursor.sql(sql)
    # DuckDB 2 names it to_arrow_table, 1.x fetch_arrow_table.
    fetch = getattr(relation, "to_arrow_table", None) or relation.fetch_arrow_table
    table: pa.Table = fetch()
    return table


@dataclass(frozen=True)
class Held:
    """What the run that holds a store sent when asked for a copy, unchecked, and its
    driver's process where the run noted it."""

    copy: object
    pid: int | None = None


# Asks the run that holds the store at this path for a copy of it.
TakeCopy = Callable[[Path], Held]


@dataclass(frozen=True)
class Reading:
    """The file a report reads: the store itself, or a copy of it while a run holds it."""

    path: Path
    said: str | None = None  # the line saying it is a copy, and of when

    @property
    def copied(self) -> bool:
        return self.said is not None

    def open(self) -> duckdb.DuckDBPyConnection:
        """The file, read-only; a copy with external access off (its views came from
        elsewhere)."""
        return read_only(self.path, locked=self.copied)


@contextlib.contextmanager
def reading(path: Path, take: TakeCopy | None) -> Iterator[Reading]:
    """The store at ``path`` to read: itself when no run holds it, else — given ``take`` — a
    copy the run's store made in one transaction, in a temporary folder removed on leaving.

    Raises
    ------
    StoreError
        The file cannot be opened read-only, a run holds it and cannot be asked (no ``take``,
        or the run out of reach), or what the run sent is not a copy of a store.
    """
    try:
        opened_read_only(path).close()
    except StoreError as exc:
        if HELD not in str(exc) or take is None:
            raise
    else:
        yield Reading(path)
        return
    held = take(path)
    copy = checked(held.copy, path)
    with tempfile.TemporaryDirectory(prefix="groundbench-snapshot-") as folder:
        file = write_copy(copy, Path(folder), path)
        yield Reading(file, said=_said(copy, held.pid))


def _said(copy: StoreCopy, pid: int | None) -> str:
    holder = f"a run (pid {pid})" if pid is not None else "a run"
    at = copy.taken.astimezone().strftime("%H:%M:%S")
    return f"the store is held by {holder}: reporting from a snapshot taken at {at}, " + (
        f"{copy.answers:,} answers"
    )


def checked(copy: object, where: Path | str) -> StoreCopy:
    """``copy`` if it is a store's copy in every part (see the module docstring).

    Raises
    ------
    StoreError
        Anything else, in one line.
    """
    why = _wrong(copy)
    if why is not None:
        raise StoreError(
            f"{where}: the run that holds the file sent no usable snapshot ({why}); report "
            "once the run has ended"
        )
    assert isinstance(copy, StoreCopy)
    return copy


def _wrong(copy: object) -> str | None:
    """What is wrong with ``copy`` as a :class:`StoreCopy`, or None."""
    if not isinstance(copy, StoreCopy):
        return f"a {type(copy).__name__}, not a copy of a store"
    # Its fields as sent, whatever they are: unpickled, a dataclass's types are not checked.
    taken, answers, tables, views = (
        vars(copy).get(f) for f in ("taken", "answers", "tables", "views")
    )
    if not isinstance(taken, datetime) or taken.tzinfo is None:
        return "no time it was taken"
    if not isinstance(answers, int) or answers < 0:
        return "no count of answers"
    if not isinstance(tables, tuple) or not isinstance(views, tuple):
        return "no tables"
    for table in tables:
        if not isinstance(table, CopiedTable):
            return "a table that is not one"
        name, definition, rows = (vars(table).get(f) for f in ("name", "definition", "rows"))
        if not isinstance(rows, pa.Table):
            return f"table {str(name)[:40]!r} without its rows"
        why = _wrong_definition(name, definition, "TABLE")
        if why is not None:
            return why
    for view in views:
        if not (isinstance(view, tuple) and len(view) == 2):
            return "a view that is not one"
        why = _wrong_definition(*view, "VIEW")
        if why is not None:
            return why
    return None


def _wrong_definition(name: object, definition: object, kind: str) -> str | None:
    if not isinstance(name, str) or not _NAME.fullmatch(name) or name in _OURS:
        return f"a {kind.lower()} named {str(name)[:40]!r}"
    if not isinstance(definition, str):
        return f"no definition of {kind.lower()} {name}"
    said = rf'\s*CREATE\s+{kind}\s+(?:"{name}"|{name})[\s(]'
    if not re.match(said, definition, re.IGNORECASE) or not _one_create(definition):
        return f"{kind.lower()} {name} defined as something else than CREATE {kind} {name}"
    return None


def _one_create(sql: str) -> bool:
    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error:
        return False
    return len(statements) == 1 and statements[0].type == duckdb.StatementType.CREATE


def write_copy(copy: StoreCopy, folder: Path, where: Path | str) -> Path:
    """``copy`` (:func:`checked`) as a DuckDB file in ``folder``; its path.

    Raises
    ------
    StoreError
        DuckDB refuses a definition or the rows (one line).
    """
    path = folder / SNAPSHOT_FILE
    try:
        with duckdb.connect(str(path), config=dict(LOCKED)) as con:
            for table in copy.tables:
                con.execute(table.definition)
                con.register(_INCOMING, table.rows)
                con.execute(f'INSERT INTO "{table.name}" BY NAME SELECT * FROM {_INCOMING}')
                con.unregister(_INCOMING)
            _create_views(con, list(copy.views))
            con.execute(
                f"CREATE TABLE {SNAPSHOT_TABLE} AS SELECT ?::TIMESTAMPTZ AS taken", [copy.taken]
            )
    except (duckdb.Error, pa.ArrowException) as exc:
        raise StoreError(
            f"{where}: the snapshot of the run's store could not be written "
            f"({first_line(exc)}); report once the run has ended"
        ) from None
    return path


def _create_views(con: duckdb.DuckDBPyConnection, views: list[tuple[str, str]]) -> None:
    """Each view, those it reads before it (the catalogue's order is of creation, and a view
    replaced since comes after the views that read it)."""
    while views:
        left: list[tuple[str, str]] = []
        failure: duckdb.Error | None = None
        for name, definition in views:
            try:
                con.execute(definition)
            except duckdb.CatalogException as exc:  # one it reads is not made yet
                left.append((name, definition))
                failure = exc
        if len(left) == len(views) and failure is not None:
            raise failure
        views = left


__all__ = [
    "HELD",
    "SNAPSHOT_TABLE",
    "SNAPSHOT_TIMEOUT_S",
    "CopiedTable",
    "Held",
    "Reading",
    "StoreCopy",
    "TakeCopy",
    "checked",
    "copy_store",
    "reading",
    "write_copy",
]
