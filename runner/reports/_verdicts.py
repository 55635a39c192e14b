"""How a finding is judged: each of its contrasts holds, fails, or is open at this size.

A claim rests on paired contrasts (PROTOCOL §7), each with a 95% bootstrap interval, and
each contrast is read one of three ways (decided, groundbench):

- *holds*: the interval lies wholly on the claimed side (of 0, or inside the margin);
- *fails*: it lies wholly on the other side, so the data contradict the claim;
- *open*: it straddles the boundary: this store is too small to tell.

A claim holds when every one of its contrasts does, does not hold when any fails, and is
*not testable at this size* otherwise: absence of evidence is never read as a verdict.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from conditions import BOX
from runner.reports._data import Cell, ReportData, ViewScores
from scoring import Contrast, Metric, PolygonScore, paired_contrast, per_question

Verdict = Literal["holds", "does not hold", "not testable", "not testable at this size"]
Outcome = Literal["holds", "fails", "open"]
PAPER_ORDER: tuple[str, ...] = ("gemini-high", "qwen-max", "doubao", "kimi")
"""The paper's configuration ordering (§4.2 F1), by its configuration names."""
TOP = 64  # the densest budget, where F2's collapse is claimed
MARGIN = 2.0
"""Points: the equivalence margin of "≈", "no reliable gain" and "second-order" claims."""


@dataclass(frozen=True)
class Finding:
    """One claim of the paper, its figures, this store's figures, and the verdict."""

    claim: str
    paper: str
    here: str
    verdict: Verdict
    test: str


@dataclass(frozen=True)
class Judged:
    """One contrast of a claim, read: ``label`` is what a failure (or an open one) names."""

    label: str
    outcome: Outcome


def above(c: Contrast) -> Outcome:
    """The claim is Δ > 0."""
    if c.questions == 0 or math.isnan(c.low):
        return "open"
    return "holds" if c.low > 0 else "fails" if c.high <= 0 else "open"


def below(c: Contrast) -> Outcome:
    """The claim is Δ < 0."""
    if c.questions == 0 or math.isnan(c.low):
        return "open"
    return "holds" if c.high < 0 else "fails" if c.low >= 0 else "open"


def within(c: Contrast, margin: float = MARGIN) -> Outcome:
    """The claim is |Δ| ≤ margin (an equivalence test: both one-sided tests at 2.5%)."""
    if c.questions == 0 or math.isnan(c.low):
        return "open"
    if -margin <= c.low and c.high <= margin:
        return "holds"
    return "fails" if c.low > margin or c.high < -margin else "open"


def at_most(c: Contrast, margin: float = MARGIN) -> Outcome:
    """The claim is Δ ≤ margin: no gain beyond the margin (non-superiority)."""
    if c.questions == 0 or math.isnan(c.low):
        return "open"
    return "holds" if c.high <= margin else "fails" if c.low > margin else "open"


Measure = tuple[Sequence[Cell], Callable[[], tuple[str, list[Judged]]]]
"""One test of a claim: the cells it needs, and the test itself (this store's figures as
text, and each contrast read)."""


def verdict(
    data: ReportData, claim: str, paper: str, test: str, needs: str, measures: Iterable[Measure]
) -> Finding:
    """Take every measure whose cells are complete; any cell absent or running makes the claim
    not testable (and is named), as does having nothing to measure (``needs`` says what)."""
    view = data.headline
    parts: list[str] = []
    judged: list[Judged] = []
    missing: list[Cell] = []
    for cells, measure in measures:
        gaps = missing_cells(view, cells)
        missing += gaps
        if gaps:
            continue
        text, found = measure()
        parts.append(text)
        judged += found
    if missing or not parts:
        return untestable(claim, paper, named(view, missing) or [needs])
    return judge(claim, paper, "; ".join(parts), judged, test)


def judge(claim: str, paper: str, here: str, judged: Sequence[Judged], test: str) -> Finding:
    """The claim's verdict from its contrasts: any failing fails it, else any open one
    leaves it not testable at this size."""
    failed = [j.label for j in judged if j.outcome == "fails"]
    if failed:
        return Finding(claim, paper, here, "does not hold", f"{test}; fails: {', '.join(failed)}")
    still = [j.label for j in judged if j.outcome == "open"]
    if still:
        text = f"{test}; interval holds the boundary: {', '.join(still)}"
        return Finding(claim, paper, here, "not testable at this size", text)
    return Finding(claim, paper, here, "holds", test)


