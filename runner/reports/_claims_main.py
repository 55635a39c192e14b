"""The paper's main-result claims (§4.2: F1, F2, rank stability; §4.3's references) as tests.

Each function reads one claim off a store and returns its :class:`Finding`; how contrasts are
read (holds, fails, open) is :mod:`runner.reports._verdicts`'.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import partial
from itertools import combinations, pairwise

from conditions import BOX
from runner.reports._data import Cell, ReportData, ViewScores
from runner.reports._ranks import rank_stability
from runner.reports._robustness import (
    Unscored,
    alternate_reference_figures,
    phase_audit_figures,
)
from runner.reports._slices import subdivision_contrasts
from runner.reports._tables import _contrast, _fmt, paired, pooled
from runner.reports._verdicts import (
    DIFFERENCE,
    FAILS,
    LARGE,
    PAPER_ORDER,
    RATIO,
    SHARE,
    TOP,
    Finding,
    Judged,
    above,
    base_cells,
    below,
    by_budget,
    cell_contrast,
    correct,
    fall_key,
    fall_to_top,
    fixed,
    has_curve,
    judge,
    missing_cells,
    moderate_budgets,
    moderate_mean,
    named,
    pair_key,
    scores_of,
    untestable,
    verdict,
    within,
)
from scoring import (
    PHASE_REFERENCES,
    BoxScore,
    Contrast,
    PolygonScore,
    control_scores,
    ordering,
    paired_contrast,
    per_question,
    summarise_cell,
)

_NEEDS_BOX = "a configuration with complete base/box and base/N cells"
_NEEDS_CURVES = "≥ 2 configurations, one with base cells at ≥ 3 budgets incl. N = 64"


# -- F1 -----------------------------------------------------------------------------------------


def f1_ordering(data: ReportData) -> Finding:
    """F1: Gemini > Qwen-max > Doubao > Kimi on pooled fixed IoU (base, all budgets)."""
    claim = "F1 ordering: " + " > ".join(PAPER_ORDER)
    paper = "pooled fixed IoU in that order"
    view = data.headline
    missing = missing_cells(view, [c for name in PAPER_ORDER for c in base_cells(view, name)])
    absent = [name for name in PAPER_ORDER if not base_cells(view, name)]
    if absent or missing:
        return untestable(claim, paper, [*(f"{n}/base" for n in absent), *named(view, missing)])
    steps = [(a, b, pooled_contrast(view, a, b)) for a, b in pairwise(PAPER_ORDER)]
    here = "; ".join(f"{a} − {b} {_contrast(c)}" for a, b, c in steps)
    judged = [Judged(f"{a} > {b}", above(c, DIFFERENCE)) for a, b, c in steps]
    test = f"each adjacent pair: pooled paired Δ > {DIFFERENCE:g}"
    return judge(claim, paper, here, judged, test)


def f1_box_gap(data: ReportData) -> Finding:
    """F1: even the strongest configuration's polygons fall far short of its boxes: a large
    gap, at least :data:`LARGE` points."""
    claim = f"F1 gap: box IoU > polygon IoU + {LARGE:g} (strongest configuration with boxes)"
    paper = "box Acc@.5 near 90; pooled Gemini polygon IoU 57.7"
    view = data.headline
    strongest = _strongest_with_box(data)
    if strongest is None:
        return untestable(claim, paper, [_NEEDS_BOX])
    best, boxes = strongest
    box_iou = {
        q: 100.0 * s.box_iou if s is not None and s.parseable else 0.0 for q, s in boxes.items()
    }
    # One box per question against that question's polygons averaged over its budgets:
    # the question is the unit resampled, not each (budget, question) copy of one box.
    by_question: dict[str, list[float]] = {}
    for (_, q), iou in per_question(pooled(view, best, "base")).items():
        by_question.setdefault(q, []).append(iou)
    polygons = {q: sum(v) / len(v) for q, v in by_question.items()}
    c = paired_contrast(box_iou, polygons)
    here = f"{best}: box − polygon {_contrast(c)}"
    test = f"paired Δ per question > {LARGE:g} (a large gap)"
    return judge(claim, paper, here, [Judged(best, above(c, LARGE))], test)


def f1_box_control(data: ReportData) -> Finding:
    """F1: direct polygons score like the box answer drawn as an N-gon (the matched control)."""
    claim = "F1 control: direct polygons ≈ the box-derived N-gon (same configuration)"
    paper = "pooled Gemini direct 57.7, box-derived 57.3"
    view = data.headline
    strongest = _strongest_with_box(data)
    if strongest is None:
        return untestable(claim, paper, [_NEEDS_BOX])
    best, boxes = strongest
    direct = pooled(view, best, "base")
    qids = list(boxes)
    control: dict[tuple[int, str], PolygonScore | None] = {}
    for n in sorted({n for n, _ in direct}):
        scores = control_scores([boxes[q] for q in qids], n)
        control.update(zip([(n, q) for q in qids], scores, strict=True))
    c = paired(direct, control)
    here = f"{best}: direct − control {_contrast(c)}"
    test = f"paired Δ within ±{DIFFERENCE:g} (TOST)"
    return judge(claim, paper, here, [Judged(best, within(c))], test)


def f1_thresholds(data: ReportData) -> Finding:
    """F1: thresholds tell Kimi's low-budget object finding from Gemini's conditional geometry
    (at the smallest budget Kimi clears IoU .25 as often as Gemini, within :data:`SHARE`, while
    Gemini's lead grows from Acc@.25 to Acc@.75 by more than it), and both lose high-N
    reliability (Acc@.5 at 64 a collapse below the moderate budgets')."""
    strong, weak = PAPER_ORDER[0], PAPER_ORDER[-1]
    view = data.headline

    def measure() -> tuple[str, list[Judged]]:
        low = min({c.budget for c in base_cells(view, strong)}
                  & {c.budget for c in base_cells(view, weak)})  # fmt: skip
        mine, theirs = Cell(strong, "base", low), Cell(weak, "base", low)
        lead = {t: _lead(view, mine, theirs, t) for t in (0.25, 0.75)}
        common = lead[0.25].keys() & lead[0.75].keys()
        grows = paired_contrast(
            {q: lead[0.75][q] for q in common}, {q: lead[0.25][q] for q in common}
        )
        finds = paired_contrast(lead[0.25], dict.fromkeys(lead[0.25], 0.0))
        judged = [
            Judged(f"{weak} ≈ {strong} at .25, N={low}", within(finds, SHARE, flags=True)),
            Judged(f"lead at N={low}", above(grows, SHARE)),
        ]
        parts = [
            f"N={low}: {strong} − {weak} Acc@.25 {_contrast(finds)}, "
            f"lead at .75 − at .25 {_contrast(grows)}"
        ]
        for name in (strong, weak):
            accuracy = by_budget(view, name, correct(0.5))
            c = fall_to_top(accuracy, moderate_budgets(view, name))
            parts.append(f"{name} Acc@.5 moderate − 64 {_contrast(c)}")
            judged.append(Judged(f"{name} at 64", above(c, LARGE)))
        return "; ".join(parts), judged

    needs = [c for n in (strong, weak) for c in base_cells(view, n)]
    ready = all(has_curve(view, n) for n in (strong, weak))
    return verdict(
        data,
        "F1 thresholds: Kimi ≈ Gemini at Acc@.25, Gemini's lead grows with τ at low N; "
        "both lose Acc@.5 at 64",
        "Kimi finds objects at low N, Gemini traces better; both lose high-N reliability",
        f"at the smallest N: paired Δ Acc@.25 within ±{SHARE:g} and Δ[lead@.75 − lead@.25] > "
        f"{SHARE:g}; Acc@.5(moderate − 64) > {LARGE:g}",
        f"{strong} and {weak} base curves (≥ 3 budgets incl. 64)",
        [(needs, measure)] if ready else [],
    )


def _lead(view: ViewScores, a: Cell, b: Cell, threshold: float) -> dict[str, float]:
    """Per question, ``a``'s correct@τ minus ``b``'s (100, 0 or −100)."""
    hit = correct(threshold)
    mine, theirs = view.polygons.get(a, {}), view.polygons.get(b, {})
    return {q: hit(mine[q]) - hit(theirs[q]) for q in mine.keys() & theirs.keys()}


# -- F2 -----------------------------------------------------------------------------------------


def f2_non_monotone(data: ReportData) -> Finding:
    """F2: IoU peaks at moderate budgets: above both the smallest budget and N = 64."""
    view = data.headline

    def measure(name: str) -> tuple[str, list[Judged]]:
        curve = by_budget(view, name, fixed("iou"))
        moderate = moderate_budgets(view, name)
        low = min(curve)
        rise = paired_contrast(moderate_mean(curve, moderate), curve[low])
        fall = fall_to_top(curve, moderate)
        text = f"{name}: moderate − {low} {_contrast(rise)}, moderate − {TOP} {_contrast(fall)}"
        return text, [
            Judged(f"{name} rise", above(rise, DIFFERENCE)),
            Judged(f"{name} fall", above(fall, LARGE), fall_key(name)),
        ]

    return verdict(
        data,
        "F2 non-monotone: IoU peaks at moderate budgets, above the smallest N and collapsing "
        "at N = 64",
        "peaks at moderate N, falls at 64 (Gemini 37.7 at 64)",
        f"paired Δ(moderate − smallest N) > {DIFFERENCE:g} and Δ(moderate − 64) > {LARGE:g}; "
        "moderate: the per-question mean over the budgets between them",
        "base cells at ≥ 3 budgets incl. 64",
        [
            (base_cells(view, name), partial(measure, name))
            for name in data.configurations
            if has_curve(view, name)
        ],
    )


def f2_legal_collapse(data: ReportData) -> Finding:
    """F2: legal-polygon coverage collapses at N = 64 (it falls from N = 32 by at least
    :data:`LARGE`), and at 64 the paired axes separate: filled IoU at least :data:`RATIO`
    times legal IoU (the paper's Gemini: 37.7 against 4.2), question by question."""
    view = data.headline

    def measure(name: str, low: Cell, high: Cell) -> tuple[str, list[Judged]]:
        drop = cell_contrast(view, low, high, "legal")
        scores = view.polygons.get(high, {})
        filled, legal = per_question(scores), per_question(scores, "legal_iou")
        separate = paired_contrast(
            {q: filled[q] - RATIO * legal[q] for q in filled}, dict.fromkeys(filled, 0.0)
        )
        summary = summarise_cell(scores_of(view, high))
        text = (
            f"{name}: at 64 IoU/legal %/legal IoU {_fmt(summary.iou.fixed)}/"
            f"{_fmt(summary.legal_coverage.fixed)}/{_fmt(summary.legal_iou.fixed)}, "
            f"legal % 32 − 64 {_contrast(drop)}, IoU − {RATIO:g} × legal IoU at 64 "
            f"{_contrast(separate)}"
        )
        return text, [
            Judged(f"{name} legal %", above(drop, LARGE)),
            Judged(f"{name} axes at 64", above(separate, 0.0)),
        ]

    pairs = [(n, Cell(n, "base", 32), Cell(n, "base", TOP)) for n in data.configurations]
    return verdict(
        data,
        f"F2 collapse: legal coverage falls from N = 32 to 64; at 64 filled IoU ≥ {RATIO:g} × "
        "legal IoU",
        "Gemini at 64: IoU 37.7, legal coverage/IoU 7.5 / 4.2",
        f"paired Δ legal %(32 − 64) > {LARGE:g}; at 64, paired mean of IoU − {RATIO:g} × legal "
        "IoU > 0",
        "base cells at N = 32 and 64",
        [
            ([lo, hi], partial(measure, n, lo, hi))
            for n, lo, hi in pairs
            if lo in view.grid and hi in view.grid
        ],
    )


def f2_subdivision(data: ReportData) -> Finding:
    """F2: the fall from 32 to 64 persists where G_64 only subdivides G_32's edges."""
    claim = "F2 subdivision: IoU falls from 32 to 64 when extra vertices only subdivide edges"
    paper = "the decline persists on such questions"
    found = subdivision_contrasts(data)
    unsettled = [f"{c}/base/N=32,64 (incomplete)" for c, s in found.items() if not s.complete]
    judged = {c: s.subdivision for c, s in found.items() if s.subdivision.questions}
    if unsettled or not judged:
        return untestable(
            claim, paper, unsettled or ["base N=32 and 64 cells, parts ≤ 32 vertices"]
        )
    parts = [f"{c}: 64 − 32 {_contrast(s.contrast)} ({s.questions} q)" for c, s in judged.items()]
    outcomes = [Judged(c, below(s.contrast, LARGE)) for c, s in judged.items()]
    test = f"paired Δ(64 − 32) < −{LARGE:g}, V ≤ 32"
    return judge(claim, paper, "; ".join(parts), outcomes, test)


def f2_phases(data: ReportData) -> Finding:
    """F2: the ordering and the high-budget reversal hold under each of the eight phases,
    judged per phase with F2's own paired contrasts: each adjacent pair of phase 0's ordering
    at each N, and each curve's fall from its moderate budgets to N = 64."""
    claim = "F2 phases: ordering and reversal hold under all 8 sampling phases"
    paper = "eight starting phases preserve both"
    audit = phase_audit_figures(data)
    unsettled = [p.cell for p in audit.cells if not p.complete]
    gaps = _not_rescored(audit.rescored, audit.unscored) + named(data.headline, unsettled)
    curves = [n for n in data.configurations if has_curve(data.headline, n)]
    if gaps or audit.ordering_holds is None or not curves:
        return untestable(claim, paper, gaps or [_NEEDS_CURVES])
    judged: list[Judged] = []
    worst: dict[str, Contrast] = {}  # per kind of test, the contrast nearest failing
    orderings = _phase0_orderings(data)
    for phase in PHASE_REFERENCES:
        for j, c, kind in _phase_tests(data, phase, orderings, curves):
            judged.append(j)
            if kind not in worst or c.low < worst[kind].low:
                worst[kind] = c
    here = "; ".join(f"weakest {kind} {_contrast(c)}" for kind, c in sorted(worst.items()))
    test = (
        f"in every phase: each adjacent pair of phase 0's ordering paired Δ > {DIFFERENCE:g} "
        f"at each N, and each curve's Δ(moderate − 64) > {LARGE:g}"
    )
    return judge(claim, paper, here, judged, test)


def _phase0_orderings(data: ReportData) -> dict[int, tuple[str, ...]]:
    """Per budget with two configurations or more, their ordering by phase 0's fixed IoU:
    the ordering every phase is judged against."""
    budgets = sorted({n for name in data.configurations for n in data.budgets_of(name)})
    out = {}
    for n in budgets:
        values = {
            name: _phase_values(data, "phase0", Cell(name, "base", n))
            for name in data.configurations
            if Cell(name, "base", n) in data.headline.grid
        }
        if len(values) >= 2:
            out[n] = ordering(
                {name: sum(v.values()) / max(len(v), 1) for name, v in values.items()}
            )
    return out


def _phase_tests(
    data: ReportData,
    phase: str,
    orderings: dict[int, tuple[str, ...]],
    curves: Sequence[str],
) -> list[tuple[Judged, Contrast, str]]:
    """One phase's contrasts: each budget's adjacent pairs of ``orderings``, then the
    reversals."""
    out = []
    for n, names in orderings.items():
        for a, b in pairwise(names):
            c = paired_contrast(
                _phase_values(data, phase, Cell(a, "base", n)),
                _phase_values(data, phase, Cell(b, "base", n)),
            )
            key = pair_key(a, b, n) if phase == PHASE_REFERENCES[0] else ""
            label = f"{a} > {b} at N={n} in {phase}"
            out.append((Judged(label, above(c, DIFFERENCE), key), c, "order"))
    for name in curves:
        curve = {c.budget: _phase_values(data, phase, c) for c in base_cells(data.headline, name)}
        c = fall_to_top(curve, moderate_budgets(data.headline, name))
        key = fall_key(name) if phase == PHASE_REFERENCES[0] else ""
        out.append((Judged(f"{name} reversal in {phase}", above(c, LARGE), key), c, "reversal"))
    return out


def _phase_values(data: ReportData, reference: str, cell: Cell) -> dict[str, float]:
    """A cell's answers re-scored under ``reference``, in points, 0 where none parsed."""
    ious = data.rescored.ious.get(reference, {}).get(cell, {})
    return {
        q: 100.0 * ious[q] if s is not None and s.parseable and q in ious else 0.0
        for q, s in data.headline.polygons.get(cell, {}).items()
    }


def alternate_references(data: ReportData) -> Finding:
    """§4.3: other references move five-budget means by no more than the protocol's margin
    (the paper saw at most 1.1 points: its observed maximum is no tolerance), order unchanged."""
    claim = f"§4.3 references: part, union, continuous shift means within ±{DIFFERENCE:g}, "
    claim += "same ordering"
    paper = "shifts ≤ 1.1 points, ordering unchanged"
    figures = alternate_reference_figures(data)
    unsettled = [f"{m.configuration}/base (incomplete)" for m in figures.configurations
                 if not m.complete]  # fmt: skip
    gaps = _not_rescored(figures.rescored, figures.unscored) + unsettled
    shift = figures.largest_shift
    if gaps or shift is None or figures.ordering_holds is None:
        return untestable(claim, paper, gaps or ["≥ 2 configurations with base cells"])
    name = shift.configuration
    c = paired_contrast(_rescored(data, name, shift.reference), _rescored(data, name, "phase0"))
    swaps = [f"{a}/{b} under {r}" for r, pairs in figures.swaps.items() for a, b in pairs]
    here = (
        f"largest shift {shift.configuration}, {shift.reference} {_contrast(c)}; "
        f"ordering {'unchanged' if not swaps else 'inverted: ' + ', '.join(swaps)}"
    )
    judged = [*(Judged(s, FAILS) for s in swaps), Judged(name, within(c))]
    return judge(claim, paper, here, judged, f"no inversion; paired shift within ±{DIFFERENCE:g}")


# -- rank stability -----------------------------------------------------------------------------


def rank_stability_accuracy(data: ReportData) -> Finding:
    """§4.2: Acc@.5 keeps one ordering across every budget."""
    return _rank_claim(
        data,
        "Acc@0.5",
        "Rank stability (Acc@.5): one ordering across all budgets",
        "Acc@.5 preserves one ordering across all five budgets",
        correct(0.5),
        SHARE,
        swapped=None,
    )


def rank_stability_iou(data: ReportData) -> Finding:
    """§4.2: fixed IoU keeps the ordering except one Qwen–Gemini inversion at N = 64."""
    return _rank_claim(
        data,
        "IoU",
        "Rank stability (IoU): one Qwen–Gemini inversion, at N = 64 only",
        "fixed IoU: one Qwen–Gemini inversion at N = 64",
        fixed("iou"),
        DIFFERENCE,
        swapped=(PAPER_ORDER[0], PAPER_ORDER[1]),
    )


def _rank_claim(
    data: ReportData,
    metric: str,
    claim: str,
    paper: str,
    value: Callable[[PolygonScore | None], float],
    effect: float,
    swapped: tuple[str, str] | None,
) -> Finding:
    """Each budget's expected ordering (the reference by the mean over budgets, with the
    ``swapped`` pair exchanged at N = 64) must hold pair by adjacent pair, each beyond
    ``effect``; any pair reliably the other way by more than ``effect`` fails the claim."""
    result = rank_stability(data)[metric]
    if result.left_out or len(result.reference) < 2:
        needs = [f"{name} ({why})" for name, why in result.left_out.items()]
        return untestable(claim, paper, needs or ["≥ 2 configurations at every budget"])
    if swapped is not None and not set(swapped) <= set(result.reference):
        return untestable(claim, paper, [f"{'/'.join(swapped)}/base at every budget"])
    judged = [
        j
        for o in result.budgets
        for j in _budget_pairs(data, o.budget, result.reference, value, effect, swapped)
    ]
    held = sum(j.outcome == "holds" for j in judged)
    swaps = [f"{b} above {a} at N={o.budget}" for o in result.budgets for a, b in o.inversions]
    here = f"{held} of {len(judged)} pairs reliably in order; " + "; ".join(
        [f"{result.total_inversions} inversion(s) of the means", *swaps]
    )
    test = f"every budget's adjacent pairs paired Δ > {effect:g}, none inverted by more "
    test += "(expected " + (
        f"order: the reference, {swapped[0]}/{swapped[1]} exchanged at N={TOP})"
        if swapped
        else "order: the reference)"
    )
    return judge(claim, paper, here, judged, test)


def _budget_pairs(
    data: ReportData,
    budget: int,
    reference: Sequence[str],
    value: Callable[[PolygonScore | None], float],
    effect: float,
    swapped: tuple[str, str] | None,
) -> list[Judged]:
    """One budget's pairs against its expected order: every adjacent pair judged, and any
    other pair that is reliably inverted (a failure the neighbours may not show)."""
    expected = list(reference)
    if swapped is not None and budget == TOP:
        i, j = (expected.index(s) for s in swapped)
        expected[i], expected[j] = expected[j], expected[i]
    scores = {n: data.headline.polygons.get(Cell(n, "base", budget), {}) for n in expected}
    per = {n: {q: value(s) for q, s in scores[n].items()} for n in expected}
    out = []
    for a, b in combinations(expected, 2):
        c = paired_contrast(per[a], per[b])
        label = f"{a} > {b} at N={budget} {_contrast(c)}"
        if expected.index(b) == expected.index(a) + 1:
            key = pair_key(a, b, budget) if effect == DIFFERENCE else ""
            out.append(Judged(label, above(c, effect), key))
        elif below(c, effect).outcome == "holds":
            out.append(Judged(label, FAILS))
    return out


# -- shared -------------------------------------------------------------------------------------


def pooled_contrast(view: ViewScores, a: str, b: str) -> Contrast:
    return paired(pooled(view, a, "base"), pooled(view, b, "base"))


def _not_rescored(rescored: bool, unscored: Sequence[Unscored]) -> list[str]:
    """What a re-scored audit lacks: the re-scoring itself, or cells not (yet) re-scored."""
    if not rescored:
        return ["`groundbench rescore STORE`"]
    return [
        f"{u.cell.configuration}/base/N={u.cell.budget} "
        + (f"({u.answers} answers not re-scored)" if u.answers else "(nothing settled yet)")
        for u in unscored
    ]


def _rescored(data: ReportData, name: str, reference: str) -> dict[tuple[int, str], float]:
    """A configuration's base answers under ``reference``, in points, keyed (budget, qid):
    0 where no answer parsed (the fixed denominator)."""
    out: dict[tuple[int, str], float] = {}
    for cell in base_cells(data.headline, name):
        for q, v in _phase_values(data, reference, cell).items():
            out[(cell.budget, q)] = v
    return out


def _strongest_with_box(data: ReportData) -> tuple[str, dict[str, BoxScore | None]] | None:
    """The configuration with the highest pooled fixed IoU among those with a complete box
    cell and complete base cells (the paper's "strongest configuration"), with its box
    answers' scores."""
    view = data.headline
    ready = [
        name
        for name in data.configurations
        if Cell(name, "base", BOX) in view.grid
        and base_cells(view, name)
        and not missing_cells(view, [Cell(name, "base", BOX), *base_cells(view, name)])
    ]
    means = {
        name: summarise_cell(list(pooled(view, name, "base").values())).iou.fixed for name in ready
    }
    ranked = sorted((n for n in means if not math.isnan(means[n])), key=lambda n: -means[n])
    return (ranked[0], view.boxes.get(Cell(ranked[0], "base", BOX), {})) if ranked else None
