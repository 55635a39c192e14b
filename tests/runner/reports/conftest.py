"""The small hand-made store the report tests read (its figures are computed by hand in
test_reports.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from conditions import BOX, Cohort, write_cohort
from runner.reports import ReportData, load_report_data
from runner.store import ControlRow, GridRow, Registration, ScoreRow, Store, read_only
from tests.runner.store.rows import attempt_row


def _score(
    condition: str, budget: int, qid: str, attempt: int, iou: float, legal: bool = True
) -> ScoreRow:
    return ScoreRow(
        "cfg", condition, budget, qid, attempt, parseable=True, iou=iou, iou_part=iou,
        iou_union=iou, iou_cont=iou, iou_distractor=0.0, legal=legal,
        legal_iou=iou if legal else 0.0, sel=True, defect=None if legal else "crossing",
    )  # fmt: skip


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, small_cohort: Cohort) -> Path:
    """base/8: q0 0.5, q1 0.8 (not legal), q2 three unparseable answers, q3 0.6 at attempt 1;
    base/16: only q0 answered (0.7), q1 stopped on spent quota, q2 and q3 not sent;
    no-image/8: q0 0.1, q1 0.2; base/box: q0 and q1 answered, q0 unparseable."""
    path = tmp_path_factory.mktemp("report") / "exp.duckdb"
    write_cohort(path, small_cohort)
    q = [small_cohort.questions[i].qid for i in range(4)]
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
        unparseable = {"parseable": False, "answer": "no list"}
        s.write_responses(
            [attempt_row(q[0], budget=8), attempt_row(q[1], budget=8),
             *(attempt_row(q[2], a, budget=8, **unparseable) for a in range(3)),  # type: ignore[arg-type]
             attempt_row(q[3], 0, budget=8, **unparseable), attempt_row(q[3], 1, budget=8),  # type: ignore[arg-type]
             attempt_row(q[0], budget=16), attempt_row(q[1], budget=16, outcome="quota"),
             attempt_row(q[0], condition="no-image"), attempt_row(q[1], condition="no-image"),
             *(attempt_row(q[0], a, budget=BOX, **unparseable) for a in range(3)),  # type: ignore[arg-type]
             attempt_row(q[1], budget=BOX)]
        )  # fmt: skip
        s.repository.write_scores(
            [_score("base", 8, q[0], 0, 0.5), _score("base", 8, q[1], 0, 0.8, legal=False),
             _score("base", 8, q[3], 1, 0.6), _score("base", 16, q[0], 0, 0.7),
             _score("no-image", 8, q[0], 0, 0.1), _score("no-image", 8, q[1], 0, 0.2),
             ScoreRow("cfg", "base", BOX, q[1], 0, parseable=True, box_iou=0.75)],
            [ControlRow("cfg", "base", q[1], 0, n, True, 0.4, 0.4, 0.4, 0.4, 0.0, True, 0.4,
                        True, None)
             for n in (8, 16)],
        )  # fmt: skip
    return path


@pytest.fixture(scope="module")
def data(store: Path) -> ReportData:
    with read_only(store) as con:
        return load_report_data(con)
