"""Scorer: the score rows of stored answers are the scoring package's scores."""

from __future__ import annotations

from conditions import BOX, Cohort
from runner.distributed import Scorer
from runner.store import ScoreJob
from scoring import BUDGETS, SCALE, score_box, score_polygon


def _answer_for(cohort: Cohort, qid: str, n: int) -> str:
    q = cohort.question(qid)
    points = cohort.target(qid, n)
    scaled = [(round(x * SCALE / q.width), round(y * SCALE / q.height)) for x, y in points]
    return "Here: " + str([v for p in scaled for v in p])


def test_polygon_rows_equal_score_polygon(small_cohort: Cohort) -> None:
    qids = [q.qid for q in small_cohort.questions[:6]]
    jobs = [
        ScoreJob(
            configuration="cfg",
            condition="base",
            budget=n,
            qid=qid,
            attempt=0,
            answer=_answer_for(small_cohort, qid, n),
        )
        for qid in qids
        for n in (8, 32)
    ]
    jobs.append(
        ScoreJob(
            configuration="cfg",
            condition="base",
            budget=8,
            qid=qids[0],
            attempt=1,
            answer="I cannot see it.",
        )
    )
    scores, controls = Scorer(small_cohort).score(jobs)
    assert controls == []
    assert len(scores) == len(jobs)
    for job, row in zip(jobs, scores, strict=True):
        expected = score_polygon(job.answer, small_cohort.referent(job.qid).reference(job.budget))
        assert row.key == ("cfg", "base", job.budget, job.qid, job.attempt)
        assert (row.parseable, row.iou, row.iou_part) == (
            expected.parseable,
            expected.iou,
            expected.iou_part,
        )
        assert row.defect == expected.defect
        assert row.box_iou is None and row.says_absent is None
    assert (scores[0].iou or 0.0) > 0.5  # the canonical target, re-quantised, overlaps itself well
    assert scores[-1].parseable is False and scores[-1].iou == 0.0


def test_a_box_answer_has_its_iou_and_one_control_row_per_budget(small_cohort: Cohort) -> None:
    q = small_cohort.questions[0]
    x, y, w, h = q.box
    answer = str([round(x * SCALE / q.width), round(y * SCALE / q.height),
                  round((x + w) * SCALE / q.width), round((y + h) * SCALE / q.height)])  # fmt: skip
    scores, controls = Scorer(small_cohort).score(
        [
            ScoreJob(
                configuration="cfg",
                condition="base",
                budget=BOX,
                qid=q.qid,
                attempt=0,
                answer=answer,
            )
        ]
    )
    expected = score_box(answer, small_cohort.referent(q.qid), BUDGETS)
    (row,) = scores
    assert row.parseable is True and row.iou is None
    assert row.box_iou == expected.box_iou > 0.9 and row.says_absent is None
    assert [c.n for c in controls] == list(BUDGETS)
    assert [c.iou for c in controls] == [expected.control[n].iou for n in BUDGETS]
