"""The experiment file's migrations table: every table of the file is made by a migration,
and the file records which it has.

An experiment file holds three parts, each with its own numbered migrations: ``cohort``
(GroundBench's questions, targets and instances) or ``boxes`` (a box benchmark's questions),
written by this package, and ``run`` (what a run asked and what came back), written by
``runner.store``. The table ``schema_migrations`` holds one row per (part, version) applied.
Each change of schema is a new migration, never an edit of an old one: a file made by an older
groundbench is brought up to date when it is next written, and a part made by a newer one is
refused rather than misread.

Files made before the table named its parts hold a table of run versions only and cohort or
box tables made outside it; :func:`ensure_migrations` brings such a table to this form, and adopts
those tables as version 1 of their part, which is what they are.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import duckdb

from conditions._errors import DataFileError

Part = Literal["cohort", "boxes", "run"]

MIGRATIONS = "schema_migrations"
_MIGRATIONS_DDL = f"""CREATE TABLE {MIGRATIONS} (
    part VARCHAR NOT NULL, version INTEGER NOT NULL, what VARCHAR,
    applied_at TIMESTAMPTZ DEFAULT current_timestamp, PRIMARY KEY (part, version))"""
# The tables that version 1 of a part made, by which an unrecorded part is recognised.
_FIRST_TABLE: dict[Part, str] = {"cohort": "cohort", "boxes": "box_set"}


class SchemaTooNewError(DataFileError):
    """A part of the experiment file was made by a newer groundbench."""


@dataclass(frozen=True)
class Migration:
    """One change of one part's schema."""

    part: Part
    version: int
    what: str
    statements: tuple[str, ...]


def ensure_migrations(con: duckdb.DuckDBPyConnection) -> None:
    """Make the migrations table if the file has none, bring an older one to this form, and record
    cohort or box tables made before they were recorded. Call inside a transaction."""
    columns = _columns(con, MIGRATIONS)
    if not columns:
        con.execute(_MIGRATIONS_DDL)
    elif "part" not in columns:  # run versions only, keyed by version alone
        con.execute(f"ALTER TABLE {MIGRATIONS} RENAME TO {MIGRATIONS}_unparted")
        con.execute(_MIGRATIONS_DDL)
        con.execute(
            f"INSERT INTO {MIGRATIONS} (part, version, what, applied_at) "
            f"SELECT 'run', version, what, applied_at FROM {MIGRATIONS}_unparted"
        )
        con.execute(f"DROP TABLE {MIGRATIONS}_unparted")
    for part, table in _FIRST_TABLE.items():
        if _columns(con, table) and applied_version(con, part) == 0:
            con.execute(
                f"INSERT INTO {MIGRATIONS} (part, version, what) VALUES (?, 1, ?)",
                [part, f"{part} tables (made before the migrations table named its parts)"],
            )


def applied_version(con: duckdb.DuckDBPyConnection, part: Part) -> int:
    """The last version of ``part`` the file has (0: none). Reads a table of either form."""
    columns = _columns(con, MIGRATIONS)
    if "part" not in columns:  # no table, or one of before: tables made outside it are v1
        if part != "run":
            return 1 if _columns(con, _FIRST_TABLE[part]) else 0
        return _int(con, f"SELECT coalesce(max(version), 0) FROM {MIGRATIONS}") if columns else 0
    return _int(con, f"SELECT coalesce(max(version), 0) FROM {MIGRATIONS} WHERE part = ?", [part])


def check_known(con: duckdb.DuckDBPyConnection, where: str, migrations: Sequence[Migration]) -> int:
    """The file's version of the migrations' part, refused if this code does not know it.

    Raises
    ------
    SchemaTooNewError
        A newer groundbench made the part.
    """
    part, known = migrations[-1].part, migrations[-1].version
    found = applied_version(con, part)
    if found > known:
        raise SchemaTooNewError(
            where,
            f"its {part} schema version {found} is newer than this groundbench knows "
            f"({known}); upgrade groundbench to use it",
        )
    return found


def pending_migrations(
    con: duckdb.DuckDBPyConnection, where: str, migrations: Sequence[Migration]
) -> list[Migration]:
    """The migrations the file still lacks, in order (see :func:`check_known`)."""
    found = check_known(con, where, migrations)
    return [m for m in migrations if m.version > found]


def apply_migration(con: duckdb.DuckDBPyConnection, migration: Migration) -> None:
    """Run ``migration`` and record it; call inside the caller's transaction."""
    for statement in migration.statements:
        con.execute(statement)
    con.execute(
        f"INSERT INTO {MIGRATIONS} (part, version, what) VALUES (?, ?, ?)",
        [migration.part, migration.version, migration.what],
    )


def _columns(con: duckdb.DuckDBPyConnection, table: str) -> set[str]:
    rows = con.execute(
        "SELECT column_name FROM duckdb_columns() WHERE table_name = ? "
        "AND database_name = current_database() AND schema_name = 'main'",
        [table],
    ).fetchall()
    return {r[0] for r in rows}


def _int(con: duckdb.DuckDBPyConnection, sql: str, params: list[object] | None = None) -> int:
    row = con.execute(sql, params or []).fetchone()
    return int(row[0]) if row else 0
