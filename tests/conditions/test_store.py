"""A cohort in the experiment's DuckDB file: all of it or none of it, and only one."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import conditions._store as store
from conditions import (
    Cohort,
    CohortMismatchError,
    DataFileError,
    load_cohort,
    stored_cohort_hash,
    write_cohort,
)


def tables(path: Path) -> set[str]:
    with duckdb.connect(str(path), read_only=True) as con:
        return {
            r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()
        }


def test_a_cohort_round_trips_with_its_hash(tmp_path: Path, small_cohort: Cohort) -> None:
    path = tmp_path / "experiment.duckdb"
    assert write_cohort(path, small_cohort)
    assert stored_cohort_hash(path) == small_cohort.hash
    loaded = load_cohort(path)
    assert loaded.hash == small_cohort.hash
    assert loaded.questions == small_cohort.questions
    assert dict(loaded.targets) == dict(small_cohort.targets)
    assert loaded.fidelity == pytest.approx(dict(small_cohort.fidelity))
    assert loaded.reports == small_cohort.reports
    assert tables(path) == {"cohort", "questions", "targets", "instances", "schema_migrations"}


def test_the_tables_answer_sql(tmp_path: Path, small_cohort: Cohort) -> None:
    path = tmp_path / "experiment.duckdb"
    write_cohort(path, small_cohort)
    with duckdb.connect(str(path), read_only=True) as con:
        rows = con.execute(
            "SELECT count(*), count(DISTINCT qid) FROM targets WHERE budget = 64 AND phase = 0"
        ).fetchone()
        lengths = con.execute(
            "SELECT DISTINCT len(vertices) FROM targets WHERE budget = 8"
        ).fetchall()
    assert rows == (45, 45)
    assert lengths == [(16,)]


def test_writing_the_same_cohort_again_is_a_no_op(tmp_path: Path, small_cohort: Cohort) -> None:
    path = tmp_path / "experiment.duckdb"
    assert write_cohort(path, small_cohort)
    assert not write_cohort(path, small_cohort)


def test_a_different_cohort_is_refused_and_the_file_is_untouched(
    tmp_path: Path, small_cohort: Cohort, real_cohort: Cohort
) -> None:
    path = tmp_path / "experiment.duckdb"
    write_cohort(path, small_cohort)
    with pytest.raises(CohortMismatchError, match="already holds cohort"):
        write_cohort(path, real_cohort)
    assert load_cohort(path).hash == small_cohort.hash


def test_a_cohort_drawn_otherwise_names_each_field_that_differs(
    tmp_path: Path, small_cohort: Cohort
) -> None:
    path = tmp_path / "experiment.duckdb"
    write_cohort(path, small_cohort)
    other = replace(small_cohort, spec=small_cohort.spec.model_copy(update={"seed": 7}))
    with pytest.raises(CohortMismatchError) as caught:
        write_cohort(path, other)
    message = str(caught.value)
    assert (
        f"; this one is {other.hash[:12]} (cohort.seed: {small_cohort.spec.seed} → 7). " in message
    )
    assert message.endswith("build this one into a new file, or draw it as the stored one was")


def test_a_failed_write_leaves_nothing_behind(
    tmp_path: Path, small_cohort: Cohort, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "experiment.duckdb"
    real_insert = store._insert

    def failing(
        con: duckdb.DuckDBPyConnection, table: str, columns: dict[str, list[object]]
    ) -> None:
        if table == "instances":
            raise OSError("disk full")
        real_insert(con, table, columns)

    monkeypatch.setattr(store, "_insert", failing)
    with pytest.raises(OSError, match="disk full"):
        write_cohort(path, small_cohort)
    assert tables(path) == set()
    assert stored_cohort_hash(path) is None
    monkeypatch.undo()
    assert write_cohort(path, small_cohort)  # and the file is still usable


def test_an_edited_cohort_no_longer_loads(tmp_path: Path, small_cohort: Cohort) -> None:
    path = tmp_path / "experiment.duckdb"
    write_cohort(path, small_cohort)
    with duckdb.connect(str(path)) as con:
        con.execute("UPDATE questions SET expression = 'something else' WHERE rowid = 0")
    with pytest.raises(DataFileError, match="no longer matches its hash"):
        load_cohort(path)


@pytest.mark.parametrize("content", [None, b"not duckdb", "empty"])
def test_missing_or_foreign_files_are_named(tmp_path: Path, content: bytes | str | None) -> None:
    path = tmp_path / "experiment.duckdb"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content == "empty":
        duckdb.connect(str(path)).close()
    with pytest.raises(DataFileError) as err:
        load_cohort(path)
    assert str(err.value).startswith(str(path))


@dataclass(frozen=True)
class _Good:
    """A good experiment file's bytes and its cohort's hash (short repr: hypothesis prints it)."""

    data: bytes = field(repr=False)
    cohort_hash: str


@pytest.fixture(scope="module")
def good_file(tmp_path_factory: pytest.TempPathFactory, small_cohort: Cohort) -> _Good:
    path = tmp_path_factory.mktemp("cohort") / "experiment.duckdb"
    write_cohort(path, small_cohort)
    return _Good(path.read_bytes(), small_cohort.hash)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    cuts=st.lists(st.tuples(st.floats(0.0, 1.0), st.binary(min_size=1, max_size=64)), max_size=4),
    keep=st.none() | st.floats(0.0, 1.0),
)
def test_a_damaged_cohort_file_is_one_clear_line_and_is_left_as_it_was(
    good_file: _Good,
    tmp_path_factory: pytest.TempPathFactory,
    cuts: list[tuple[float, bytes]],
    keep: float | None,
) -> None:
    damaged = bytearray(good_file.data)
    for where, garbage in cuts:  # overwrite bytes somewhere
        at = int(where * (len(damaged) - len(garbage)))
        damaged[at : at + len(garbage)] = garbage
    if keep is not None:  # or cut the file short
        damaged = damaged[: int(keep * len(damaged))]
    path = tmp_path_factory.mktemp("damaged") / "experiment.duckdb"
    path.write_bytes(bytes(damaged))
    try:
        loaded = load_cohort(path)
    except DataFileError as exc:
        text = str(exc)
        assert text.startswith(str(path)) and "\n" not in text
    else:
        assert loaded.hash == good_file.cohort_hash  # the damage missed the cohort's content
    assert path.read_bytes() == bytes(damaged)  # nothing written
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]
