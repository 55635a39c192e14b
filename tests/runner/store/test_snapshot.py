"""A store's snapshot while a run writes it: every table and view of one moment, written into
a file of its own, and nothing but a store's copy made into one."""

from __future__ import annotations

import dataclasses
import pickle
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

from runner.store import (
    SNAPSHOT_TABLE,
    GridRow,
    Registration,
    Store,
    StoreCopy,
    StoreError,
    read_only,
)
from runner.store._snapshot import CopiedTable, checked, copy_store, write_copy
from tests.runner.store.rows import attempt_row

# What the report's views say of a store: enough to see a copy read as the store does.
_VIEWS = (
    "SELECT * FROM request_status ORDER BY ALL",
    "SELECT * FROM cell_summary ORDER BY ALL",
    "SELECT count(*), count(DISTINCT qid) FROM responses WHERE outcome = 'answer'",
)


def _store(path: Path | str) -> Store:
    store = Store(path)
    store.register(
        [Registration("cfg", "a" * 64, "qwen", "m", 3, "{}")],
        [
            GridRow(configuration="cfg", condition="base", budget=8, qid=f"q{i}", attempts=3)
            for i in range(6)
        ],
    )
    store.write_responses([attempt_row(f"q{i}") for i in range(3)])
    store.write_responses([attempt_row("q3", outcome="transient")])
    return store


def _views(con: duckdb.DuckDBPyConnection) -> list[list[tuple[object, ...]]]:
    return [con.execute(sql).fetchall() for sql in _VIEWS]


def test_a_copy_reads_as_the_store_does_and_counts_its_answers(tmp_path: Path) -> None:
    with _store(tmp_path / "exp.duckdb") as store:
        copy = pickle.loads(pickle.dumps(store.queries.copy(60.0, "t")))  # as Ray carries it
        expected = _views(store.repository.connection)
    assert copy.answers == 3
    # A view replaced since the views that read it comes after them in the catalogue.
    backwards = dataclasses.replace(copy, views=copy.views[::-1])
    for k, sent in enumerate((copy, backwards)):
        (tmp_path / str(k)).mkdir()
        path = write_copy(checked(sent, "exp"), tmp_path / str(k), "exp")
        with read_only(path, locked=True) as con:
            assert _views(con) == expected
            assert {t.name for t in copy.tables} | {SNAPSHOT_TABLE} == {
                r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()
            }
            assert con.execute(f"SELECT taken FROM {SNAPSHOT_TABLE}").fetchall() == [(copy.taken,)]


def test_a_copy_is_of_the_moment_its_transaction_began(tmp_path: Path) -> None:
    """Rows written after the copy's transaction began are not in it, whatever it reads
    after them."""
    with _store(":memory:") as store, store.repository.connection.cursor() as cursor:
        cursor.execute("BEGIN TRANSACTION READ ONLY")
        cursor.execute("SELECT count(*) FROM grid").fetchall()
        store.write_responses([attempt_row("q4"), attempt_row("q5")])
        copy = copy_store(cursor)
        cursor.execute("ROLLBACK")
        assert store.repository.query("SELECT count(*) FROM responses")[1] == [(6,)]
    assert copy.answers == 3
    (responses,) = [t.rows for t in copy.tables if t.name == "responses"]
    assert responses.num_rows == 4


def test_a_copy_takes_a_query_slot(tmp_path: Path) -> None:
    """A snapshot is served as a query is: refused at once when every slot is taken."""
    with _store(":memory:") as store:
        service = store.queries
        held = [service._admit(f"busy{i}", 60.0, leased=False) for i in range(4)]
        try:
            with pytest.raises(StoreError, match="4 queries are running"):
                store.queries.copy(60.0, "t")
        finally:
            for name in [f"busy{i}" for i in range(4)]:
                service._running.pop(name)
            for query in held:
                query.cursor.close()
        assert store.queries.copy(60.0, "t").answers == 3


def _copy(tmp_path: Path) -> StoreCopy:
    with _store(tmp_path / "src.duckdb") as store:
        return store.queries.copy(60.0, "t")


def _with_table(copy: StoreCopy, name: str, definition: str) -> StoreCopy:
    extra = CopiedTable(name, definition, pa.table({"a": [1]}))
    return dataclasses.replace(copy, tables=(*copy.tables, extra))


@pytest.mark.parametrize(
    ("garbage", "said"),
    [
        (b"\x00garbage", "a bytes, not a copy of a store"),
        ({"tables": []}, "a dict, not a copy of a store"),
        ("taken", "no time it was taken"),
        ("table", "a table that is not one"),
        ("two", "defined as something else than CREATE TABLE x"),
        ("name", "a table named 'x; DROP'"),
        ("view", "view v defined as something else than CREATE VIEW v"),
        ("ours", f"a table named '{SNAPSHOT_TABLE}'"),
    ],
)
def test_anything_but_a_stores_copy_is_refused_in_one_line(
    tmp_path: Path, garbage: object, said: str
) -> None:
    copy = _copy(tmp_path)
    made: object = {
        "taken": dataclasses.replace(copy, taken="noon"),  # type: ignore[arg-type]
        "table": dataclasses.replace(copy, tables=(*copy.tables, "t")),  # type: ignore[arg-type]
        "two": _with_table(copy, "x", f"CREATE TABLE x(a INT); COPY x TO '{tmp_path}/out.csv'"),
        "name": _with_table(copy, "x; DROP", "CREATE TABLE x(a INT)"),
        "ours": _with_table(copy, SNAPSHOT_TABLE, f"CREATE TABLE {SNAPSHOT_TABLE}(a INT)"),
        "view": dataclasses.replace(
            copy, views=(*copy.views, ("v", f"COPY grid TO '{tmp_path}/v.csv'"))
        ),
    }.get(garbage, garbage) if isinstance(garbage, str) else garbage  # fmt: skip
    with pytest.raises(StoreError, match="sent no usable snapshot") as caught:
        checked(made, "exp.duckdb")
    assert said in str(caught.value)
    assert "\n" not in str(caught.value)
    assert not list(tmp_path.glob("*.csv"))


def test_a_view_that_reads_a_file_is_refused_as_it_is_made(tmp_path: Path) -> None:
    """A view that passes the check runs on a database that reaches no file: DuckDB refuses
    it as the copy is written, in one line."""
    copy = _copy(tmp_path)
    secret = tmp_path / "secret.txt"
    secret.write_text("not for the report")
    reading = ("leak", f"CREATE VIEW leak AS SELECT * FROM read_text('{secret}')")
    copy = dataclasses.replace(copy, views=(*copy.views, reading))
    folder = tmp_path / "snap"
    folder.mkdir()
    with pytest.raises(StoreError, match=r"could not be written.*Permission Error") as caught:
        write_copy(checked(copy, "exp.duckdb"), folder, "exp.duckdb")
    assert "\n" not in str(caught.value)
