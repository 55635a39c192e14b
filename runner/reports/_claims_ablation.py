"""The paper's ablation and diagnostic claims (§4.3: F3, F4, Tables 4 and 5) as tests.

A claim about a condition grid is tested on every configuration that ran the conditions it
needs, and holds only if it holds for each. Losses are against base, per (budget, question).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from itertools import pairwise

from runner.reports._data import Cell, ReportData
from runner.reports._tables import _contrast, paired, pooled
from runner.reports._verdicts import (
    DIFFERENCE,
    HIGH_SEL,
    RATIO,
    SHARE,
    TOP,
    Finding,
    Judged,
    above,
    base_cells,
    by_budget,
    cell_contrast,
    cells_of,
    fall_to_top,
    fixed,
    has_curve,
    moderate_budgets,
    moderate_mean,
    running,
    verdict,
    within,
)
from scoring import (
    Contrast,
    PolygonScore,
    paired_contrast,
    per_question,
    summarise_cell,
    unpaired_contrast,
)

INPUT_PRESERVING = ("thinking-budget", "temperature", "repeat")
"""The conditions that change neither image nor text, besides thinking-off (Table 3's
reasoning and decoding part): F3's "second-order" ones."""
IMAGE_CONDITIONS = ("no-image", "half-res", "greyscale")
DIFFICULTY = ("easy", "medium", "hard")


# -- F3 -----------------------------------------------------------------------------------------


def f3_reasoning(data: ReportData) -> Finding:
    """F3: the configuration's own thinking beats thinking-off at every budget, through both
    broader parse coverage and better geometry (pooled over budgets)."""
    view = data.headline

    def measure(name: str, pairs: list[tuple[Cell, Cell]]) -> tuple[str, list[Judged]]:
        steps = [(a.budget, cell_contrast(view, a, b)) for a, b in pairs]
        on, off = pooled(view, name, "base"), pooled(view, name, "thinking-off")
        coverage = paired_contrast(per_question(on, "parseable"), per_question(off, "parseable"))
        both = {k for k in on.keys() & off.keys() if _parsed(on[k]) and _parsed(off[k])}
        geometry = paired_contrast(
            per_question({k: on[k] for k in both}), per_question({k: off[k] for k in both})
        )
        text = (
            f"{name}: "
            + ", ".join(f"N={n} {_contrast(c)}" for n, c in steps)
            + f"; parse % {_contrast(coverage)}, parseable IoU {_contrast(geometry)}"
        )
        judged = [Judged(f"{name} N={n}", above(c, DIFFERENCE)) for n, c in steps]
        judged += [Judged(f"{name} parse %", above(coverage, SHARE))]
        return text, [*judged, Judged(f"{name} parseable IoU", above(geometry, DIFFERENCE))]

    measures = []
    for name in running(data, ("thinking-off",)):
        pairs = [(c, Cell(name, "thinking-off", c.budget)) for c in base_cells(view, name)]
        pairs = [(a, b) for a, b in pairs if b in view.grid]
        measures.append(([c for p in pairs for c in p], partial(measure, name, pairs)))
    return verdict(
        data,
        "F3 reasoning: thinking on beats thinking-off at every budget, in coverage and geometry",
        "Qwen max-thinking > thinking-off at every N, via parse coverage and geometry",
        f"paired Δ(base − off) > {DIFFERENCE:g} at each N; pooled Δ parse % > {SHARE:g} and "
        f"Δ parseable-only IoU (keys both parsed) > {DIFFERENCE:g}",
        "base and thinking-off cells",
        [c for c in measures if c[0]],
    )


