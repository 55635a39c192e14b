"""Answer sets: the texts of every attempt of a grid, and their scores as a report reads them.

An answer set maps each cell (configuration, condition, budget; ``conditions.BOX`` for box
questions) to its questions' attempts, in order: exactly the attempts a run makes (the next
only after a parse failure, up to three, or four for a best-effort configuration). It is made
in process by a simulator profile (:func:`answers`, the jobs of
``benchmarks.paper_profile.simulate``), or read from a finished store
(:func:`answers_from_store`).

:class:`Scorer` turns an answer set into the :class:`ReportData` a report reads, as
``benchmarks.paper_profile.report_data`` does (each attempt scored as a run scores it; the base
cells' locked answers re-scored against the audits' references, as ``groundbench rescore``
does). It keeps each cell's scores keyed by the identity of that cell's answers object, so an
answer set that shares most cells' objects with one scored before (a control's) re-scores only
the cells it changed.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from multiprocessing.pool import Pool
from pathlib import Path
from types import TracebackType

from benchmarks.paper_profile import CellAnswers, report_data, seen_for
from conditions import (
    BOX,
    BOX_CONDITIONS,
    PAPER_CONFIGURATIONS,
    Cohort,
    condition_named,
    load_cohort,
)
from runner.reports._data import Cell, ReportData, ViewScores
from runner.simulator import PROFILES, profile_answer
from runner.store import read_only
from scoring import (
    BUDGETS,
    HEADLINE_VIEW,
    VIEW_ATTEMPTS,
    BoxScore,
    PolygonScore,
    Referent,
    parse_answer,
    parse_box,
    score_box,
    score_polygon,
    score_references,
)

Texts = tuple[str, ...]
"""One request's answered attempts, in order."""
CellTexts = Mapping[str, Texts]
"""One cell's requests: question id → its attempts."""
AnswerSet = Mapping[Cell, CellTexts]
"""A grid's answers: cell → its questions' attempts."""

HEADLINE_ATTEMPTS = VIEW_ATTEMPTS[HEADLINE_VIEW]  # the attempts IoU2 may lock


def attempts_allowed(configuration: str) -> int:
    """The attempts a run makes for a paper configuration (four where best-effort)."""
    known = next((c for c in PAPER_CONFIGURATIONS if c.name == configuration), None)
    return VIEW_ATTEMPTS["best_effort" if known and known.best_effort else HEADLINE_VIEW]


def parses(text: str, budget: int) -> bool:
    """Whether a run counts ``text`` as parsed for a request of ``budget`` (the next attempt
    is made only when it does not)."""
    if budget == BOX:
        return parse_box(text) is not None
    return parse_answer(text, budget) is not None


# -- answering ------------------------------------------------------------------------------------

# What a forked worker reads: the cohort, and its referents as built (reset with the cohort).
_COHORT: Cohort | None = None
_REFERENTS: dict[str, Referent] = {}


def _use(cohort: Cohort) -> None:
    global _COHORT, _REFERENTS
    _COHORT, _REFERENTS = cohort, {}


def _referent(qid: str) -> Referent:
    found = _REFERENTS.get(qid)
    if found is None:
        assert _COHORT is not None
        found = _REFERENTS[qid] = _COHORT.referent(qid)
    return found


def grid_cells() -> list[Cell]:
    """The paper's grid, cell by cell (``benchmarks.paper_profile.simulate``'s jobs)."""
    return [
        Cell(c.name, condition, budget)
        for c in PAPER_CONFIGURATIONS
        for condition in c.conditions
        for budget in (*BUDGETS, *([BOX] if condition in BOX_CONDITIONS else []))
    ]


