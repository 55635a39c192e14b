"""How a finding is judged: each of its contrasts holds, fails, or is open at this size.

A claim rests on paired contrasts (PROTOCOL §7), each with a 95% bootstrap interval, and each
contrast is read against the claim's smallest effect of interest, fixed in PROTOCOL §7 from
the paper's own numbers before any store is read (decided, groundbench):

- *holds*: the interval lies wholly beyond the effect (or, for "≈", inside the margin);
- *fails*: it lies wholly short of it (or wholly outside the margin): an absent effect,
  measured precisely enough, fails; it is never left open and never passes;
- *open*: it straddles the boundary: this store is too small to tell;
- *identical*: an equivalence whose two sides scored alike on every question: nothing was
  tested (the same answers twice), so it never passes.

A claim holds when every one of its contrasts does, does not hold when any fails, and is
*not testable* (identical) or *not testable at this size* (open) otherwise; an open claim
says about how many questions would decide it, from the store's own intervals.
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
Outcome = Literal["holds", "fails", "open", "identical"]
PAPER_ORDER: tuple[str, ...] = ("gemini-high", "qwen-max", "doubao", "kimi")
"""The paper's configuration ordering (§4.2 F1), by its configuration names."""
TOP = 64  # the densest budget, where F2's collapse is claimed

# The smallest effects of interest (PROTOCOL §7), in points, fixed from the paper's own numbers
# before any store is read. A directional claim holds when its interval lies beyond its
# effect, does not hold when it lies wholly short of it: an absent effect, measured precisely,
# reads "does not hold", never "not testable" and never "holds".
DIFFERENCE = 2.0
"""IoU points: a difference of interest, and the margin of every "≈" (the paper reads 57.7
against 57.3 as matched and reference shifts up to 1.1 as no change)."""
SHARE = 5.0
"""Points of a share of questions (Acc@τ, Sel, parse %, legal %): a flag's spread per
question (≈ 45 points) is about twice an IoU's, so its effect of interest is 2.5 × 2."""
LARGE = 10.0
"""Points: a collapse, or a large gap (the paper's Gemini falls 25 points to N = 64, from
62.7 over its other budgets to 37.7: a collapse is at least two fifths of that)."""
RATIO = 2.0
""""≫" is at least twice, "comparably" within twice, and the paired axes "separate" when
filled IoU is at least twice legal IoU (the paper's 37.7 against 4.2)."""
HIGH_SEL = 80.0
"""% selected that counts as "high": the paper's boxes find the object near 90% of the time
(Acc@.5), and high is within :data:`LARGE` of it."""
DECIDES_AT_MOST = 100.0
"""Beyond this many times a store's questions, "would decide it" is said as "more than"."""


@dataclass(frozen=True)
class Reading:
    """One contrast read against its boundary. ``scale``, for an open one, is about how many
    times this store's questions would decide it: the interval's half-width over the
    estimate's distance to the boundary, squared (intervals narrow as 1/√n); NaN when it had
    no questions to measure."""

    outcome: Outcome
    scale: float = 1.0


FAILS = Reading("fails")


@dataclass(frozen=True)
class Finding:
    """One claim of the paper, its figures, this store's figures, and the verdict.

    ``scale`` (not testable at this size only): about how many times this store's questions
    would decide it. ``keys`` name the contrasts it rests on, so that claims sharing one can
    say so."""

    claim: str
    paper: str
    here: str
    verdict: Verdict
    test: str
    scale: float | None = None
    keys: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Judged:
    """One contrast of a claim, read: ``label`` is what a failure (or an open one) names;
    ``key``, if given, names the contrast itself where another claim rests on it too."""

    label: str
    reading: Reading
    key: str = ""

    @property
    def outcome(self) -> Outcome:
        return self.reading.outcome


def _unmeasured(c: Contrast) -> bool:
    return c.questions == 0 or math.isnan(c.low)


def _open(c: Contrast, distance: float) -> Reading:
    """An open reading: how many times the questions would bring the half-width under the
    estimate's ``distance`` from the boundary."""
    half = (c.high - c.low) / 2
    if distance <= 0 or half <= 0:
        return Reading("open", math.inf)
    return Reading("open", max(1.0, (half / distance) ** 2))


def above(c: Contrast, effect: float) -> Reading:
    """The claim is Δ > ``effect``: holds when the interval lies beyond it, fails when it
    lies wholly short of it (an absent effect, measured precisely)."""
    if _unmeasured(c):
        return Reading("open", math.nan)
    if c.low > effect:
        return Reading("holds")
    if c.high < effect:
        return FAILS
    return _open(c, abs(c.delta - effect))


def below(c: Contrast, effect: float) -> Reading:
    """The claim is Δ < −``effect`` (a fall of at least ``effect``)."""
    return above(Contrast(c.questions, -c.delta, -c.high, -c.low, c.alike), effect)


def within(c: Contrast, margin: float = DIFFERENCE, *, flags: bool = False) -> Reading:
    """The claim is |Δ| ≤ margin (an equivalence: both one-sided tests at 2.5%, so the same
    95% interval). Identical scores on every question test nothing (the same answers twice,
    or a condition that reached no answer): no claim passes on them. Except for ``flags``
    (shares of 0/100 flags: two models both clearing a threshold on every question do agree)."""
    if _unmeasured(c):
        return Reading("open", math.nan)
    if c.alike and not flags:
        return Reading("identical")
    if -margin <= c.low and c.high <= margin:
        return Reading("holds")
    if c.low > margin or c.high < -margin:
        return FAILS
    return _open(c, abs(margin - abs(c.delta)))


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
    """The claim's verdict from its contrasts: any failing fails it; else any identical one
    leaves it not testable; else any open one leaves it not testable at this size."""
    keys = frozenset(j.key for j in judged if j.key)

    def labels(outcome: Outcome) -> list[str]:
        return [j.label for j in judged if j.outcome == outcome]

    if failed := labels("fails"):
        text = f"{test}; fails: {', '.join(failed)}"
        return Finding(claim, paper, here, "does not hold", text, keys=keys)
    if alike := labels("identical"):
        text = f"{test}; scored alike on every question, so nothing was tested: {', '.join(alike)}"
        return Finding(claim, paper, here, "not testable", text, keys=keys)
    if still := labels("open"):
        scales = [j.reading.scale for j in judged if j.outcome == "open"]
        scale = math.nan if any(math.isnan(x) for x in scales) else max(scales)
        text = f"{test}; interval holds the boundary: {', '.join(still)}"
        return Finding(claim, paper, here, "not testable at this size", text, scale, keys)
    return Finding(claim, paper, here, "holds", test, keys=keys)


def fall_key(name: str) -> str:
    """The contrast F2's fall and the phase audit's phase 0 share: IoU, moderate − 64."""
    return f"{name}: IoU moderate − {TOP}"


def pair_key(a: str, b: str, budget: int) -> str:
    """The contrast rank stability and the phase audit's phase 0 share: IoU, a − b at N."""
    return f"IoU {a} − {b} at N={budget}"


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
