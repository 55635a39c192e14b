"""The repository: migrations, idempotent batched writes, the pending set, the reads."""

from __future__ import annotations

import itertools
import subprocess
import sys
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import duckdb
import pytest
from hypothesis import given
from hypothesis import strategies as st

from conditions import COHORT_MIGRATIONS, Cohort, ProtocolMismatchError, write_cohort
from runner.store import (
    CONTROL_SCHEMA,
    MIGRATIONS,
    REFERENCE_SCHEMA,
    RESPONSE_COLUMNS,
    SCHEMA_VERSION,
    SCORE_SCHEMA,
    ControlRow,
    GridRow,
    ReferenceRow,
    Registration,
    Repository,
    ResponseRow,
    ScoreRow,
    StoreError,
    check_query,
    grid_table,
    pending_rows,
    read_only,
)
from tests.runner.store.rows import T0, attempt_row


@pytest.mark.parametrize(
    ("row", "columns"),
    [
        (ResponseRow, RESPONSE_COLUMNS),
        (ScoreRow, tuple(SCORE_SCHEMA.names)),
        (ControlRow, tuple(CONTROL_SCHEMA.names)),
        (ReferenceRow, tuple(REFERENCE_SCHEMA.names)),
    ],
)
def test_each_row_names_its_tables_columns_in_order(row: type, columns: tuple[str, ...]) -> None:
    assert row._fields == columns  # type: ignore[attr-defined]


def _registration(name: str = "cfg", protocol: str = "a" * 64, attempts: int = 3) -> Registration:
    return Registration(name, protocol, "qwen", "m", attempts, "{}")


def _grid(qids: list[str], attempts: int = 3, budgets: tuple[int, ...] = (8,)) -> list[GridRow]:
    return [
        GridRow(configuration="cfg", condition="base", budget=b, qid=q, attempts=attempts)
        for b in budgets
        for q in qids
    ]


@pytest.fixture
def store(tmp_path: Path) -> Repository:
    s = Repository(tmp_path / "exp.duckdb")
    s.register([_registration()], _grid(["q1", "q2", "q3"]))
    return s


def _rows(store: Repository) -> list[tuple[object, ...]]:
    _, rows = store.query(
        "SELECT qid, attempt, outcome, answer FROM responses ORDER BY qid, attempt"
    )
    return rows


def test_a_new_file_gets_every_migration_once(tmp_path: Path) -> None:
    path = tmp_path / "exp.duckdb"
    with Repository(path) as s:
        assert s.version() == SCHEMA_VERSION
    with Repository(path) as s:  # reopening applies nothing twice
        _, rows = s.query("SELECT version FROM schema_migrations ORDER BY version")
        assert [r[0] for r in rows] == [m.version for m in MIGRATIONS]


def test_every_table_of_a_cohort_and_run_file_is_made_by_a_recorded_migration(
    tmp_path: Path, small_cohort: Cohort
) -> None:
    path = tmp_path / "exp.duckdb"
    write_cohort(path, small_cohort)
    Repository(path).close()
    with duckdb.connect(str(path), read_only=True) as con:
        ledger = con.execute("SELECT part, version FROM schema_migrations ORDER BY ALL").fetchall()
        tables = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    assert ledger == [("cohort", 1), *(("run", m.version) for m in MIGRATIONS)]
    statements = [s for m in (*COHORT_MIGRATIONS, *MIGRATIONS) for s in m.statements]
    made = {s.split("CREATE TABLE", 1)[1].split("(")[0].strip() for s in statements
            if "CREATE TABLE" in s}  # fmt: skip
    assert tables == made | {"schema_migrations"}