def f3_largest(data: ReportData) -> Finding:
    """F3: thinking-off's loss is the largest input-preserving effect: larger than every
    other such condition's loss (x − off) and gain (2·base − off − x), each by more than
    :data:`DIFFERENCE`."""
    view = data.headline

    def measure(name: str, others: Sequence[str]) -> tuple[str, list[Judged]]:
        base, off = _points(data, name, "base"), _points(data, name, "thinking-off")
        parts, judged = [], []
        for other in others:
            x = _points(data, name, other)
            keys = base.keys() & off.keys() & x.keys()
            loss = paired_contrast({k: x[k] for k in keys}, {k: off[k] for k in keys})
            gain = paired_contrast(
                {k: 2 * base[k] - off[k] - x[k] for k in keys}, dict.fromkeys(keys, 0.0)
            )
            parts.append(f"{other} − off {_contrast(loss)}, loss − gain {_contrast(gain)}")
            judged += [
                Judged(f"{name} {other} loss", above(loss, DIFFERENCE)),
                Judged(f"{name} {other} gain", above(gain, DIFFERENCE)),
            ]
        return f"{name}: " + ", ".join(parts), judged

    measures = []
    for name in running(data, ("thinking-off",)):
        others = [c for c in INPUT_PRESERVING if c in data.conditions_of(name)]
        if others:
            cells = cells_of(view, name, ("base", "thinking-off", *others))
            measures.append((cells, partial(measure, name, others)))
    return verdict(
        data,
        "F3 largest: thinking-off's loss exceeds every other input-preserving effect",
        "the thinking setting is the largest input-preserving difference",
        f"per other input-preserving condition x: paired Δ(x − off) > {DIFFERENCE:g} and "
        f"Δ(2·base − off − x) > {DIFFERENCE:g}",
        "base, thinking-off and thinking-budget/temperature/repeat cells",
        measures,
    )


def f3_no_image(data: ReportData) -> Finding:
    """F3: removing the image is comparably damaging: its loss is within a factor of
    :data:`RATIO` of thinking-off's, either way (a rule fixed before the data; the paper gives
    no ratio)."""
    view = data.headline

    def measure(name: str) -> tuple[str, list[Judged]]:
        base, off = _points(data, name, "base"), _points(data, name, "thinking-off")
        blind = _points(data, name, "no-image")
        keys = base.keys() & off.keys() & blind.keys()
        lost = {k: base[k] - blind[k] for k in keys}
        lost_off = {k: base[k] - off[k] for k in keys}
        zero = dict.fromkeys(keys, 0.0)
        more = paired_contrast({k: lost[k] - lost_off[k] / RATIO for k in keys}, zero)
        less = paired_contrast({k: RATIO * lost_off[k] - lost[k] for k in keys}, zero)
        text = (
            f"{name}: no-image loss − off loss / {RATIO:g} {_contrast(more)}, "
            f"{RATIO:g} × off loss − no-image loss {_contrast(less)}"
        )
        return text, [
            Judged(f"{name} ≥ 1/{RATIO:g}", above(more, 0.0)),
            Judged(f"{name} ≤ {RATIO:g}×", above(less, 0.0)),
        ]

    needed = ("base", "thinking-off", "no-image")
    return verdict(
        data,
        "F3 no-image: removing the image is comparably damaging (within 2× of thinking-off)",
        "removing the image is comparably damaging",
        f"paired Δ(no-image loss − off loss / {RATIO:g}) > 0 and Δ({RATIO:g} × off loss − "
        "no-image loss) > 0 (the ratio is the effect)",
        "base, thinking-off and no-image cells",
        [(cells_of(view, n, needed), partial(measure, n)) for n in running(data, needed)],
    )


