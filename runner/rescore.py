"""``groundbench rescore``: stored answers scored against other references, with no call.

Every parseable answer to a GroundBench polygon question is scored against each of
:data:`scoring.REFERENCES` (``G_N`` at the eight sampling phases, the unreduced selected part,
the union of all parts, and phase 0's ``G_N`` under the continuous-area backend) into the
store's ``reference_scores`` table. It reads only what the store holds: nothing here builds a
request or knows a backend. Answers already re-scored are skipped, so running it again writes
nothing; each batch of answers is one transaction, with all of an answer's rows in it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from conditions import Cohort, has_table, holds_box_set, load_cohort, require_current_targets
from runner.store import ReferenceRow, Repository, ScoreJob, StoreError, read_only
from scoring import REFERENCES, Referent, score_references

Progress = Callable[[int, int], None]
"""Told ``(answers done, answers to do)`` after each batch is stored."""


@dataclass(frozen=True)
class RescoreReport:
    """What one re-scoring did.

    Attributes
    ----------
    considered
        Parseable polygon answers in the store.
    rescored
        Answers re-scored by this call.
    rows
        Rows it wrote (one per answer and reference).
    already
        Answers that had every reference's row before this call.
    unparsed
        Answers stored as parseable that the parser now refuses (none, unless the parser
        changed since the run): they have no IoU to re-score and are left as they are.
    """

    considered: int
    rescored: int
    rows: int
    already: int
    unparsed: int = 0


def rescore(
    path: Path | str,
    *,
    batch: int = 2000,
    progress: Progress | None = None,
    lock_wait_s: float = 15.0,
) -> RescoreReport:
    """Score every stored polygon answer that lacks a reference row against all of them.

    Raises
    ------
    StoreError
        No such file, a run holds it, it holds a box benchmark's questions, no cohort, or no
        run results (one line naming the file and what to do).
    """
    path = Path(path)
    cohort = _polygon_cohort(path)
    scorer = _ReferenceScorer(cohort, path)
    with Repository(path, lock_wait_s=lock_wait_s) as store:
        considered = store.polygon_answers()
        jobs = store.unrescored(REFERENCES)
        rescored = rows = 0
        for start in range(0, len(jobs), batch):
            chunk = jobs[start : start + batch]
            scored = scorer.rows(chunk)
            rows += store.write_reference_scores(scored)
            rescored += len(scored) // len(REFERENCES)
            if progress is not None:
                progress(start + len(chunk), len(jobs))
    return RescoreReport(considered, rescored, rows, considered - len(jobs), len(jobs) - rescored)


class _ReferenceScorer:
    """Rows of ``reference_scores`` for stored answers; each question's referent built once
    (its targets at every phase are built on first use and kept with it)."""

    def __init__(self, cohort: Cohort, path: Path) -> None:
        self._cohort = cohort
        self._path = path
        self._referents: dict[str, Referent] = {}

    def rows(self, jobs: Iterable[ScoreJob]) -> list[ReferenceRow]:
        """Every reference's row for each parseable answer of ``jobs``, an answer's together."""
        out: list[ReferenceRow] = []
        for job in jobs:
            ious = score_references(job.answer, self._referent(job.qid), job.budget)
            if ious is None:
                continue
            out.extend(
                ReferenceRow.of(job.key, reference=name, iou=ious[name]) for name in REFERENCES
            )
        return out

    def _referent(self, qid: str) -> Referent:
        referent = self._referents.get(qid)
        if referent is None:
            try:
                referent = self._referents[qid] = self._cohort.referent(qid)
            except KeyError:
                raise StoreError(
                    f"{self._path}: an answer to question {qid}, which its cohort does not hold; "
                    "the store is damaged"
                ) from None
        return referent


def _polygon_cohort(path: Path) -> Cohort:
    """The cohort of a store that holds GroundBench run results, read before the store is
    opened for writing (DuckDB lets one process open a file one way at a time).

    Raises
    ------
    StoreError
        As :func:`rescore` says.
    """
    if not path.exists():
        raise StoreError(f"{path}: no such experiment file")
    try:
        con = read_only(path)
    except StoreError as exc:
        if "a run holds the file" in str(exc):
            raise StoreError(
                f"{path}: a run holds the file; re-score it once the run has ended"
            ) from None
        raise
    with con:
        if holds_box_set(con):
            raise StoreError(
                f"{path}: holds a box benchmark's questions; only GroundBench's polygon answers "
                "are re-scored against other references"
            )
        if not has_table(con, "cohort"):
            raise StoreError(
                f"{path}: holds no cohort, so no answers to re-score; build one with "
                "`groundbench cohort build` and run the experiment"
            )
        if not has_table(con, "responses"):
            raise StoreError(f"{path}: no run results to re-score; run the experiment first")
    cohort = load_cohort(path)
    require_current_targets(path, cohort)
    return cohort