def test_a_file_of_an_older_groundbench_is_brought_up_to_date_keeping_its_rows(
    tmp_path: Path,
) -> None:
    path = tmp_path / "exp.duckdb"
    with duckdb.connect(str(path)) as con:  # as groundbench made it before the box benchmarks
        con.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, what VARCHAR, "
                    "applied_at TIMESTAMPTZ DEFAULT current_timestamp)")  # fmt: skip
        for migration in MIGRATIONS[:2]:
            for statement in migration.statements:
                con.execute(statement)
            con.execute("INSERT INTO schema_migrations (version) VALUES (?)", [migration.version])
        con.execute("INSERT INTO configurations (name, protocol) VALUES ('cfg', 'p')")
        con.execute("INSERT INTO grid VALUES ('cfg', 'base', 8, 'q1', 3)")
        con.execute("INSERT INTO responses (configuration, condition, budget, qid, attempt, "
                    "outcome, parseable, answer, seq) "
                    "VALUES ('cfg', 'base', 8, 'q1', 0, 'answer', true, '[1, 2]', 1)")  # fmt: skip
        con.execute("INSERT INTO scores (configuration, condition, budget, qid, attempt, iou) "
                    "VALUES ('cfg', 'base', 8, 'q1', 0, 0.5)")  # fmt: skip
    with Repository(path) as s:
        assert s.version() == SCHEMA_VERSION == 8
        _, rows = s.query("SELECT iou, says_absent FROM scores")
        assert rows == [(0.5, None)]  # kept, with the new column empty
        _, rows = s.query("SELECT name, reading FROM configurations")
        assert rows == [("cfg", None)]
        assert s.unscored() == 0 and s.pending() == []


def test_a_file_before_re_scoring_gets_its_table_and_keeps_its_rows(tmp_path: Path) -> None:
    path = tmp_path / "exp.duckdb"
    with duckdb.connect(str(path)) as con:  # as groundbench made it before migration 4
        con.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, what VARCHAR, "
                    "applied_at TIMESTAMPTZ DEFAULT current_timestamp)")  # fmt: skip
        for migration in MIGRATIONS[:3]:
            for statement in migration.statements:
                con.execute(statement)
            con.execute("INSERT INTO schema_migrations (version) VALUES (?)", [migration.version])
        con.execute("INSERT INTO grid VALUES ('cfg', 'base', 8, 'q1', 3)")
        con.execute("INSERT INTO responses (configuration, condition, budget, qid, attempt, "
                    "outcome, parseable, answer, seq) "
                    "VALUES ('cfg', 'base', 8, 'q1', 0, 'answer', true, '[1, 2]', 1)")  # fmt: skip
        con.execute("INSERT INTO scores (configuration, condition, budget, qid, attempt, iou, "
                    "says_absent) VALUES ('cfg', 'base', 8, 'q1', 0, 0.5, false)")  # fmt: skip
    with Repository(path) as s:
        assert s.version() == SCHEMA_VERSION
        assert s.query("SELECT iou, says_absent FROM scores")[1] == [(0.5, False)]
        assert s.query("SELECT count(*) FROM reference_scores")[1] == [(0,)]
        assert s.polygon_answers() == 1
        assert [j.answer for j in s.unrescored(["phase0"])] == ["[1, 2]"]
        _, columns = s.query(
            "SELECT column_name, data_type FROM information_schema.columns "
            "WHERE table_name = 'reference_scores' ORDER BY ordinal_position"
        )
        assert columns == [
            ("configuration", "VARCHAR"), ("condition", "VARCHAR"), ("budget", "INTEGER"),
            ("qid", "VARCHAR"), ("attempt", "INTEGER"), ("reference", "VARCHAR"),
            ("iou", "DOUBLE"),
        ]  # fmt: skip


