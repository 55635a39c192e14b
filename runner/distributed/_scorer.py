"""Score rows for stored answers: the ``scoring`` package applied to the store's rows.

:class:`Scorer` (GroundBench's questions) and :class:`BoxScorer` (a box benchmark's) are what
a scoring actor runs; the same classes score a finished store offline, so live scores can be
checked against them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from conditions import BOX, BoxSet, Cohort, Questions, sent_scale
from runner.store import POLYGON_METRIC_NAMES, ControlRow, ScoreJob, ScoreRow
from scoring import (
    BOX_READERS,
    BUDGETS,
    Convention,
    PolygonScore,
    ReaderName,
    Referent,
    judge_box,
    score_box,
    score_polygon,
)


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
            if job.budget == BOX:
                box = score_box(job.answer, referent, BUDGETS)
                scores.append(ScoreRow.of(job.key, parseable=box.parseable, box_iou=box.box_iou))
                controls.extend(
                    ControlRow.of(job.key, n=n, **_metrics(s))
                    for n, s in sorted(box.control.items())
                )
            else:
                score = score_polygon(job.answer, referent.reference(job.budget))
                scores.append(ScoreRow.of(job.key, **_metrics(score)))
        return scores, controls

    def _referent(self, qid: str) -> Referent:
        referent = self._referents.get(qid)
        if referent is None:
            referent = self._referents[qid] = self._cohort.referent(qid)
        return referent


def _metrics(score: PolygonScore) -> dict[str, Any]:
    """A polygon score's columns (the score rows and control rows share their names)."""
    return {name: getattr(score, name) for name in POLYGON_METRIC_NAMES}


class BoxScorer:
    """Reads a box benchmark's answers by its own reader (§10) or ``reader``'s, each
    configuration's in its coordinate convention."""

    def __init__(
        self,
        questions: BoxSet,
        conventions: Mapping[str, Convention],
        reader: ReaderName | None = None,
    ) -> None:
        self._questions = questions
        self._reader = BOX_READERS[reader or questions.benchmark]
        self._conventions = dict(conventions)

    def score(self, jobs: Iterable[ScoreJob]) -> tuple[list[ScoreRow], list[ControlRow]]:
        """One score row per answer: whether a box was read, its IoU with the true box (none
        on a rejection question) and whether the answer says "absent"."""
        scores: list[ScoreRow] = []
        for job in jobs:
            q = self._questions.question(job.qid)
            verdict = judge_box(
                job.answer,
                q.box,
                self._reader,
                self._conventions[job.configuration],
                q.width,
                q.height,
                sent_scale(q),
            )
            scores.append(
                ScoreRow.of(
                    job.key,
                    parseable=bool(verdict.found),
                    box_iou=None if q.rejection else verdict.iou,
                    says_absent=verdict.says_absent,
                )
            )
        return scores, []


def scorer_for(
    questions: Questions, conventions: Mapping[str, Convention], reader: ReaderName | None = None
) -> Scorer | BoxScorer:
    """The scorer of ``questions``' answers (``conventions`` and ``reader``: a box benchmark's,
    see :class:`BoxScorer`)."""
    if isinstance(questions, BoxSet):
        return BoxScorer(questions, conventions, reader)
    return Scorer(questions)