def _answer_cell(job: tuple[str, int, Cell]) -> tuple[Cell, dict[str, Texts]]:
    profile_name, seed, cell = job
    assert _COHORT is not None
    cohort, profile = _COHORT, PROFILES[profile_name]  # type: ignore[index]
    configuration = next(c for c in PAPER_CONFIGURATIONS if c.name == cell.configuration)
    tracing = profile.tracing(configuration.model)
    assert tracing is not None, f"{profile_name} has no tracing for {configuration.model}"
    matched = condition_named(cell.condition).subset == "matched"
    out: dict[str, Texts] = {}
    for q in cohort.questions:
        if matched and not q.matched:
            continue
        seen, replicate = seen_for(configuration, cell.condition, q.qid, cohort, cell.budget)
        texts: list[str] = []
        for attempt in range(attempts_allowed(cell.configuration)):
            answer = profile_answer(seen, cohort, profile, tracing, seed, attempt, replicate)
            texts.append(answer.text)
            if parses(answer.text, cell.budget):
                break
        out[q.qid] = tuple(texts)
    return cell, out


def answers(cohort: Cohort, profile: str, seed: int, workers: int = 2) -> dict[Cell, CellTexts]:
    """The paper's grid answered by the simulator's ``profile`` at ``seed``: every request's
    attempts as a run makes them (the same luck as a run of that seed on this cohort)."""
    jobs = [(profile, seed, cell) for cell in grid_cells()]
    _use(cohort)
    if workers <= 1:
        return dict(map(_answer_cell, jobs))
    with multiprocessing.get_context("fork").Pool(workers) as pool:
        found = dict(pool.imap_unordered(_answer_cell, jobs))
    return {cell: found[cell] for cell in grid_cells()}


def answers_from_store(path: Path | str) -> tuple[Cohort, dict[Cell, CellTexts]]:
    """A finished store's cohort and answers: each request's answered attempts in order
    (errored calls left out, as the views leave them). A ``repeat`` request's rows (replicate
    1) are keyed by that condition, as the store keys them."""
    path = Path(path)
    cohort = load_cohort(path)
    out: dict[Cell, dict[str, list[str]]] = {}
    with read_only(path) as con:
        rows = con.execute(
            "SELECT configuration, condition, budget, qid, answer FROM responses "
            "WHERE outcome = 'answer' ORDER BY configuration, condition, budget, qid, attempt"
        ).fetchall()
    for configuration, condition, budget, qid, text in rows:
        cell = Cell(configuration, condition, int(budget))
        out.setdefault(cell, {}).setdefault(qid, []).append(text or "")
    return cohort, {c: {q: tuple(t) for q, t in by_q.items()} for c, by_q in out.items()}


# -- scoring --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Scored:
    """One cell's answers scored, attempt by attempt (a polygon or a box cell's)."""

    polygons: dict[str, list[PolygonScore]] = field(default_factory=dict)
    boxes: dict[str, list[BoxScore]] = field(default_factory=dict)


def _score_cell(job: tuple[int, CellTexts]) -> _Scored:
    """Every attempt of one cell scored as a run scores it."""
    budget, texts = job
    out = _Scored()
    for qid, attempts in texts.items():
        referent = _referent(qid)
        if budget == BOX:
            out.boxes[qid] = [score_box(t, referent, BUDGETS) for t in attempts]
        else:
            reference = referent.reference(budget)
            out.polygons[qid] = [score_polygon(t, reference) for t in attempts]
    return out


def _rescore_cell(job: tuple[int, CellTexts]) -> dict[str, dict[str, float]]:
    """The answer IoU2 locks for each question re-scored against every reference
    (``groundbench rescore``; none where no attempt within IoU2's window parsed)."""
    budget, texts = job
    out: dict[str, dict[str, float]] = {}
    for qid, attempts in texts.items():
        locked = next((t for t in attempts[:HEADLINE_ATTEMPTS] if parses(t, budget)), None)
        if locked is not None:
            rescored = score_references(locked, _referent(qid), budget)
            out[qid] = dict(rescored or {})  # a plain dict pickles
    return out


def _job(job: tuple[str, int, CellTexts]) -> _Scored | dict[str, dict[str, float]]:
    kind, budget, texts = job
    return _score_cell((budget, texts)) if kind == "score" else _rescore_cell((budget, texts))


def _rescored(cell: Cell) -> bool:
    """Whether a report reads ``cell``'s re-scored answers (the base polygon cells' audits)."""
    return cell.condition == "base" and cell.budget != BOX


