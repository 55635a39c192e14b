"""The experiment file's one migrations table, as the cohort and box parts use it: tables made
by recorded migrations, older files adopted as they are, newer parts refused (the run part's
side is tests/runner/store/test_store.py)."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from conditions import (
    BOX_SET_MIGRATIONS,
    COHORT_MIGRATIONS,
    FILE_LOADERS,
    BoxSet,
    Cohort,
    DataFileError,
    SchemaTooNewError,
    applied_version,
    box_set,
    ensure_migrations,
    generate_box_benchmark,
    load_box_set,
    load_cohort,
    write_box_set,
    write_cohort,
)


def _migrations(path: Path) -> list[tuple[str, int]]:
    with duckdb.connect(str(path), read_only=True) as con:
        rows = con.execute("SELECT part, version FROM schema_migrations ORDER BY ALL").fetchall()
    return [(str(p), int(v)) for p, v in rows]


def _made_by(statements: tuple[str, ...]) -> set[str]:
    """The tables ``statements`` create."""
    creates = [s.split("CREATE TABLE", 1)[1] for s in statements if "CREATE TABLE" in s]
    return {c.split("(")[0].strip() for c in creates}


def _tables(path: Path) -> set[str]:
    with duckdb.connect(str(path), read_only=True) as con:
        rows = con.execute("SELECT table_name FROM duckdb_tables()").fetchall()
    return {str(r[0]) for r in rows}


@pytest.fixture
def boxes(tmp_path: Path) -> BoxSet:
    file, images = generate_box_benchmark("ref-adv", tmp_path / "data", questions=4)
    return box_set("ref-adv", FILE_LOADERS["ref-adv"](file, images), images, file.name)


def test_a_cohort_file_records_its_part(tmp_path: Path, small_cohort: Cohort) -> None:
    path = tmp_path / "exp.duckdb"
    write_cohort(path, small_cohort)
    assert _migrations(path) == [("cohort", 1)]
    assert _tables(path) == {"schema_migrations", *_made_by(COHORT_MIGRATIONS[0].statements)}


def test_a_box_file_records_its_part(tmp_path: Path, boxes: BoxSet) -> None:
    path = tmp_path / "exp.duckdb"
    write_box_set(path, boxes)
    assert _migrations(path) == [("boxes", 1)]
    assert _tables(path) == {"schema_migrations", "box_set", "box_questions"}


def test_a_cohort_from_before_the_migrations_table_is_adopted_as_version_1(
    tmp_path: Path, small_cohort: Cohort
) -> None:
    path = tmp_path / "exp.duckdb"
    write_cohort(path, small_cohort)
    with duckdb.connect(str(path)) as con:  # as groundbench left it: no migrations table at all
        con.execute("DROP TABLE schema_migrations")
    with duckdb.connect(str(path), read_only=True) as con:
        assert applied_version(con, "cohort") == 1  # what its tables are, though unrecorded
    assert load_cohort(path).hash == small_cohort.hash
    with duckdb.connect(str(path)) as con:
        ensure_migrations(con)
    assert _migrations(path) == [("cohort", 1)]
    assert load_cohort(path).hash == small_cohort.hash


def test_an_unparted_migrations_table_is_brought_to_parts_once(tmp_path: Path) -> None:
    path = tmp_path / "exp.duckdb"
    with duckdb.connect(str(path)) as con:  # a run migrations table of before: versions only
        con.execute(
            "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, what VARCHAR, "
            "applied_at TIMESTAMPTZ DEFAULT current_timestamp)"
        )
        con.execute("INSERT INTO schema_migrations (version, what) VALUES (1, 'a'), (2, 'b')")
        con.execute("CREATE TABLE box_set (hash VARCHAR)")  # made outside the migrations table
        assert applied_version(con, "run") == 2 and applied_version(con, "boxes") == 1
        for _ in range(2):
            ensure_migrations(con)
        rows = con.execute("SELECT part, version, what FROM schema_migrations ORDER BY ALL")
        assert [r[:2] for r in rows.fetchall()] == [("boxes", 1), ("run", 1), ("run", 2)]


@pytest.mark.parametrize("part", ["cohort", "boxes"])
def test_a_part_from_a_newer_groundbench_is_refused_in_one_line(
    tmp_path: Path, small_cohort: Cohort, boxes: BoxSet, part: str
) -> None:
    path = tmp_path / "exp.duckdb"
    if part == "cohort":
        write_cohort(path, small_cohort)
        known = COHORT_MIGRATIONS[-1].version
    else:
        write_box_set(path, boxes)
        known = BOX_SET_MIGRATIONS[-1].version
    with duckdb.connect(str(path)) as con:
        con.execute("INSERT INTO schema_migrations (part, version) VALUES (?, ?)", [part, 99])
    with pytest.raises(SchemaTooNewError, match=f"its {part} schema version 99 is newer") as e:
        load_cohort(path) if part == "cohort" else load_box_set(path)
    assert isinstance(e.value, DataFileError) and f"({known})" in str(e.value)
    assert "\n" not in str(e.value)
