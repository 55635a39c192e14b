"""Scorer: the score rows of stored answers are the scoring package's scores."""

from __future__ import annotations

from typing import Any

from conditions import BOX, Cohort
from runner.distributed import Scorer
from runner.store import SCORE_SCHEMA, ScoreJob
from scoring import BUDGETS, SCALE, score_box, score_polygon


def _named(row: tuple[Any, ...]) -> dict[str, Any]:
    return dict(zip(SCORE_SCHEMA.names, row, strict=True))


def _answer_for(cohort: Cohort, qid: str, n: int) -> str:
    q = cohort.question(qid)
    points = cohort.target(qid, n)
    scaled = [(round(x * SCALE / q.width), round(y * SCALE / q.height)) for x, y in points]
    return "Here: " + str([v for p in scaled for v in p])


def test_polygon_rows_equal_score_polygon(small_cohort: Cohort) -> None:
    qids = [q.qid for q in small_cohort.questions[:6]]
    jobs = [
        ScoreJob("cfg", "base", n, qid, 0, _answer_for(small_cohort, qid, n))
        for qid in qids
        for n in (8, 32)
    ]
    jobs.append(ScoreJob("cfg", "base", 8, qids[0], 1, "I cannot see it."))
    scores, controls = Scorer(small_cohort).score(jobs)
    assert controls == []
    assert len(scores) == len(jobs)
    for job, row in zip(jobs, scores, strict=True):
        expected = score_polygon(job.answer, small_cohort.referent(job.qid).reference(job.budget))
        assert row[:5] == ("cfg", "base", job.budget, job.qid, job.attempt)
        assert row[5:8] == (expected.parseable, expected.iou, expected.iou_part)
        named = _named(row)
        assert named["defect"] == expected.defect
        assert named["box_iou"] is None and named["says_absent"] is None
    assert scores[0][6] > 0.5  # the canonical target, re-quantised, overlaps itself well
    assert scores[-1][5] is False and scores[-1][6] == 0.0


def test_a_box_answer_has_its_iou_and_one_control_row_per_budget(small_cohort: Cohort) -> None:
    q = small_cohort.questions[0]
    x, y, w, h = q.box
    answer = str([round(x * SCALE / q.width), round(y * SCALE / q.height),
                  round((x + w) * SCALE / q.width), round((y + h) * SCALE / q.height)])  # fmt: skip
    scores, controls = Scorer(small_cohort).score([ScoreJob("cfg", "base", BOX, q.qid, 0, answer)])
    expected = score_box(answer, small_cohort.referent(q.qid), BUDGETS)
    (row,) = scores
    named = _named(row)
    assert named["parseable"] is True and named["iou"] is None
    assert named["box_iou"] == expected.box_iou > 0.9 and named["says_absent"] is None
    assert [c[4] for c in controls] == list(BUDGETS)
    assert [c[6] for c in controls] == [expected.control[n].iou for n in BUDGETS]