class Scorer:
    """Scores answer sets of one cohort into :class:`ReportData`, cell by cell, remembering
    each cell's scores by the identity of its answers object (kept alive with them).

    ``workers`` > 1 scores new cells in that many forked processes (made on first use, kept
    until :meth:`close`); 0 or 1 scores them here. ``scored`` counts the cells scored so far
    (a cell re-scored against the references counts once more).
    """

    def __init__(self, cohort: Cohort, workers: int = 2) -> None:
        self.cohort = cohort
        self.workers = workers
        self.scored = 0
        self._scores: dict[tuple[int, int], tuple[CellTexts, _Scored]] = {}
        self._references: dict[tuple[int, int], tuple[CellTexts, dict[str, dict[str, float]]]] = {}
        self._pool: Pool | None = None

    def __enter__(self) -> Scorer:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.terminate()
            self._pool.join()
            self._pool = None

    def report_data(self, answer_set: AnswerSet) -> ReportData:
        """``answer_set`` as ``groundbench report`` reads a re-scored store of it (cells and
        questions in one order: :func:`in_order`)."""
        self._fill(answer_set)
        found = []
        for cell, texts in answer_set.items():
            key = (id(texts), cell.budget)
            scored = self._scores[key][1]
            references = self._references[key][1] if _rescored(cell) else {}
            found.append(CellAnswers(cell, scored.polygons, scored.boxes, references))
        return in_order(report_data(self.cohort, found))

    def _fill(self, answer_set: AnswerSet) -> None:
        """Score the cells not scored before, and re-score the base polygon cells' locked
        answers not re-scored before."""
        todo: dict[tuple[str, int, int], CellTexts] = {}
        for cell, texts in answer_set.items():
            key = (id(texts), cell.budget)
            if key not in self._scores:
                todo[("score", *key)] = texts
            if _rescored(cell) and key not in self._references:
                todo[("rescore", *key)] = texts
        jobs = [(kind, budget, texts) for (kind, _, budget), texts in todo.items()]
        for (_, ident, budget), texts, result in zip(
            todo, todo.values(), self._run(jobs), strict=True
        ):
            k = (ident, budget)
            if isinstance(result, _Scored):
                self._scores[k] = (texts, result)
            else:
                self._references[k] = (texts, result)
            self.scored += 1

    def _run(
        self, jobs: list[tuple[str, int, CellTexts]]
    ) -> Iterable[_Scored | dict[str, dict[str, float]]]:
        if self.workers <= 1 or len(jobs) <= 1:
            if _COHORT is not self.cohort:
                _use(self.cohort)
            return [_job(j) for j in jobs]
        if self._pool is None:
            _use(self.cohort)
            self._pool = multiprocessing.get_context("fork").Pool(self.workers)
        return self._pool.imap(_job, jobs)


def score(answer_set: AnswerSet, cohort: Cohort, workers: int = 0) -> ReportData:
    """``answer_set`` scored once (:class:`Scorer` without its memory)."""
    with Scorer(cohort, workers) as scorer:
        return scorer.report_data(answer_set)


def in_order(data: ReportData) -> ReportData:
    """``data`` with its cells in order (configuration, condition, budget) and each cell's
    questions in question-id order.

    The report's figures do not depend on that order, except an unpaired bootstrap (Table 5's
    difficulty steps) that draws from each group's values in the order they come: a store is
    read in the order its rows come out of the query, an answer set in its own. Put both in
    one order to compare them.
    """

    def view(v: ViewScores) -> ViewScores:
        return dataclasses.replace(
            v,
            polygons={c: dict(sorted(s.items())) for c, s in sorted(v.polygons.items())},
            boxes={c: dict(sorted(s.items())) for c, s in sorted(v.boxes.items())},
            grid=dict(sorted(v.grid.items())),
        )

    ious = {
        r: {c: dict(sorted(s.items())) for c, s in sorted(by_cell.items())}
        for r, by_cell in data.rescored.ious.items()
    }
    return dataclasses.replace(
        data,
        headline=view(data.headline),
        best_effort=view(data.best_effort),
        earlier={name: view(v) for name, v in data.earlier.items()},
        rescored=dataclasses.replace(data.rescored, ious=ious),
    )
