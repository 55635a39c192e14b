"""Score rows for stored answers: the ``scoring`` package applied to the store's rows.

:class:`Scorer` is what a scoring actor runs; the same class scores a finished store offline,
so live scores can be checked against it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from conditions import BOX, Cohort
from runner.store import ControlRow, ScoreJob, ScoreRow
from scoring import BUDGETS, PolygonScore, Referent, score_box, score_polygon


class Scorer:
    """Scores answers against one cohort's referents, each referent built once."""

    def __init__(self, cohort: Cohort) -> None:
        self._cohort = cohort
        self._referents: dict[str, Referent] = {}

    def score(self, jobs: Iterable[ScoreJob]) -> tuple[list[ScoreRow], list[ControlRow]]:
        """One score row per answer, and a box answer's control rows (one per budget)."""
        scores: list[ScoreRow] = []
        controls: list[ControlRow] = []
        for job in jobs:
            referent = self._referent(job.qid)
            key = (job.configuration, job.condition, job.budget, job.qid, job.attempt)
            if job.budget == BOX:
                box = score_box(job.answer, referent, BUDGETS)
                scores.append((*key, *_metrics(None, box.parseable), box.box_iou))
                controls.extend(
                    (job.configuration, job.condition, job.qid, job.attempt, n, *_metrics(s))
                    for n, s in sorted(box.control.items())
                )
            else:
                score = score_polygon(job.answer, referent.reference(job.budget))
                scores.append((*key, *_metrics(score), None))
        return scores, controls

    def _referent(self, qid: str) -> Referent:
        referent = self._referents.get(qid)
        if referent is None:
            referent = self._referents[qid] = self._cohort.referent(qid)
        return referent


def _metrics(score: PolygonScore | None, parseable: bool = False) -> Sequence[object]:
    if score is None:  # a box answer: its polygon columns stay empty
        return (parseable, *([None] * 9))
    return (
        score.parseable,
        score.iou,
        score.iou_part,
        score.iou_union,
        score.iou_cont,
        score.iou_distractor,
        score.legal,
        score.legal_iou,
        score.sel,
        score.defect,
    )
