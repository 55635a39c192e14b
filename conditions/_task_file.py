"""The experiment file's questions, whichever task they are: one file holds one set of them.

A cohort (:mod:`conditions._store`) and a box set (:mod:`conditions._box_set`) are stored the
same way, and this module is that way: the hash of the questions sits in one row of the task's
first table; writing the same questions again is a no-op and writing others is refused, the
tables are made by the task's migrations and filled in one transaction; reading them back maps
any damage to one line and checks the questions against their stored hash. What differs — the
tables, the columns, the words of the refusals — is the task's own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar

import duckdb

from conditions._errors import DataFileError
from conditions._migrations import (
    Migration,
    apply_migration,
    check_known,
    ensure_migrations,
    pending_migrations,
)
from conditions._wal import opening_repaired


class Hashed(Protocol):
    """Questions that carry the hash of their content."""

    @property
    def hash(self) -> str: ...


Questions = TypeVar("Questions", bound=Hashed)
Connection = duckdb.DuckDBPyConnection


def stored_hash(path: Path | str, table: str) -> str | None:
    """The hash in ``table`` of the experiment file at ``path``; None if it has none."""
    path = Path(path)
    if not path.exists():
        return None
    with connect(path, read_only=True) as con:
        return table_hash(con, table)


def table_hash(con: Connection, table: str) -> str | None:
    """The hash in ``table`` (a task's first table, one row) of an open file; None if none."""
    if not has_table(con, table):
        return None
    row = con.execute(f"SELECT hash FROM {table}").fetchone()
    return None if row is None else str(row[0])


def write_once(
    path: Path | str,
    *,
    table: str,
    questions: Hashed,
    refusal: Callable[[Connection, Path, str | None], Exception | None],
    write: Callable[[Connection, Path], None],
) -> bool:
    """Store ``questions`` in the file at ``path`` by ``write`` (in one transaction); False if
    ``table`` already holds their hash.

    ``refusal`` is given the open file, its path and the hash it holds (None: none) when that
    is not theirs, and returns the error that refuses them, or None to write them.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with connect(path, read_only=False) as con:
        stored = table_hash(con, table)
        if stored == questions.hash:
            return False
        refused = refusal(con, path, stored)
        if refused is not None:
            raise refused
        in_transaction(con, lambda: write(con, path))
    return True


def migrate(con: Connection, where: Path, migrations: Sequence[Migration]) -> None:
    """Bring the migrations table and ``migrations``' part up to date; inside a transaction."""
    ensure_migrations(con)
    for migration in pending_migrations(con, str(where), migrations):
        apply_migration(con, migration)


def read_checked(
    con: Connection,
    where: Path | str,
    read: Callable[[Connection, Path], tuple[str, Questions]],
    *,
    what: str,
    content: str,
) -> Questions:
    """``read``'s questions, checked against the hash stored with them.

    Raises
    ------
    DataFileError
        The file is damaged (``cannot read its {what}``: one line, whatever the cause), or the
        questions no longer match their hash (``{content} no longer matches``).
    """
    try:
        stored, questions = read(con, Path(where))
    except DataFileError:
        raise
    except (duckdb.Error, ValueError, TypeError, KeyError) as exc:
        # A damaged file: DuckDB finds a bad checksum or a short read only when it gets to
        # the block, and damaged values fail their models (pydantic's errors are ValueErrors);
        # one line, whatever the cause.
        detail = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise DataFileError(where, f"cannot read its {what} (damaged?): {detail}") from None
    if questions.hash != stored:
        raise DataFileError(where, f"{content} no longer matches its hash {stored[:12]}")
    return questions


def load_checked(
    path: Path | str,
    read: Callable[[Connection, Path], tuple[str, Questions]],
    *,
    what: str,
    content: str,
) -> Questions:
    """:func:`read_checked` on the file at ``path``, which must exist."""
    path = Path(path)
    if not path.exists():
        raise DataFileError(path, "no such experiment file")
    with connect(path, read_only=True) as con:
        return read_checked(con, path, read, what=what, content=content)


def task_row(
    con: Connection,
    where: Path,
    migrations: Sequence[Migration],
    *,
    table: str,
    columns: str,
    missing: str,
) -> tuple[Any, ...]:
    """``columns`` of the one row of the task's first ``table``, once the file's version of the
    migrations' part is known to this code.

    Raises
    ------
    SchemaTooNewError
        A newer groundbench made the part.
    DataFileError
        The file holds no such row (``missing`` says so).
    """
    check_known(con, str(where), migrations)
    row = None
    if table_hash(con, table) is not None:
        row = con.execute(f"SELECT {columns} FROM {table}").fetchone()
    if row is None:
        raise DataFileError(where, missing)
    return tuple(row)


def rows_of(con: Connection, table: str, names: Sequence[str]) -> Iterator[dict[str, Any]]:
    """The rows of ``table`` in the order they were written, each as ``names`` to values."""
    for row in con.execute(f"SELECT {quoted(names)} FROM {table} ORDER BY rowid").fetchall():
        yield dict(zip(names, row, strict=True))


def in_transaction(con: Connection, write: Callable[[], None]) -> None:
    """Run ``write`` in one transaction: all of it is kept, or none of it."""
    con.execute("BEGIN TRANSACTION")
    try:
        write()
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise


def has_table(con: Connection, name: str) -> bool:
    """Whether the open experiment file has a table called ``name``."""
    exists = con.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_name = ?", [name]
    ).fetchone()
    return bool(exists and exists[0])


def quoted(names: Sequence[str]) -> str:
    """``names`` as a SQL column list, each quoted (``group`` is a keyword)."""
    return ", ".join(f'"{n}"' for n in names)


def connect(path: Path, *, read_only: bool) -> Connection:
    """The experiment file at ``path``, open; its damaged log cut (:mod:`conditions._wal`).

    Raises
    ------
    DataFileError
        The file is in use by another process, or is not a DuckDB file.
    """
    try:
        return opening_repaired(path, lambda: duckdb.connect(str(path), read_only=read_only))
    except duckdb.IOException as exc:
        if "lock" in str(exc).lower():  # DuckDB lets one process at a time have a written file
            raise DataFileError(
                path, "in use by another process (a run still going?); try again once it ends"
            ) from None
        raise DataFileError(path, f"not a usable DuckDB file: {exc}") from None
    except duckdb.Error as exc:
        raise DataFileError(path, f"not a usable DuckDB file: {exc}") from None
