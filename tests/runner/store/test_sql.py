"""Users' SQL reads the store and nothing else, on a finished file and on a running store alike;
a slow query is stopped at its limit and never holds up the writer."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import duckdb
import pytest

from runner.store import GridRow, Registration, Result, Store, StoreError, query_store
from runner.store._errors import joined_lines
from tests.runner.store.locks import lock_held
from tests.runner.store.rows import attempt_row

ROWS = 3  # the grid rows every store here holds

# Hostile queries, each refused with the reason shown, on either path. None of them may change
# the store or read anything outside it.
HOSTILE = [
    ("DELETE FROM grid", "not DELETE"),
    ("COMMIT; DELETE FROM grid", "one statement at a time, not 2"),
    ("WITH x AS (DELETE FROM grid RETURNING *) SELECT count(*) FROM x", "this one writes"),
    ("EXPLAIN ANALYZE DELETE FROM grid", "not EXPLAIN DELETE"),
    ("/* a comment */ EXPLAIN ANALYZE INSERT INTO grid SELECT * FROM grid", "not EXPLAIN INSERT"),
    ("SELECT * FROM read_text('/proc/self/environ')", "reads the store and nothing else"),
    ("SELECT * FROM read_csv('/etc/passwd')", "reads the store and nothing else"),
    ("SELECT * FROM glob('/*')", "reads the store and nothing else"),
    ("SELECT * FROM 'https://example.com/x.parquet'", "reads the store and nothing else"),
    ("SELECT * FROM sqlite_scan('/tmp/other.sqlite', 't')", "reads the store and nothing else"),
    ("SET enable_external_access = true", "not SET"),
    ("ATTACH '/tmp/other.duckdb'", "not ATTACH"),
    ("INSTALL httpfs", "not"),
    ("CREATE TEMP TABLE t AS SELECT 1", "not CREATE"),
    ("PRAGMA version", "not PRAGMA"),
]
# Fine queries, with the first row they give.
FINE = [
    ("/* c */ EXPLAIN SELECT 1", None),  # a comment before EXPLAIN once recursed without end
    ("WITH a AS (SELECT count(*) AS n FROM grid) SELECT n FROM a", (ROWS,)),
    ("FROM grid SELECT count(*)", (ROWS,)),
    ("DESCRIBE responses", None),
    ("SUMMARIZE grid", None),
]
# Runs for hours unless stopped: a filtered cross join no optimiser can skip.
ENDLESS = "SELECT count(*) FROM range(1000000) a, range(1000000) b WHERE a.range + b.range < 0"


def _grid_store(path: Path) -> Store:
    store = Store(path)
    store.register(
        [Registration("cfg", "a" * 64, "qwen", "m", 3, "{}")],
        [
            GridRow(configuration="cfg", condition="base", budget=8, qid=q, attempts=3)
            for q in ("q1", "q2", "q3")
        ],
    )
    return store


@pytest.fixture
def running(tmp_path: Path) -> Iterator[Store]:
    """A store open for writing, as a run's store actor holds it."""
    with _grid_store(tmp_path / "running.duckdb") as store:
        yield store


@pytest.fixture
def finished(tmp_path: Path) -> Path:
    """A store file no process holds."""
    path = tmp_path / "finished.duckdb"
    _grid_store(path).close()
    return path


Query = Callable[[str], Result]


def _paths(running: Store, finished: Path) -> dict[str, Query]:
    return {"running": running.queries.answer, "finished": lambda sql: query_store(finished, sql)}


@pytest.mark.parametrize("path", ["running", "finished"])
@pytest.mark.parametrize(("sql", "why"), HOSTILE, ids=[s for s, _ in HOSTILE])
def test_a_hostile_query_is_refused_in_one_line_and_changes_nothing(
    running: Store, finished: Path, path: str, sql: str, why: str
) -> None:
    query = _paths(running, finished)[path]
    with pytest.raises(StoreError, match=why) as caught:
        query(sql)
    assert "\n" not in str(caught.value)
    assert query("SELECT count(*) FROM grid")[1] == [(ROWS,)]


@pytest.mark.parametrize("path", ["running", "finished"])
@pytest.mark.parametrize(("sql", "first"), FINE, ids=[s for s, _ in FINE])
def test_a_query_of_any_read_only_kind_answers(
    running: Store, finished: Path, path: str, sql: str, first: tuple[object, ...] | None
) -> None:
    names, rows = _paths(running, finished)[path](sql)
    assert names and rows
    if first is not None:
        assert rows[0] == first


# Mistakes and the one line said: DuckDB's hint past its first line kept, and the check's own
# refusal of an unknown table giving the hint DuckDB would have.
HINTED = [
    (
        "SELECT * FROM gird",
        "no table or view 'gird' in the store: did you mean \"grid\"? (SHOW TABLES lists them); "
        "a query reads the store and nothing else",
    ),
    (
        "SELECT qidd FROM grid",
        'Binder Error: Referenced column "qidd" not found in FROM clause! Candidate bindings: '
        '"qid"',
    ),
]


