"""The subdivision-only slice: does N=64 still score below N=32 when the target is the same?

The paper (F2): "the decline persists when extra vertices only subdivide edges without changing
the filled target". For a question whose selected part has at most 32 vertices, ``G_32`` and
``G_64`` are both up-sampled from the whole part, and up-sampling only inserts midpoints
(PROTOCOL §2): they fill the same region, so a drop from 32 to 64 there is the budget's alone.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

from runner.reports._data import Cell, ReportData
from runner.reports._tables import INCOMPLETE, ReportTable, _contrast, _fmt, unsettled_why
from scoring import Contrast, PolygonScore, paired_contrast, per_question

LOW, HIGH = 32, 64
"""The two budgets compared; a part of at most ``LOW`` vertices gives both the same region."""


@dataclass(frozen=True)
class BudgetContrast:
    """Fixed IoU (points, unparseable 0) at ``LOW`` and ``HIGH`` over the same questions, and
    the paired difference ``HIGH − LOW`` with its bootstrap 95% interval."""

    questions: int
    iou_low: float
    iou_high: float
    contrast: Contrast


@dataclass(frozen=True)
class SubdivisionContrast:
    """One configuration's N=64 − N=32 contrast on the subdivision-only questions and on all.

    Both are over the questions settled in both base cells; ``complete`` is false while either
    cell has unsettled questions (the figures then cover the settled ones only).
    """

    configuration: str
    subdivision: BudgetContrast  # selected part with V ≤ LOW vertices
    all_questions: BudgetContrast
    complete: bool


def subdivision_contrast(data: ReportData, configuration: str) -> SubdivisionContrast | None:
    """The base condition's N=64 − N=32 contrast under IoU2 for one configuration.

    ``None`` when the configuration lacks either base cell, or when ``data.part_vertices`` is
    empty (the vertex counts were not loaded, so the slice cannot be drawn). A question with
    no vertex count is left out of the slice (not of all questions).
    """
    view = data.headline
    low, high = (Cell(configuration, "base", n) for n in (LOW, HIGH))
    if not data.part_vertices or low not in view.grid or high not in view.grid:
        return None
    a, b = view.polygons.get(low, {}), view.polygons.get(high, {})
    common = a.keys() & b.keys()
    subdivision = {q for q in common if data.part_vertices.get(q, HIGH + 1) <= LOW}
    return SubdivisionContrast(
        configuration,
        _budget_contrast(a, b, subdivision),
        _budget_contrast(a, b, common),
        view.complete(low) and view.complete(high),
    )


def subdivision_contrasts(data: ReportData) -> dict[str, SubdivisionContrast]:
    """:func:`subdivision_contrast` of every configuration that has one."""
    found = {c: subdivision_contrast(data, c) for c in data.configurations}
    return {c: s for c, s in found.items() if s is not None}


def _budget_contrast(
    low: Mapping[str, PolygonScore | None],
    high: Mapping[str, PolygonScore | None],
    qids: Collection[str],
) -> BudgetContrast:
    a = per_question({q: low[q] for q in qids})
    b = per_question({q: high[q] for q in qids})
    return BudgetContrast(len(qids), _mean(a.values()), _mean(b.values()), paired_contrast(b, a))


def _mean(values: Collection[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


def subdivision_table(data: ReportData) -> ReportTable:
    """Per configuration: the subdivision-only questions and all, IoU at 32 and 64, and Δ."""
    found = subdivision_contrasts(data)
    return ReportTable(
        "subdivision",
        f"Subdivision-only slice: fixed IoU at N={LOW} and N={HIGH} on the same filled target",
        COLUMNS,
        tuple(row for s in found.values() for row in _rows(s)),
        _notes(data, found),
    )


COLUMNS = ("Configuration", "Slice", "Questions", f"IoU N={LOW}", f"IoU N={HIGH}",
           f"Δ {HIGH} − {LOW} [95% CI]")  # fmt: skip


def _notes(data: ReportData, found: Mapping[str, SubdivisionContrast]) -> tuple[str, ...]:
    """The view, denominator and slice, and why a configuration or every row is missing."""
    notes = [
        f"base condition, IoU2, fixed IoU (an unparseable answer counts 0) over the questions "
        f"settled in both the N={LOW} and the N={HIGH} cell",
        f"V ≤ {LOW}: the selected part has at most {LOW} vertices, so G_{LOW} and G_{HIGH} fill "
        f"the same region (up-sampling only inserts midpoints); Δ = N={HIGH} − N={LOW}, paired "
        "per question, with a paired bootstrap 95% interval (2,000 resamples, seed 0)",
    ]
    if not data.part_vertices:
        notes.append("no rows: the selected parts' vertex counts were not loaded")
    elif lacking := [c for c in data.configurations if c not in found]:
        notes.append(f"no N={LOW} or N={HIGH} base cell: {', '.join(lacking)}")
    if not all(s.complete for s in found.values()):
        notes.append(
            f"{INCOMPLETE} a cell has unsettled questions "
            f"({unsettled_why(data.headline.open_requests)}): settled ones only"
        )
    return tuple(notes)


def _rows(s: SubdivisionContrast) -> list[tuple[str, ...]]:
    mark = "" if s.complete else INCOMPLETE
    slices = ((f"V ≤ {LOW}", s.subdivision), ("all", s.all_questions))
    return [(s.configuration, label, *_figures(c, mark)) for label, c in slices]


def _figures(c: BudgetContrast, mark: str) -> tuple[str, ...]:
    return f"{c.questions}{mark}", _fmt(c.iou_low), _fmt(c.iou_high), _contrast(c.contrast)
