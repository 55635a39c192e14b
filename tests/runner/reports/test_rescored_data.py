"""The report's re-scored references and part sizes, read from a small hand-made store."""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pytest

from conditions import BOX, Cohort, write_cohort
from runner.reports import (
    ALTERNATE_REFERENCES,
    PHASE_REFERENCES,
    Cell,
    ReportData,
    load_report_data,
)
from runner.store import GridRow, ReferenceRow, Registration, ScoreRow, Store, read_only
from scoring import REFERENCES
from tests.runner.store.rows import attempt_row

BASE8, BASE16, NO_IMAGE8 = (
    Cell("cfg", "base", 8),
    Cell("cfg", "base", 16),
    Cell("cfg", "no-image", 8),
)


def _score(condition: str, budget: int, qid: str, attempt: int, iou: float) -> ScoreRow:
    return ScoreRow(
        "cfg", condition, budget, qid, attempt, parseable=True, iou=iou, iou_part=iou,
        iou_union=iou, iou_cont=iou, iou_distractor=0.0, legal=True, legal_iou=iou, sel=True,
    )  # fmt: skip


def _rows(
    cell: Cell, qid: str, attempt: int, base: float, leave_out: str = ""
) -> list[ReferenceRow]:
    """One row per reference: ``base`` plus 1/64 per place in REFERENCES (phase0 = base);
    sums of binary fractions, so the expected values below are exact."""
    key = (cell.configuration, cell.condition, cell.budget, qid, attempt)
    return [
        ReferenceRow(*key, name, base + k / 64)
        for k, name in enumerate(REFERENCES)
        if name != leave_out
    ]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, small_cohort: Cohort) -> tuple[Path, list[str]]:
    """base/8: q0 locked at attempt 0 (every reference), q1 at 0 (no "continuous" row), q2
    three unparseable answers, q3 locked at attempt 1 (attempt 0 unparseable, yet holding
    stray rows that must not be read); base/16: q0 settled with no rows, q1 answered but not
    scored (unsettled); no-image/8: q0, q1 settled, no rows; base/box: q0 answered."""
    path = tmp_path_factory.mktemp("rescored") / "exp.duckdb"
    write_cohort(path, small_cohort)
    q = [small_cohort.questions[i].qid for i in range(4)]
    unparseable = {"parseable": False, "answer": "no list"}
    with Store(path) as s:
        grid = [
            GridRow(configuration="cfg", condition="base", budget=n, qid=qid, attempts=3)
            for n in (8, 16, BOX)
            for qid in q
        ]
        grid += [
            GridRow(configuration="cfg", condition="no-image", budget=8, qid=qid, attempts=3)
            for qid in q[:2]
        ]
        s.register([Registration("cfg", "p" * 64, "qwen", "m", 3, "{}")], grid)
        s.write_responses(
            [attempt_row(q[0]), attempt_row(q[1]),
             *(attempt_row(q[2], a, **unparseable) for a in range(3)),  # type: ignore[arg-type]
             attempt_row(q[3], 0, **unparseable), attempt_row(q[3], 1),  # type: ignore[arg-type]
             attempt_row(q[0], budget=16), attempt_row(q[1], budget=16),
             attempt_row(q[0], condition="no-image"), attempt_row(q[1], condition="no-image"),
             attempt_row(q[0], budget=BOX)]
        )  # fmt: skip
        s.repository.write_scores(
            [_score("base", 8, q[0], 0, 0.5), _score("base", 8, q[1], 0, 0.75),
             _score("base", 8, q[3], 1, 0.625), _score("base", 16, q[0], 0, 0.7),
             _score("no-image", 8, q[0], 0, 0.1), _score("no-image", 8, q[1], 0, 0.2),
             ScoreRow("cfg", "base", BOX, q[0], 0, parseable=True, box_iou=0.75)],
            [],
        )  # fmt: skip
        s.repository.write_reference_scores(
            [*_rows(BASE8, q[0], 0, 0.5), *_rows(BASE8, q[1], 0, 0.75, leave_out="continuous"),
             *_rows(BASE8, q[3], 1, 0.625), *_rows(BASE8, q[3], 0, 0.0),
             *_rows(BASE16, q[1], 0, 0.25)]  # q1/16 is not settled: not read
        )  # fmt: skip
    return path, q


@pytest.fixture(scope="module")
def data(store: tuple[Path, list[str]]) -> ReportData:
    with read_only(store[0]) as con:
        return load_report_data(con)


def test_the_locked_answers_ious_per_reference(
    data: ReportData, store: tuple[Path, list[str]]
) -> None:
    q = store[1]
    ious = data.rescored.ious
    assert set(ious) == set(REFERENCES) == {*PHASE_REFERENCES, *ALTERNATE_REFERENCES}
    assert ious["phase0"] == {BASE8: {q[0]: 0.5, q[1]: 0.75, q[3]: 0.625}}
    assert ious["phase7"] == {BASE8: {q[0]: 0.609375, q[1]: 0.859375, q[3]: 0.734375}}
    assert ious["part"] == {BASE8: {q[0]: 0.625, q[1]: 0.875, q[3]: 0.75}}
    assert ious["union"] == {BASE8: {q[0]: 0.640625, q[1]: 0.890625, q[3]: 0.765625}}
    # q1 has no "continuous" row; q3's attempt-0 row (0.15625) is not the locked attempt's.
    assert ious["continuous"] == {BASE8: {q[0]: 0.65625, q[3]: 0.78125}}


def test_missing_counts_settled_parseable_answers_without_every_row(data: ReportData) -> None:
    # base/8: q1 lacks "continuous"; base/16: q0 has no rows (q1 is unsettled); no-image/8:
    # q0 and q1 have none. The box cell is no polygon cell.
    assert data.rescored.missing == {BASE8: 1, BASE16: 1, NO_IMAGE8: 2}


def test_part_vertices_count_each_questions_selected_part(
    data: ReportData, small_cohort: Cohort
) -> None:
    assert set(data.part_vertices) == {qu.qid for qu in small_cohort.questions}
    for qid, count in data.part_vertices.items():
        (target,) = [i for i in small_cohort.instances_of(qid) if i.role == "target"]
        # The selected part is the one listing the most vertices (§2.1).
        assert count == max(len(part) for part in target.parts) // 2 >= 3


def test_a_store_from_before_re_scoring_still_reports(
    store: tuple[Path, list[str]], tmp_path: Path
) -> None:
    old = tmp_path / "old.duckdb"
    shutil.copy(store[0], old)
    with duckdb.connect(str(old)) as con:  # back to schema 3, as an older groundbench left it
        con.execute("DROP TABLE reference_scores")
        con.execute("DELETE FROM schema_migrations WHERE version = 4")
    with read_only(old) as con:  # read-only: not brought up to date
        data = load_report_data(con)
    assert data.rescored.ious == {}
    # Every settled parseable polygon answer: base/8 q0, q1, q3; base/16 q0; no-image/8 q0, q1.
    assert data.rescored.missing == {BASE8: 3, BASE16: 1, NO_IMAGE8: 2}
    assert len(data.headline.polygons[BASE8]) == 4  # the rest of the report is unchanged