def untestable(claim: str, paper: str, needs: Iterable[str]) -> Finding:
    return Finding(claim, paper, "—", "not testable", "needs " + ", ".join(needs))


# -- cells ----------------------------------------------------------------------------------------


def base_cells(view: ViewScores, name: str) -> list[Cell]:
    return condition_cells(view, name, "base")


def condition_cells(view: ViewScores, name: str, condition: str) -> list[Cell]:
    """The polygon cells of a configuration and condition, by budget."""
    return sorted(
        (
            c
            for c in view.grid
            if c.configuration == name and c.condition == condition and c.budget != BOX
        ),
        key=lambda c: c.budget,
    )


def cells_of(view: ViewScores, name: str, conditions: Iterable[str]) -> list[Cell]:
    """The polygon cells of a configuration under each of ``conditions``."""
    return [c for condition in conditions for c in condition_cells(view, name, condition)]


def missing_cells(view: ViewScores, cells: Iterable[Cell]) -> list[Cell]:
    """Cells absent from the grid or with unsettled questions (incomplete)."""
    return [c for c in cells if c not in view.grid or not view.complete(c)]


def named(view: ViewScores, cells: Iterable[Cell]) -> list[str]:
    """``cfg/condition/N=n``, each marked absent (not in the grid) or running (incomplete)."""
    return [
        f"{c.configuration}/{c.condition}/N={c.budget} "
        + ("(absent)" if c not in view.grid else "(incomplete)")
        for c in dict.fromkeys(cells)
    ]


def running(data: ReportData, conditions: Iterable[str]) -> list[str]:
    """Configurations whose grid has every one of ``conditions`` (and base)."""
    wanted = {"base", *conditions}
    return [n for n in data.configurations if wanted <= set(data.conditions_of(n))]


def scores_of(view: ViewScores, cell: Cell) -> list[PolygonScore | None]:
    return list(view.polygons.get(cell, {}).values())


def cell_contrast(view: ViewScores, a: Cell, b: Cell, metric: Metric = "iou") -> Contrast:
    """Paired Δ(a − b) of a per-question metric (fixed: 0 if unparseable) on the questions
    both cells settled."""
    return paired_contrast(
        per_question(view.polygons.get(a, {}), metric),
        per_question(view.polygons.get(b, {}), metric),
    )


def has_curve(view: ViewScores, name: str) -> bool:
    """The configuration has a budget curve F2 can judge: ≥ 3 budgets, N = 64 among them."""
    cells = base_cells(view, name)
    return len(cells) >= 3 and Cell(name, "base", TOP) in cells


def moderate_budgets(view: ViewScores, name: str) -> list[int]:
    """The budgets of a curve strictly between its smallest and N = 64: the paper's
    "moderate budgets" (16, 24, 32 of its five), fixed before any score is read."""
    budgets = [c.budget for c in base_cells(view, name)]
    return [n for n in budgets if min(budgets) < n < TOP]


def moderate_mean(values: dict[int, dict[str, float]], budgets: Sequence[int]) -> dict[str, float]:
    """Per question, the mean of its values over ``budgets`` (questions settled at all)."""
    common = set.intersection(*(set(values[n]) for n in budgets)) if budgets else set()
    return {q: sum(values[n][q] for n in budgets) / len(budgets) for q in common}


def fall_to_top(curve: dict[int, dict[str, float]], moderate: Sequence[int]) -> Contrast:
    """Paired Δ(moderate budgets' per-question mean − N = 64) of a curve's values."""
    return paired_contrast(moderate_mean(curve, moderate), curve[TOP])


def by_budget(
    view: ViewScores, name: str, value: Callable[[PolygonScore | None], float]
) -> dict[int, dict[str, float]]:
    """A configuration's base answers as ``value`` per question, by budget."""
    return {
        c.budget: {q: value(s) for q, s in view.polygons.get(c, {}).items()}
        for c in base_cells(view, name)
    }


def fixed(metric: Metric) -> Callable[[PolygonScore | None], float]:
    """A per-question value in points: the metric ×100 (a flag 100 or 0), 0 if unparseable."""

    def value(s: PolygonScore | None) -> float:
        return 100.0 * float(getattr(s, metric)) if s is not None and s.parseable else 0.0

    return value


def correct(threshold: float) -> Callable[[PolygonScore | None], float]:
    """100 for an answer with IoU ≥ ``threshold``, else 0 (unparseable: 0)."""

    def value(s: PolygonScore | None) -> float:
        return 100.0 if s is not None and s.parseable and s.iou >= threshold else 0.0

    return value
