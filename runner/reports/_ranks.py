"""Rank stability: does one ordering of the configurations hold at every budget (paper §4.2)?

The paper: "Acc@.5 preserves one ordering across the four main configurations and all five
budgets, whereas fixed IoU has one Qwen–Gemini inversion at N = 64". Per metric, the reference
ordering ranks configurations by their mean over budgets; each budget's ordering is compared
with it pair by pair. *Ordering*, its ties and *inversion* are those of
:mod:`scoring._ranks` (:func:`scoring.ordering`, :func:`scoring.inversions`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from itertools import pairwise

from runner.reports._data import Cell, ReportData
from runner.reports._tables import ReportTable
from scoring import CellSummary, inversions, ordering, summarise_cell

RANK_METRICS: dict[str, Callable[[CellSummary], float]] = {
    "IoU": lambda s: s.iou.fixed,
    "Acc@0.25": lambda s: s.acc[0.25].fixed,
    "Acc@0.5": lambda s: s.acc[0.5].fixed,
    "Acc@0.75": lambda s: s.acc[0.75].fixed,
}
"""The metrics whose orderings the table compares, all under the fixed denominator."""


@dataclass(frozen=True)
class BudgetOrdering:
    """One budget's ordering of the ranked configurations and its inversions against the
    reference: each pair ``(a, b)`` is ranked ``a`` above ``b`` by the reference but has
    ``b`` strictly above ``a`` at this budget."""

    budget: int
    values: Mapping[str, float]  # points
    ordering: tuple[str, ...]
    inversions: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class RankStability:
    """One metric's reference ordering (by the mean over budgets) and each budget's ordering.

    ``left_out`` names the configurations not ranked, with why: a rank over a cell with
    unsettled questions, or over fewer budgets, would not compare like with like.
    """

    metric: str
    reference_values: Mapping[str, float]  # the mean over budgets, points
    reference: tuple[str, ...]
    budgets: tuple[BudgetOrdering, ...]
    left_out: Mapping[str, str]

    @property
    def total_inversions(self) -> int:
        """Inversions summed over budgets (a pair inverted at two budgets counts twice)."""
        return sum(len(b.inversions) for b in self.budgets)

    @property
    def one_ordering(self) -> bool:
        """No budget inverts any pair of the reference: one ordering across all budgets."""
        return self.total_inversions == 0


def rank_stability(data: ReportData) -> dict[str, RankStability]:
    """Per metric of :data:`RANK_METRICS`, the base condition's rank stability under IoU2.

    Only configurations whose base cell is complete at every budget that any configuration
    has are ranked; the others are in each result's ``left_out``. This is the function the
    rank-stability table and any verdict on the paper's claim read, so both say the same.
    """
    budgets = sorted({n for c in data.configurations for n in data.budgets_of(c)})
    left_out = _left_out(data, budgets)
    ranked = [c for c in data.configurations if c not in left_out]
    summaries = {
        (c, n): summarise_cell(list(data.headline.polygons.get(Cell(c, "base", n), {}).values()))
        for c in ranked
        for n in budgets
    }
    return {
        metric: _stability(metric, {k: value(s) for k, s in summaries.items()}, budgets, left_out)
        for metric, value in RANK_METRICS.items()
    }


def _left_out(data: ReportData, budgets: list[int]) -> dict[str, str]:
    """Configurations lacking a budget's base cell or with one incomplete, and why."""
    view, out = data.headline, {}
    for configuration in data.configurations:
        cells = [Cell(configuration, "base", n) for n in budgets]
        lacking = [c.budget for c in cells if c not in view.grid]
        running = [c.budget for c in cells if c in view.grid and not view.complete(c)]
        if lacking:
            out[configuration] = "no cell at N=" + ", ".join(map(str, lacking))
        elif running:
            out[configuration] = "incomplete at N=" + ", ".join(map(str, running))
    return out


def _stability(
    metric: str,
    values: Mapping[tuple[str, int], float],
    budgets: list[int],
    left_out: Mapping[str, str],
) -> RankStability:
    configurations = sorted({c for c, _ in values})
    means = {c: sum(values[c, n] for n in budgets) / len(budgets) for c in configurations}
    reference = ordering(means)
    per_budget = []
    for n in budgets:
        at_n = {c: values[c, n] for c in configurations}
        found = tuple(inversions(reference, at_n))
        per_budget.append(BudgetOrdering(n, at_n, ordering(at_n), found))
    return RankStability(metric, means, reference, tuple(per_budget), left_out)


def rank_stability_table(data: ReportData) -> ReportTable:
    """Per metric: the reference ordering, each budget's ordering and inversions, a summary."""
    results = rank_stability(data)
    rows = [row for result in results.values() for row in _metric_rows(result)]
    left_out = next(iter(results.values())).left_out if results else {}
    notes = [
        "base condition, IoU2, fixed denominator (an unparseable answer counts 0); the "
        "reference ordering ranks configurations by the mean over budgets of each budget's "
        "figure; only configurations with a complete base cell at every budget are ranked",
        "an inversion is a pair of configurations that the reference ranks a above b while "
        "the budget's figures put b strictly above a (a tie is no inversion); each pair counts "
        "once per budget and the total sums the budgets; one ordering: no inversion at any "
        "budget; '=' joins configurations with equal figures",
    ]
    if left_out:
        notes.append("not ranked: " + "; ".join(f"{c} ({why})" for c, why in left_out.items()))
    return ReportTable(
        "rank_stability",
        "Rank stability: orderings of configurations by budget (base, IoU2, fixed)",
        ("Metric", "N", "Ordering", "Inversions vs reference"),
        tuple(rows),
        tuple(notes),
    )


def _metric_rows(result: RankStability) -> list[tuple[str, ...]]:
    m = result.metric
    rows: list[tuple[str, ...]] = [
        (m, "mean", _ordering_text(result.reference, result.reference_values), "reference")
    ]
    rows += [
        (m, str(b.budget), _ordering_text(b.ordering, b.values), _inversions_text(b.inversions))
        for b in result.budgets
    ]
    one = "yes" if result.one_ordering else "no"
    rows.append((m, "all", f"one ordering across all budgets: {one}", str(result.total_inversions)))
    return rows


def _ordering_text(names: tuple[str, ...], values: Mapping[str, float]) -> str:
    """``a > b = c``: ``=`` where the figures are equal (the ordering then keeps name order)."""
    if not names:
        return "—"
    text = names[0]
    for above, below in pairwise(names):
        text += (" = " if values[above] == values[below] else " > ") + below
    return text


def _inversions_text(found: tuple[tuple[str, str], ...]) -> str:
    """``1: qwen above gemini``: the count, then each pair as the budget has it."""
    if not found:
        return "0"
    return f"{len(found)}: " + "; ".join(f"{b} above {a}" for a, b in found)