def f3_evidence(data: ReportData) -> Finding:
    """F3: removing the image costs far more than halving it, which costs far more than
    greyscale: "≫" as a ratio, each loss above :data:`RATIO` times the next by more than
    :data:`DIFFERENCE` (losses against base, per (budget, question))."""
    view = data.headline
    order = IMAGE_CONDITIONS

    def measure(name: str) -> tuple[str, list[Judged]]:
        base = _points(data, name, "base")
        lost = {c: _losses(base, _points(data, name, c)) for c in order}
        parts, judged = [], []
        for a, b in pairwise(order):
            keys = lost[a].keys() & lost[b].keys()
            c = paired_contrast(
                {k: lost[a][k] - RATIO * lost[b][k] for k in keys}, dict.fromkeys(keys, 0.0)
            )
            what = f"{a} loss − {RATIO:g} × {b} loss"
            parts.append(f"{what} {_contrast(c)}")
            judged.append(Judged(f"{name} {a} ≫ {b}", above(c, DIFFERENCE)))
        return f"{name}: " + ", ".join(parts), judged

    needed = ("base", *order)
    return verdict(
        data,
        "F3 evidence ≫ resolution ≫ colour",
        "no-image ≫ half-res ≫ greyscale (losses vs base)",
        f"each loss vs base − {RATIO:g} × the next one's: paired Δ > {DIFFERENCE:g}",
        f"cells of {', '.join(needed)}",
        [(cells_of(view, n, needed), partial(measure, n)) for n in running(data, order)],
    )


def _losses(base: Mapping[Key, float], other: Mapping[Key, float]) -> dict[Key, float]:
    """Per key both hold, base's value minus ``other``'s: what the condition lost."""
    return {k: base[k] - other[k] for k in base.keys() & other.keys()}


def f3_second_order(data: ReportData) -> Finding:
    """F3: thinking-budget, temperature and a repeat run stay second-order: each within
    ±:data:`DIFFERENCE` of base (an equivalence test, so a small store is not testable, not a
    pass, and answers identical to base's test nothing)."""
    view = data.headline

    def measure(name: str, condition: str) -> tuple[str, list[Judged]]:
        c = paired(pooled(view, name, condition), pooled(view, name, "base"))
        return f"{name} {condition} − base {_contrast(c)}", [
            Judged(f"{name} {condition}", within(c))
        ]

    return verdict(
        data,
        f"F3 second-order: thinking-budget, temperature and repeat within ±{DIFFERENCE:g} of base",
        "thinking-budget, temperature and a repeat run all stay second-order",
        f"paired Δ(condition − base) within ±{DIFFERENCE:g} (TOST), not identical",
        "base and thinking-budget/temperature/repeat cells",
        [
            (cells_of(view, n, ("base", c)), partial(measure, n, c))
            for n in data.configurations
            for c in INPUT_PRESERVING
            if c in data.conditions_of(n)
        ],
    )


# -- F4 -----------------------------------------------------------------------------------------


def f4_spatial_over_colour(data: ReportData) -> Finding:
    """F4: a wrong spatial hint hurts more than a wrong colour, by more than
    :data:`DIFFERENCE`."""
    view = data.headline
    order = ("cue-spatial-wrong", "cue-colour-wrong")

    def measure(name: str) -> tuple[str, list[Judged]]:
        c = paired(pooled(view, name, order[1]), pooled(view, name, order[0]))
        text = f"{name}: colour-wrong − spatial-wrong {_contrast(c)}"
        return text, [Judged(name, above(c, DIFFERENCE))]

    return verdict(
        data,
        "F4 wrong spatial hurts more than wrong colour",
        "spatial-wrong loss > colour-wrong loss",
        f"paired Δ(colour-wrong − spatial-wrong) > {DIFFERENCE:g}",
        f"cells of {', '.join(order)}",
        [(cells_of(view, n, order), partial(measure, n)) for n in running(data, order)],
    )


def f4_sub_additive(data: ReportData) -> Finding:
    """F4: both wrong hints together keep more than the single losses added up predict.

    The additive prediction of a (budget, question) is ``spatial + colour − base``; IoU
    cannot go below 0, so the test is against the prediction floored at 0: an answer to
    both-wrong that scores 0 can never pass it, whatever the single losses are."""
    needed = ("base", "cue-spatial-wrong", "cue-colour-wrong", "cue-both-wrong")
    view = data.headline

    def measure(name: str) -> tuple[str, list[Judged]]:
        base, spatial, colour, both = (_points(data, name, c) for c in needed)
        keys = base.keys() & spatial.keys() & colour.keys() & both.keys()
        excess = {k: both[k] - max(0.0, spatial[k] + colour[k] - base[k]) for k in keys}
        c = paired_contrast(excess, dict.fromkeys(keys, 0.0))
        text = f"{name}: both − max(0, additive) {_contrast(c)}"
        return text, [Judged(name, above(c, DIFFERENCE))]

    return verdict(
        data,
        "F4 wrong cues combine sub-additively",
        "both-wrong loss < spatial-wrong + colour-wrong losses",
        f"paired mean of both-wrong − max(0, spatial + colour − base) > {DIFFERENCE:g}",
        f"cells of {', '.join(needed)}",
        [(cells_of(view, n, needed), partial(measure, n)) for n in running(data, needed)],
    )