def test_reference_rows_are_written_once_and_only_polygon_answers_wait(tmp_path: Path) -> None:
    with Repository(tmp_path / "exp.duckdb") as s:
        s.register([_registration()], _grid(["q1", "q2", "q3"], budgets=(8, 0)))
        s.write_responses(
            [attempt_row("q1"), attempt_row("q2", parseable=False, answer="no list"),
             attempt_row("q3", outcome="transient"), attempt_row("q1", budget=0)]
        )  # fmt: skip
        assert s.polygon_answers() == 1  # not the unparseable, the error or the box answer
        (job,) = s.unrescored(["phase0", "part"])
        key = job.key
        assert key == ("cfg", "base", 8, "q1", 0)
        assert s.write_reference_scores([ReferenceRow(*key, "phase0", 0.25)]) == 1
        assert s.unrescored(["phase0", "part"]) == [job]  # "part" is still missing
        assert s.unrescored(["phase0"]) == []
        again = [ReferenceRow(*key, *r) for r in (("phase0", 0.99), ("part", 0.5), ("part", 0.5))]
        assert s.write_reference_scores(again) == 1  # the stored phase0 row is kept
        assert s.unrescored(["phase0", "part"]) == []
        _, rows = s.query("SELECT reference, iou FROM reference_scores ORDER BY reference")
        assert rows == [("part", 0.5), ("phase0", 0.25)]
        assert s.write_reference_scores([]) == 0


def test_a_file_from_a_newer_groundbench_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "exp.duckdb"
    Repository(path).close()
    with duckdb.connect(str(path)) as con:
        con.execute("INSERT INTO schema_migrations (part, version) VALUES ('run', 99)")
    with pytest.raises(StoreError, match="its run schema version 99 is newer"):
        Repository(path)


def test_a_file_that_is_not_duckdb_is_one_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "exp.duckdb"
    path.write_bytes(b"not a database at all" * 100)
    with pytest.raises(StoreError, match=r"exp\.duckdb") as caught:
        Repository(path)
    assert "\n" not in str(caught.value)
    assert path.read_bytes() == b"not a database at all" * 100  # nothing written


def test_the_pending_set_is_the_grid_at_first(store: Repository) -> None:
    pending = store.pending()
    assert [(p.qid, p.next_attempt) for p in pending] == [("q1", 0), ("q2", 0), ("q3", 0)]


@pytest.mark.parametrize(
    "grid",
    [
        _grid(["q1", "q2", "q3"]),  # the same again: nothing changes
        _grid(["q2", "q4"]),  # a question dropped, one added
        _grid(["q1", "q2", "q3"], attempts=2),  # the same keys, fewer attempts
        [],
    ],
)
def test_registering_a_grid_leaves_exactly_that_grid(
    store: Repository, grid: list[GridRow]
) -> None:
    store.register([_registration()], grid)
    store.register([_registration()], grid_table(grid))  # as the driver ships it: the same
    stored = store.query("SELECT * FROM grid ORDER BY ALL")[1]
    assert stored == sorted(grid)


def test_the_pending_columns_name_each_configuration_once_and_select_by_name(
    store: Repository,
) -> None:
    store.register(
        [_registration(), _registration("other")],
        [*_grid(["q1", "q2", "q3"]), *(g._replace(configuration="other") for g in _grid(["q1"]))],
    )
    table = store.pending_table(["cfg"])
    assert table.num_rows == 3
    rows = pending_rows(table)
    assert (
        rows == store.pending(["cfg"]) == [p for p in store.pending() if p.configuration == "cfg"]
    )
    assert rows[0].configuration is rows[2].configuration  # one string, not one per request
    assert pending_rows(store.pending_table([])) == []


def test_a_key_written_twice_keeps_its_first_answer(store: Repository) -> None:
    store.write_responses([attempt_row("q1", answer="[first]")])
    store.write_responses([attempt_row("q1", answer="[second]")])
    store.write_responses([attempt_row("q1", answer="[third]"), attempt_row("q1", answer="[4th]")])
    assert _rows(store) == [("q1", 0, "answer", "[first]")]


def test_an_error_gives_way_to_a_later_answer_never_the_reverse(store: Repository) -> None:
    store.write_responses([attempt_row("q1", outcome="transient")])
    assert _rows(store) == [("q1", 0, "transient", None)]
    store.write_responses([attempt_row("q1", answer="[late]")])
    store.write_responses([attempt_row("q1", outcome="quota")])
    assert _rows(store) == [("q1", 0, "answer", "[late]")]