@pytest.mark.parametrize("path", ["running", "finished"])
@pytest.mark.parametrize(("sql", "said"), HINTED, ids=[s for s, _ in HINTED])
def test_a_mistaken_query_keeps_duckdbs_hint_on_one_line(
    running: Store, finished: Path, path: str, sql: str, said: str
) -> None:
    with pytest.raises(StoreError) as caught:
        _paths(running, finished)[path](sql)
    where = running.path if path == "running" else finished
    assert str(caught.value) == f"{where}: {said}"  # no "LINE 1:" quote, no caret drawing


def test_a_listed_hint_reads_as_items_and_the_query_quote_is_dropped() -> None:
    with pytest.raises(duckdb.Error) as caught:
        duckdb.connect().execute("SELECT * FROM read_csv(1)")
    assert "\n\tread_csv(" in str(caught.value) and "LINE 1:" in str(caught.value)
    said = joined_lines(caught.value)
    assert "You might need to add explicit type casts. Candidate functions: read_csv(" in said
    assert said.count("; read_csv(") == str(caught.value).count("\tread_csv(") - 1
    assert "\n" not in said and "LINE" not in said and "^" not in said


@pytest.mark.parametrize("path", ["running", "finished"])
def test_a_query_past_its_limit_is_stopped_with_a_line_saying_so(
    running: Store, finished: Path, path: str
) -> None:
    with pytest.raises(StoreError, match=r"stopped at its time limit of 0\.3 s; narrow it"):
        if path == "running":
            running.queries.answer(ENDLESS, timeout_s=0.3)
        else:
            query_store(finished, ENDLESS, timeout_s=0.3)


def test_a_slow_query_holds_up_no_write_and_its_cancel_stops_it(running: Store) -> None:
    failure: list[str] = []

    def read() -> None:
        try:
            running.queries.answer(ENDLESS, timeout_s=600, token="t")
        except StoreError as exc:
            failure.append(str(exc))

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for qid in ("q1", "q2", "q3"):  # each write is a committed transaction
            assert running.write_responses([attempt_row(qid)]) == 1
        assert reader.is_alive()  # every write went through while the query ran
    finally:
        for _ in range(1200):  # a cancel before the query starts misses it: cancel again
            running.queries.cancel("t")
            reader.join(0.05)
            if not reader.is_alive():
                break
    assert not reader.is_alive()
    assert failure == [f"{running.path}: the query was cancelled by its client"]
    assert running.queries.answer("SELECT count(*) FROM responses")[1] == [(3,)]


# Queries that name the store's own files, which DuckDB lets a query read with external access
# off. Opening the file a second time in the process that holds it, then closing it, drops that
# process's POSIX lock: another process could then open the live store read-write.
OWN_FILES = [
    "SELECT * FROM read_text('{path}')",
    "SELECT * FROM read_blob('{path}')",
    "SELECT * FROM read_blob('{path}.wal')",
    "SELECT * FROM glob('{path}')",
    "SELECT * FROM read_duckdb('{path}')",
    "SELECT * FROM query('SELECT * FROM read_blob(''{path}'')')",
    "EXPLAIN ANALYZE SELECT * FROM read_blob('{path}')",
    "SELECT * FROM '{path}'",
    # A scalar that binds the SQL in its string (so opens its file) past the parse-tree check.
    "SELECT json_serialize_plan('SELECT * FROM read_csv(''{path}'')') IS NOT NULL",
    "SELECT JSON_SERIALIZE_PLAN('FROM sniff_csv(''{path}'')', optimize := true)",
    "SELECT 1 WHERE (SELECT main.json_serialize_plan('FROM read_text(''{path}'')')) IS NULL",
]


@pytest.mark.parametrize("template", OWN_FILES)
def test_a_query_naming_the_stores_own_file_is_refused_and_the_lock_holds(
    running: Store, template: str
) -> None:
    assert lock_held(running.path)
    running.write_responses([attempt_row("q1")])  # a log to read, as a run has
    refused = ""
    try:
        running.queries.answer(template.format(path=running.path))
    except StoreError as exc:
        refused = str(exc)
    assert lock_held(running.path)  # the lock before the refusal is checked: what failed
    assert "reads the store and nothing else" in refused or "no table or view" in refused
    assert "\n" not in refused


@pytest.mark.parametrize("template", OWN_FILES)
def test_a_query_of_a_finished_store_names_no_file_either(finished: Path, template: str) -> None:
    with pytest.raises(StoreError, match=r"reads the store and nothing else|no table or view"):
        query_store(finished, template.format(path=finished))