def f4_truthful_cues(data: ReportData) -> Finding:
    """F4: truthful hints give no reliable gain over base: an equivalence, so neither a gain
    nor a harm beyond :data:`DIFFERENCE`, and not identical to base."""
    cues = ("cue-spatial-true", "cue-colour-true")
    view = data.headline

    def measure(name: str, cue: str) -> tuple[str, list[Judged]]:
        c = paired(pooled(view, name, cue), pooled(view, name, "base"))
        return f"{name} {cue} − base {_contrast(c)}", [Judged(f"{name} {cue}", within(c))]

    return verdict(
        data,
        "F4 truthful cues: no reliable gain",
        "spatial-true and colour-true: no reliable gain",
        f"paired Δ(cue − base) within ±{DIFFERENCE:g} (TOST), not identical",
        "base and cue-*-true cells",
        [
            (cells_of(view, n, ("base", cue)), partial(measure, n, cue))
            for n in running(data, cues)
            for cue in cues
        ],
    )


# -- Tables 4 and 5 -------------------------------------------------------------------------------


def table4_selection(data: ReportData) -> Finding:
    """Table 4: target preference stays high and flat until the densest budget (Sel above
    :data:`HIGH_SEL` over the budgets below 64, each step between them within ±:data:`SHARE`,
    and falling at 64 by more than :data:`SHARE`), while conditional tracing differentiates
    (the strongest configuration's Con above the weakest's by more than :data:`DIFFERENCE` at
    every budget, on the questions both selected)."""
    view = data.headline
    curves = [n for n in data.configurations if has_curve(view, n)]

    def measure() -> tuple[str, list[Judged]]:
        parts, judged = [], []
        for name in curves:
            text, found = _preference(data, name)
            parts.append(text)
            judged += found
        strong, weak = _extremes(data, curves)
        for cell in base_cells(view, strong):
            c = _tracing(data, cell, Cell(weak, "base", cell.budget))
            parts.append(f"Con {strong} − {weak} N={cell.budget} {_contrast(c)}")
            judged.append(Judged(f"Con N={cell.budget}", above(c, DIFFERENCE)))
        return "; ".join(parts), judged

    cells = [c for n in curves for c in base_cells(view, n)]
    return verdict(
        data,
        "Table 4: Sel high and flat until N = 64, falling there; tracing (Con) separates "
        "configurations",
        "target preference high until the densest budget; tracing the differentiator",
        f"per curve, Sel below 64 > {HIGH_SEL:g}, its steps within ±{SHARE:g}, Sel(moderate − "
        f"64) > {SHARE:g}; Con(strongest − weakest) > {DIFFERENCE:g} at each N",
        "≥ 2 configurations with base curves (≥ 3 budgets incl. 64)",
        [(cells, measure)] if len(curves) >= 2 else [],
    )


def _preference(data: ReportData, name: str) -> tuple[str, list[Judged]]:
    """One curve's target preference: high and flat below 64, falling at 64."""
    view = data.headline
    sel = by_budget(view, name, fixed("sel"))
    below_top = [n for n in sel if n < TOP]
    level = moderate_mean(sel, below_top)
    high = paired_contrast(level, dict.fromkeys(level, 0.0))
    steps = [(a, b, paired_contrast(sel[b], sel[a])) for a, b in pairwise(below_top)]
    fall = fall_to_top(sel, moderate_budgets(view, name))
    text = (
        f"{name} Sel below 64 {_contrast(high)}, "
        + ", ".join(f"{b} − {a} {_contrast(c)}" for a, b, c in steps)
        + f", moderate − 64 {_contrast(fall)}"
    )
    judged = [Judged(f"{name} Sel high", above(high, HIGH_SEL))]
    judged += [Judged(f"{name} Sel {a}–{b}", within(c, SHARE, flags=True)) for a, b, c in steps]
    return text, [*judged, Judged(f"{name} Sel at 64", above(fall, SHARE))]