def test_within_a_batch_the_first_answer_wins(store: Repository) -> None:
    batch = [
        attempt_row("q2", outcome="transient"),
        attempt_row("q2", answer="[a]"),
        attempt_row("q2", outcome="fatal"),
        attempt_row("q2", answer="[b]"),
    ]
    assert len(store.write_responses(batch)) == 1
    assert _rows(store) == [("q2", 0, "answer", "[a]")]


def test_pending_follows_the_attempts(store: Repository) -> None:
    store.write_responses(
        [
            attempt_row("q1", 0, parseable=False, answer="no list"),  # goes on at attempt 1
            attempt_row("q2", 0, parseable=True),  # complete
            attempt_row("q3", 0, parseable=False, answer="no"),
            attempt_row("q3", 1, outcome="transient"),  # errored: attempt 1 again
        ]
    )
    pending = {p.qid: p.next_attempt for p in store.pending()}
    assert pending == {"q1": 1, "q3": 1}
    _, status = store.query("SELECT qid, status FROM request_status ORDER BY qid")
    assert status == [("q1", "pending"), ("q2", "complete"), ("q3", "errored")]
    store.write_responses(
        [attempt_row("q1", 1, parseable=False, answer="x"), attempt_row("q1", 2, parseable=False)]
    )
    assert {p.qid for p in store.pending()} == {"q3"}  # three unparseable answers: complete


def test_a_best_effort_configuration_gets_a_fourth_attempt(tmp_path: Path) -> None:
    with Repository(tmp_path / "exp.duckdb") as s:
        s.register([_registration(attempts=4)], _grid(["q1"], attempts=4))
        s.write_responses([attempt_row("q1", a, parseable=False) for a in range(3)])
        assert [p.next_attempt for p in s.pending()] == [3]


def test_another_protocol_under_the_same_name_is_refused(store: Repository) -> None:
    with pytest.raises(ProtocolMismatchError, match="configuration cfg"):
        store.register([_registration(protocol="b" * 64)], _grid(["q1"]))
    assert len(store.pending()) == 3  # the refused registration changed nothing


def test_a_failing_batch_leaves_nothing(store: Repository) -> None:
    good = attempt_row("q1")
    bad = attempt_row("q2")._replace(qid=None)  # type: ignore[arg-type]  # a key may not be null
    with pytest.raises(duckdb.Error):
        store.write_responses([good, bad])
    assert _rows(store) == []
    assert store.unscored_answers() == []


def test_progress_counts_requests_and_rows(store: Repository) -> None:
    store.write_responses([attempt_row("q1"), attempt_row("q2", outcome="transient")])
    (p,) = store.progress()
    assert (p.requests, p.complete, p.errored, p.pending) == (3, 1, 1, 2)
    assert (p.responses, p.answered, p.input_tokens, p.output_tokens) == (2, 1, 10, 5)


def test_read_only_refuses_while_a_store_holds_the_file(tmp_path: Path) -> None:
    path = tmp_path / "exp.duckdb"
    with pytest.raises(StoreError, match="no such experiment file"):
        read_only(path)
    with Repository(path):
        pass
    with read_only(path) as con, pytest.raises(duckdb.Error):
        con.execute("DELETE FROM grid")


def test_a_file_another_process_writes_is_refused_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "exp.duckdb"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from runner.store import Repository; "
         f"s = Repository({str(path)!r}); print('ready', flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        with pytest.raises(StoreError, match="a run holds the file"):
            read_only(path)
        with pytest.raises(StoreError, match="cannot open the store") as caught:
            Repository(path, lock_wait_s=0.3)
        assert "\n" not in str(caught.value)
    finally:
        holder.kill()
        holder.wait()


Event = tuple[str, int, str]  # qid, attempt, outcome


@pytest.fixture(scope="module")
def shared_store() -> Iterator[Repository]:
    """One in-memory store for every example of the law: opening one takes ~40 ms, two thirds
    of an example."""
    with Repository(":memory:") as s:
        yield s


