"""The store as a run holds it: its score queue kept in step with the repository's writes, and
users' queries served on the repository's file beside them."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.store import GridRow, Registration, ScoreRow, Store, StoreError
from tests.runner.store.rows import attempt_row


def _registration() -> Registration:
    return Registration("cfg", "a" * 64, "qwen", "m", 3, "{}")


def _grid(qids: list[str]) -> list[GridRow]:
    return [
        GridRow(configuration="cfg", condition="base", budget=8, qid=q, attempts=3) for q in qids
    ]


@pytest.fixture
def store(tmp_path: Path) -> Store:
    s = Store(tmp_path / "exp.duckdb")
    s.register([_registration()], _grid(["q1", "q2", "q3"]))
    return s


def test_an_answer_stored_is_queued_and_an_error_is_not(store: Store) -> None:
    written = store.write_responses([attempt_row("q1"), attempt_row("q2", outcome="transient")])
    assert written == 2
    assert [j.key for j in store.score_queue.take(10)] == [attempt_row("q1").key]


def test_an_answer_already_stored_is_not_queued_twice(store: Store) -> None:
    store.write_responses([attempt_row("q1")])
    assert store.write_responses([attempt_row("q1", answer="[9]")]) == 0
    assert [j.answer for j in store.score_queue.take(10)] == ["[1, 2, 3, 4]"]


def test_a_changed_reading_rescores_that_configuration_only(tmp_path: Path) -> None:
    def registration(name: str, reading: str) -> Registration:
        return Registration(name, "a" * 64, "qwen", "m", 1, "{}", reading)

    grid = [
        GridRow(configuration=c, condition="direct", budget=0, qid="q1", attempts=1)
        for c in ("a", "b")
    ]
    rows = [attempt_row("q1", configuration=c, condition="direct", budget=0) for c in ("a", "b")]
    with Store(tmp_path / "exp.duckdb") as s:
        assert s.register([registration("a", "unit"), registration("b", "unit")], grid) == []
        s.write_responses(rows)
        jobs = s.score_queue.take(10)
        s.repository.write_scores(
            [ScoreRow.of(j.key, parseable=True, box_iou=0.9, says_absent=False) for j in jobs], []
        )
        assert s.repository.unscored() == 0 and s.score_queue.take(10) == []
        changed = s.register([registration("a", "pixels"), registration("b", "unit")], grid)
        assert changed == [("a", "unit", 1)]
        assert [j.configuration for j in s.score_queue.take(10)] == ["a"]  # read again, not re-sent
        assert s.repository.pending() == []
        _, kept = s.repository.query("SELECT configuration FROM scores")
        assert kept == [("b",)]
        _, readings = s.repository.query("SELECT name, reading FROM configurations ORDER BY name")
        assert readings == [("a", "pixels"), ("b", "unit")]
        assert s.register([registration("a", "pixels"), registration("b", "unit")], grid) == []


def test_answers_are_queued_for_scoring_once_and_again_after_reopening(tmp_path: Path) -> None:
    path = tmp_path / "exp.duckdb"
    with Store(path) as s:
        s.register([_registration()], _grid(["q1", "q2"]))
        s.write_responses([attempt_row("q1"), attempt_row("q2", outcome="transient")])
        jobs = s.score_queue.take(10)
        assert [(j.qid, j.answer) for j in jobs] == [("q1", "[1, 2, 3, 4]")]
        assert s.score_queue.take(10) == []
    with Store(path) as s:  # not scored before the store closed: queued again
        assert [j.qid for j in s.score_queue.take(10)] == ["q1"]
        assert s.repository.unscored() == 1
        score = ScoreRow("cfg", "base", 8, "q1", 0, parseable=True, iou=0.5)
        s.repository.write_scores([score], [])
        s.repository.write_scores([score._replace(iou=0.9)], [])  # a second score: ignored
        assert s.repository.unscored() == 0
        assert s.requeue_unscored() == 0


def test_a_read_on_the_writer_leaves_nothing_behind(store: Store) -> None:
    names, rows = store.queries.answer("SELECT count(*) AS n FROM grid")
    assert names == ["n"] and rows == [(3,)]
    with pytest.raises(StoreError, match="not DELETE"):
        store.queries.answer("DELETE FROM grid")
    with pytest.raises(StoreError, match=r"exp\.duckdb: no table or view 'no_such_table'"):
        store.queries.answer("SELECT * FROM no_such_table")
    store.write_responses([attempt_row("q1")])  # the writer still works after a failed read
    assert len(store.repository.pending()) == 2