def table5_difficulty(data: ReportData) -> Finding:
    """Table 5: easy > medium > hard for each configuration, in fixed and in parseable-only
    IoU (different questions, so each step is an unpaired bootstrap contrast)."""
    view = data.headline

    def measure(name: str) -> tuple[str, list[Judged]]:
        scores = pooled(view, name, "base")
        parts, judged = [], []
        for kind, parsed_only in (("fixed", False), ("parseable", True)):
            groups = _difficulty_groups(data, scores, parsed_only)
            steps = [
                (a, b, unpaired_contrast(groups[a], groups[b])) for a, b in pairwise(DIFFICULTY)
            ]
            parts += [f"{kind} {a} − {b} {_contrast(c)}" for a, b, c in steps]
            judged += [
                Judged(f"{name} {kind} {a} > {b}", above(c, DIFFERENCE)) for a, b, c in steps
            ]
        return f"{name}: " + ", ".join(parts), judged

    return verdict(
        data,
        "Table 5: easy > medium > hard, in fixed and parseable-only IoU",
        "consistent easy-to-hard declines, matched parseable-only losses",
        f"per configuration and step, bootstrap Δ(easier − harder) > {DIFFERENCE:g}, both "
        "denominators",
        "complete base cells and the cohort's difficulty labels",
        [
            (base_cells(view, n), partial(measure, n))
            for n in data.configurations
            if base_cells(view, n) and data.questions
        ],
    )


# -- shared -------------------------------------------------------------------------------------


Key = tuple[int, str]


def _points(data: ReportData, name: str, condition: str) -> dict[Key, float]:
    """A configuration's fixed IoU per (budget, question) under one condition, in points."""
    return per_question(pooled(data.headline, name, condition))


def _parsed(score: PolygonScore | None) -> bool:
    return score is not None and score.parseable


def _extremes(data: ReportData, names: Sequence[str]) -> tuple[str, str]:
    """The configurations with the highest and lowest pooled fixed IoU (base)."""
    means = {
        n: summarise_cell(list(pooled(data.headline, n, "base").values())).iou.fixed for n in names
    }
    ranked = sorted(names, key=lambda n: (-means[n], n))
    return ranked[0], ranked[-1]


def _tracing(data: ReportData, a: Cell, b: Cell) -> Contrast:
    """Paired Δ Con(a − b): IoU on the questions both cells' answers selected."""
    mine, theirs = data.headline.polygons.get(a, {}), data.headline.polygons.get(b, {})
    both = [q for q in mine.keys() & theirs.keys() if _selected(mine[q]) and _selected(theirs[q])]
    return paired_contrast(
        per_question({q: mine[q] for q in both}), per_question({q: theirs[q] for q in both})
    )


def _selected(score: PolygonScore | None) -> bool:
    return score is not None and score.parseable and score.sel


def _difficulty_groups(
    data: ReportData, scores: Mapping[tuple[int, str], PolygonScore | None], parsed_only: bool
) -> dict[str, list[float]]:
    """Fixed (or parseable-only) IoU in points per difficulty label, one value per key."""
    groups: dict[str, list[float]] = {label: [] for label in DIFFICULTY}
    for (_, q), s in scores.items():
        question = data.questions.get(q)
        if question is None or question.difficulty not in groups:
            continue
        if s is not None and s.parseable:
            groups[question.difficulty].append(100.0 * s.iou)
        elif not parsed_only:
            groups[question.difficulty].append(0.0)
    return groups