_EXAMPLES = itertools.count()
_ALL_RESPONSES = "SELECT qid, attempt, outcome, answer FROM responses ORDER BY qid, attempt"


@given(
    st.lists(
        st.lists(
            st.tuples(
                st.sampled_from(["q1", "q2"]),
                st.integers(0, 1),
                st.sampled_from(["answer", "transient", "fatal"]),
            ),
            max_size=6,
        ),
        max_size=5,
    )
)
def test_law_the_table_is_the_fold_of_its_batches(
    shared_store: Repository, batches: list[list[Event]]
) -> None:
    """Whatever the batches, each key holds its first answer, else its last error.

    Each example writes questions of its own (``e7:q1``) into the shared store, so it folds
    from no row of its keys, as in a fresh store, beside the earlier examples' rows, which it
    must leave as they were.
    """
    s, example = shared_store, next(_EXAMPLES)
    _, earlier = s.query(_ALL_RESPONSES)
    expected: dict[tuple[str, int], tuple[str, str | None]] = {}
    for n, batch in enumerate(batches):
        rows = []
        for i, (qid, attempt, outcome) in enumerate(batch):
            qid, answer = f"e{example}:{qid}", f"[{n}.{i}]"
            rows.append(attempt_row(qid, attempt, outcome=outcome, answer=answer))
            held = expected.get((qid, attempt))
            if held is None or held[0] != "answer":
                expected[(qid, attempt)] = (outcome, answer if outcome == "answer" else None)
        s.write_responses(rows)
    _, stored = s.query(_ALL_RESPONSES)
    mine = f"e{example}:"
    assert {(q, a): (o, t) for q, a, o, t in stored if q.startswith(mine)} == expected
    assert [row for row in stored if not row[0].startswith(mine)] == earlier


def _score(qid: str, attempt: int, iou: float) -> ScoreRow:
    return ScoreRow(
        "cfg", "base", 8, qid, attempt, parseable=True, iou=iou, iou_part=iou, iou_union=iou,
        iou_cont=iou, iou_distractor=0.0, legal=True, legal_iou=iou, sel=True,
    )  # fmt: skip


def test_question_scores_lock_the_first_parseable_attempt_of_each_view(store: Repository) -> None:
    store.write_responses(
        [
            attempt_row("q1", 0, parseable=False, answer="no list"),
            attempt_row("q1", 1, parseable=True),
            attempt_row("q2", 0, parseable=True),  # answered, not scored yet
        ]
    )
    store.write_scores([_score("q1", 1, 0.5)], [])
    _, rows = store.query(
        "SELECT qid, view, attempt, settled, parseable, iou, defect FROM question_scores "
        "WHERE view IN ('iou0', 'iou1', 'iou2') ORDER BY qid, view"
    )
    assert rows == [
        ("q1", "iou0", None, True, False, 0.0, "unparseable"),  # attempt 0 did not parse
        ("q1", "iou1", 1, True, True, 0.5, None),
        ("q1", "iou2", 1, True, True, 0.5, None),
        ("q2", "iou0", 0, False, True, 0.0, None),  # waits for its score
        ("q2", "iou1", 0, False, True, 0.0, None),
        ("q2", "iou2", 0, False, True, 0.0, None),
        ("q3", "iou0", None, False, False, 0.0, "unparseable"),  # nothing yet
        ("q3", "iou1", None, False, False, 0.0, "unparseable"),
        ("q3", "iou2", None, False, False, 0.0, "unparseable"),
    ]
    _, cells = store.query(
        "SELECT view, questions, settled, complete, parse_rate, fixed_iou FROM cell_summary "
        "WHERE view IN ('iou0', 'iou2') ORDER BY view"
    )
    assert cells == [("iou0", 3, 1, False, 0.0, 0.0), ("iou2", 3, 1, False, 100.0, 50.0)]


@pytest.mark.parametrize(
    "sql",
    ["SELECT 1", "WITH a AS (SELECT 1) SELECT * FROM a", "DESCRIBE responses", "SHOW TABLES",
     "EXPLAIN SELECT 1", "FROM grid", "SUMMARIZE grid"],
)  # fmt: skip
def test_queries_are_allowed(sql: str) -> None:
    check_query(sql)


@pytest.mark.parametrize(
    ("sql", "why"),
    [
        ("DELETE FROM grid", "not DELETE"),
        ("SELECT 1; DROP TABLE grid", "one statement at a time, not 2"),
        ("COPY grid TO 'x.csv'", "not COPY"),
        ("ATTACH 'other.db'", "not ATTACH"),
        ("SELEC 1", "not valid SQL"),
        ("", "not 0"),
    ],
)
def test_anything_but_a_query_is_refused(sql: str, why: str) -> None:
    with pytest.raises(StoreError, match=why):
        check_query(sql)


def test_the_errors_of_requests_left_are_counted_most_frequent_first(store: Repository) -> None:
    store.write_responses(
        [
            attempt_row("q1", outcome="fatal"),
            attempt_row("q2", outcome="fatal"),
            attempt_row("q3", outcome="transient"),
        ]
    )
    (fatal, transient) = store.error_counts()
    assert (fatal.configuration, fatal.kind, fatal.status, fatal.count) == ("cfg", "fatal", 503, 2)
    assert fatal.message == "fatal error"
    assert (transient.kind, transient.count) == ("transient", 1)
    assert store.error_counts(per_configuration=1) == [fatal]
    # An error that a later answer settled keeps nothing from completing: it is not counted.
    store.write_responses([attempt_row("q3", answer="[1, 2, 3, 4]")])
    assert [e.kind for e in store.error_counts()] == ["fatal"]


# -- what an attempt was billed (issue 56) --------------------------------------------------------


def test_an_error_that_was_billed_passes_its_bill_to_the_row_that_replaces_it(
    tmp_path: Path,
) -> None:
    later = T0 + timedelta(hours=1)  # the next run's call
    with Repository(tmp_path / "s.duckdb") as s:
        # A 200 whose answer could not be read, counted at its worst case; the next run's
        # answer to the same attempt replaces it, and the store still holds both bills.
        s.write_responses([attempt_row("q1", outcome="transient", billed=(4000, 1000, 1))])
        s.write_responses([attempt_row("q1", started_at=later)])
        # Within one write, an error after an answer adds its bill to the answer kept.
        s.write_responses(
            [
                attempt_row("q2"),
                attempt_row("q2", outcome="transient", billed=(7, 3, 0), started_at=later),
            ]
        )
        # A batch's results read again (a run stopped reading them): the same call, one bill.
        s.write_responses([attempt_row("q3", outcome="transient", billed=(5, 5, 0))])
        s.write_responses([attempt_row("q3", outcome="transient", billed=(5, 5, 0))])
        rows = s.query(
            "SELECT qid, outcome, input_tokens, output_tokens, usage_unknown FROM responses "
            "ORDER BY qid"
        )[1]
    assert rows == [
        ("q1", "answer", 4010, 1005, 1),
        ("q2", "answer", 17, 8, 0),
        ("q3", "transient", 5, 5, 0),
    ]


def test_a_row_arrow_cannot_hold_is_that_attempts_problem_and_the_others_are_kept(
    tmp_path: Path,
) -> None:
    with Repository(tmp_path / "s.duckdb") as s:
        bad = attempt_row("q1", answer="\ud800")  # valid JSON, no UTF-8
        written = s.write_responses([bad, attempt_row("q2")])
        rows = s.query(
            "SELECT qid, outcome, error_code, answer, input_tokens FROM responses ORDER BY qid"
        )[1]
    assert len(written) == 2
    assert rows == [
        ("q1", "transient", "not-stored", None, 10),
        ("q2", "answer", None, "[1, 2, 3, 4]", 10),
    ]
