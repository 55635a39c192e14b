"""The paper's §4 findings as verdicts on a store: holds, does not hold, or not testable here.

Each claim is tested the same way whatever the store (decided, groundbench):

- a claim that one thing beats another is a paired contrast on the exact intersection of
  (budget, question) keys, in points under IoU2's fixed denominator, with its 95% bootstrap
  interval (PROTOCOL §7): it *holds* when the interval lies on the claimed side of 0;
- a claim of "no reliable difference" holds when the interval contains 0;
- an ordering claim holds when every adjacent pair of the claimed order is such a contrast;
- a claim about configurations or conditions the store lacks, or whose cells have unsettled
  questions (stopped or not sent yet), is *not testable here*, and the verdict names the
  cells it needs.

Claims that concern a condition grid (F3, F4) are tested on every configuration that ran the
conditions they need, and hold only if they hold for each.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import partial
from itertools import pairwise
from typing import Literal

from conditions import BOX
from runner.reports._data import Cell, ReportData, ViewScores
from runner.reports._ranks import rank_stability
from runner.reports._robustness import (
    Unscored,
    alternate_reference_figures,
    phase_audit_figures,
)
from runner.reports._slices import subdivision_contrasts
from runner.reports._tables import ReportTable, _contrast, _fmt, paired, pooled
from scoring import (
    BoxScore,
    Contrast,
    PolygonScore,
    control_scores,
    paired_contrast,
    peak,
    per_question,
    summarise_cell,
)

Verdict = Literal["holds", "does not hold", "not testable"]
PAPER_ORDER: tuple[str, ...] = ("gemini-high", "qwen-max", "doubao", "kimi")
"""The paper's configuration ordering (§4.2 F1), by its configuration names."""
TOP = 64  # the densest budget, where F2's collapse is claimed
BOUND = 1.1  # points: the paper's largest shift under an alternate reference (§4.3)


@dataclass(frozen=True)
class Finding:
    """One claim of the paper, its figures, this store's figures, and the verdict."""

    claim: str
    paper: str
    here: str
    verdict: Verdict
    test: str


def findings(data: ReportData) -> list[Finding]:
    """Every §4 claim tested on ``data``, in the paper's order."""
    return [claim(data) for claim in CLAIMS]


def findings_table(data: ReportData) -> ReportTable:
    """The findings as a table: claim, paper, this store [95% CI], verdict, test."""
    rows = tuple((f.claim, f.paper, f.here, f.verdict, f.test) for f in findings(data))
    return ReportTable(
        "findings",
        "Findings: the paper's §4 claims tested on this store (IoU2, fixed denominator)",
        ("Claim", "Paper", "This store [95% CI]", "Verdict", "Test"),
        rows,
        (
            "Δ are paired contrasts in points, an unparseable answer counting 0, on the exact "
            "intersection of (budget, question) keys (of questions within one budget, or for "
            "the box gap), with 95% bootstrap intervals",
            "each row's Test says what must hold: an interval above (or below) 0, one holding "
            "0 (no reliable difference), none above 0 (no reliable gain), or a shift within "
            "the paper's bound; orderings hold when every adjacent pair does",
            "not testable: the store lacks the named cells (absent), they have unsettled "
            "questions (incomplete: a rerun of `groundbench run` finishes them), or they are "
            "not re-scored (run `groundbench rescore STORE`)",
        ),
    )


# -- F1 -----------------------------------------------------------------------------------------


def f1_ordering(data: ReportData) -> Finding:
    """F1: Gemini > Qwen-max > Doubao > Kimi on pooled fixed IoU (base, all budgets)."""
    claim = "F1 ordering: " + " > ".join(PAPER_ORDER)
    paper = "pooled fixed IoU in that order"
    view = data.headline
    missing = _missing(view, [c for name in PAPER_ORDER for c in _base_cells(view, name)])
    absent = [name for name in PAPER_ORDER if not _base_cells(view, name)]
    if absent or missing:
        return _untestable(claim, paper, [*(f"{n}/base" for n in absent), *_named(view, missing)])
    steps = [(a, b, _pooled_contrast(view, a, b)) for a, b in pairwise(PAPER_ORDER)]
    here = "; ".join(f"{a} − {b} {_contrast(c)}" for a, b, c in steps)
    failed = [f"{a} > {b}" for a, b, c in steps if not c.low > 0]
    return _judged(claim, paper, here, failed, "each adjacent pair: pooled paired Δ > 0")


def f1_box_gap(data: ReportData) -> Finding:
    """F1: even the strongest configuration's polygons fall far short of its boxes."""
    claim = "F1 gap: box IoU > polygon IoU (strongest configuration with box answers)"
    paper = "box Acc@.5 near 90; pooled Gemini polygon IoU 57.7"
    view = data.headline
    strongest = _strongest_with_box(data)
    if strongest is None:
        return _untestable(claim, paper, [_NEEDS_BOX])
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
    return _judged(claim, paper, here, [] if c.low > 0 else [best], "paired Δ > 0 per question")


def f1_box_control(data: ReportData) -> Finding:
    """F1: direct polygons score like the box answer drawn as an N-gon (the matched control)."""
    claim = "F1 control: direct polygons ≈ the box-derived N-gon (same configuration)"
    paper = "pooled Gemini direct 57.7, box-derived 57.3"
    view = data.headline
    strongest = _strongest_with_box(data)
    if strongest is None:
        return _untestable(claim, paper, [_NEEDS_BOX])
    best, boxes = strongest
    direct = pooled(view, best, "base")
    qids = list(boxes)
    control: dict[tuple[int, str], PolygonScore | None] = {}
    for n in sorted({n for n, _ in direct}):
        scores = control_scores([boxes[q] for q in qids], n)
        control.update(zip([(n, q) for q in qids], scores, strict=True))
    c = paired(direct, control)
    here = f"{best}: direct − control {_contrast(c)}"
    holds = c.questions > 0 and c.low <= 0 <= c.high
    return _judged(claim, paper, here, [] if holds else [best], "paired Δ's interval holds 0")


# -- F2 -----------------------------------------------------------------------------------------


def f2_non_monotone(data: ReportData) -> Finding:
    """F2: IoU peaks at a moderate budget and falls from there to N = 64."""
    view = data.headline

    def check(name: str, cells: list[Cell]) -> tuple[str, bool]:
        curve = {c.budget: summarise_cell(_scores(view, c)).iou.fixed for c in cells}
        top = peak(curve).budget
        if top == TOP:  # no fall to test: the curve is highest at the densest budget
            return f"{name}: peak N={TOP}", False
        c = _cell_contrast(view, Cell(name, "base", top), Cell(name, "base", TOP))
        return f"{name}: peak N={top}, −{TOP} {_contrast(c)}", c.low > 0

    curves = [(n, _base_cells(view, n)) for n in data.configurations]
    return _verdict(
        data,
        "F2 non-monotone: IoU peaks below N = 64 and falls to it",
        "peaks at moderate N, falls at 64 (Gemini 37.7 at 64)",
        "peak N < 64; paired Δ(peak − 64) > 0",
        "base cells at ≥ 3 budgets incl. 64",
        [
            (name, cells, partial(check, name, cells))
            for name, cells in curves
            if _has_curve(view, name)
        ],
    )


def f2_legal_collapse(data: ReportData) -> Finding:
    """F2: legal-polygon coverage collapses at N = 64 (it falls from N = 32)."""
    view = data.headline

    def check(name: str, low: Cell, high: Cell) -> tuple[str, bool]:
        a = per_question(view.polygons.get(high, {}), "legal")
        c = paired_contrast(a, per_question(view.polygons.get(low, {}), "legal"))
        legal = summarise_cell(_scores(view, high)).legal_coverage.fixed
        return f"{name}: legal % at 64 {_fmt(legal)}, 64 − 32 {_contrast(c)}", c.high < 0

    pairs = [(n, Cell(n, "base", 32), Cell(n, "base", TOP)) for n in data.configurations]
    return _verdict(
        data,
        "F2 collapse: legal-polygon coverage falls from N = 32 to N = 64",
        "Gemini at 64: IoU 37.7, legal coverage/IoU 7.5 / 4.2",
        "paired Δ legal %(64 − 32) < 0",
        "base cells at N = 32 and 64",
        [
            (n, [lo, hi], partial(check, n, lo, hi))
            for n, lo, hi in pairs
            if lo in view.grid and hi in view.grid
        ],
    )


def f2_subdivision(data: ReportData) -> Finding:
    """F2: the fall from 32 to 64 persists where G_64 only subdivides G_32's edges."""
    claim = "F2 subdivision: IoU falls from 32 to 64 when extra vertices only subdivide edges"
    paper = "the decline persists on such questions"
    found = subdivision_contrasts(data)
    running = [f"{c}/base/N=32,64 (incomplete)" for c, s in found.items() if not s.complete]
    judged = {c: s.subdivision for c, s in found.items() if s.subdivision.questions}
    if running or not judged:
        return _untestable(claim, paper, running or ["base N=32 and 64 cells, parts ≤ 32 vertices"])
    parts = [f"{c}: 64 − 32 {_contrast(s.contrast)} ({s.questions} q)" for c, s in judged.items()]
    failed = [c for c, s in judged.items() if not s.contrast.high < 0]
    return _judged(claim, paper, "; ".join(parts), failed, "paired Δ(64 − 32) < 0, V ≤ 32")


def f2_phases(data: ReportData) -> Finding:
    """F2: the ordering and the high-budget reversal are the same under all eight phases.

    The reversal is judged for the configurations F2's own claim judges (at least three
    budgets, N = 64 among them)."""
    claim = "F2 phases: ordering and reversal hold under all 8 sampling phases"
    paper = "eight starting phases preserve both"
    audit = phase_audit_figures(data)
    running = [p.cell for p in audit.cells if not p.complete]
    gaps = _not_rescored(audit.rescored, audit.unscored) + _named(data.headline, running)
    curves = {n for n in data.configurations if _has_curve(data.headline, n)}
    reversals = [r for r in audit.reversals if r.configuration in curves]
    if gaps or audit.ordering_holds is None or not reversals:
        return _untestable(claim, paper, gaps or [_NEEDS_CURVES])
    changed = [
        f"N={o.budget} in phase {o.changed_phases[0]}" for o in audit.orderings if not o.same
    ]
    broken = [f"{r.configuration} in phase {r.failing_phases[0]}" for r in reversals if not r.holds]
    spread = max((c.spread for c in audit.cells), default=math.nan)
    here = (
        f"ordering {'same in all 8' if not changed else 'changes at ' + ', '.join(changed)}; "
        f"reversal {'in all 8' if not broken else 'fails for ' + ', '.join(broken)}; "
        f"largest spread {_fmt(spread)}"
    )
    test = "no inversion at any N in any phase; a reversal (peak < 64, drop > 0) in every phase"
    return _judged(claim, paper, here, [*changed, *broken], test)


def alternate_references(data: ReportData) -> Finding:
    """§4.3: other references move five-budget means by at most 1.1 points, order unchanged."""
    claim = "§4.3 references: part, union, continuous shift means ≤ 1.1, same ordering"
    paper = "shifts ≤ 1.1 points, ordering unchanged"
    figures = alternate_reference_figures(data)
    running = [f"{m.configuration}/base (incomplete)" for m in figures.configurations
               if not m.complete]  # fmt: skip
    gaps = _not_rescored(figures.rescored, figures.unscored) + running
    shift = figures.largest_shift
    if gaps or shift is None or figures.ordering_holds is None:
        return _untestable(claim, paper, gaps or ["≥ 2 configurations with base cells"])
    name = shift.configuration
    c = paired_contrast(_rescored(data, name, shift.reference), _rescored(data, name, "phase0"))
    swaps = [f"{a}/{b} under {r}" for r, pairs in figures.swaps.items() for a, b in pairs]
    here = (
        f"largest shift {shift.configuration}, {shift.reference} {_contrast(c)}; "
        f"ordering {'unchanged' if not swaps else 'inverted: ' + ', '.join(swaps)}"
    )
    failed = [*swaps, *([] if c.low >= -BOUND and c.high <= BOUND else [shift.configuration])]
    return _judged(claim, paper, here, failed, f"no inversion; paired shift within ±{BOUND}")


def rank_stability_claim(data: ReportData) -> Finding:
    """§4.2: Acc@.5 keeps one ordering across every budget (fixed IoU may invert at 64)."""
    claim = "Rank stability: Acc@.5 keeps one ordering across all budgets"
    paper = "Acc@.5: one ordering; fixed IoU: one Qwen–Gemini inversion at N = 64"
    ranks = rank_stability(data)
    acc, iou = ranks["Acc@0.5"], ranks["IoU"]
    if acc.left_out or len(acc.reference) < 2:
        needs = [f"{name} ({why})" for name, why in acc.left_out.items()]
        return _untestable(claim, paper, needs or ["≥ 2 configurations at every budget"])
    reliable = [
        f"{b} over {a} at N={o.budget} {_contrast(c)}"
        for o in acc.budgets
        for a, b in o.inversions
        if (c := _accuracy_contrast(data, o.budget, b, a)).low > 0
    ]
    here = (
        f"Acc@.5: {acc.total_inversions} inversion(s), {len(reliable)} reliable; "
        f"IoU: {iou.total_inversions} inversion(s)"
        + "".join(f"; {b} above {a} at N={o.budget}" for o in iou.budgets for a, b in o.inversions)
    )
    test = "no Acc@.5 inversion whose paired Δ(correct@.5) is > 0"
    return _judged(claim, paper, here, reliable, test)


# -- F3 -----------------------------------------------------------------------------------------


def f3_reasoning(data: ReportData) -> Finding:
    """F3: the configuration's own thinking beats thinking-off at every budget."""
    view = data.headline

    def check(name: str, pairs: list[tuple[Cell, Cell]]) -> tuple[str, bool]:
        contrasts = [(a.budget, _cell_contrast(view, a, b)) for a, b in pairs]
        text = f"{name}: " + ", ".join(f"N={n} {_contrast(c)}" for n, c in contrasts)
        return text, all(c.low > 0 for _, c in contrasts)

    checks = []
    for name in _running(data, ("thinking-off",)):
        pairs = [(c, Cell(name, "thinking-off", c.budget)) for c in _base_cells(view, name)]
        pairs = [(a, b) for a, b in pairs if b in view.grid]
        checks.append((name, [c for p in pairs for c in p], partial(check, name, pairs)))
    return _verdict(
        data,
        "F3 reasoning: thinking on beats thinking-off at every budget",
        "Qwen max-thinking > thinking-off at every N",
        "paired Δ(base − off) > 0 at each N",
        "base and thinking-off cells",
        [c for c in checks if c[1]],
    )


def f3_evidence(data: ReportData) -> Finding:
    """F3: removing the image costs more than halving it, which costs more than greyscale."""
    order = ("no-image", "half-res", "greyscale")
    claim = "F3 evidence ≫ resolution ≫ colour"
    paper = "no-image ≫ half-res ≫ greyscale (losses vs base)"
    return _ordered_conditions(data, claim, paper, order)


# -- F4 -----------------------------------------------------------------------------------------


def f4_spatial_over_colour(data: ReportData) -> Finding:
    """F4: a wrong spatial hint hurts more than a wrong colour."""
    claim = "F4 wrong spatial hurts more than wrong colour"
    paper = "spatial-wrong loss > colour-wrong loss"
    return _ordered_conditions(data, claim, paper, ("cue-spatial-wrong", "cue-colour-wrong"))


def f4_sub_additive(data: ReportData) -> Finding:
    """F4: both wrong hints together cost less than the two single losses added up."""
    needed = ("base", "cue-spatial-wrong", "cue-colour-wrong", "cue-both-wrong")
    view = data.headline

    def check(name: str) -> tuple[str, bool]:
        base, spatial, colour, both = (per_question(pooled(view, name, c)) for c in needed)
        keys = base.keys() & spatial.keys() & colour.keys() & both.keys()
        # (both − base) − (spatial − base) − (colour − base), per (budget, question).
        excess = {k: both[k] - spatial[k] - colour[k] + base[k] for k in keys}
        c = paired_contrast(excess, dict.fromkeys(keys, 0.0))
        return f"{name}: {_contrast(c)}", c.low > 0

    return _verdict(
        data,
        "F4 wrong cues combine sub-additively",
        "both-wrong loss < spatial-wrong + colour-wrong losses",
        "paired interaction > 0",
        f"cells of {', '.join(needed)}",
        [(n, _cells_of(view, n, needed), partial(check, n)) for n in _running(data, needed)],
    )


def f4_truthful_cues(data: ReportData) -> Finding:
    """F4: truthful hints give no reliable gain over base."""
    cues = ("cue-spatial-true", "cue-colour-true")
    view = data.headline

    def check(name: str, cue: str) -> tuple[str, bool]:
        c = paired(pooled(view, name, cue), pooled(view, name, "base"))
        return f"{name} {cue} − base {_contrast(c)}", not c.low > 0

    return _verdict(
        data,
        "F4 truthful cues: no reliable gain",
        "spatial-true and colour-true: no reliable gain",
        "paired Δ(cue − base) not > 0",
        "base and cue-*-true cells",
        [
            (f"{n} {cue}", _cells_of(view, n, ("base", cue)), partial(check, n, cue))
            for n in _running(data, cues)
            for cue in cues
        ],
    )


# -- shared tests -------------------------------------------------------------------------------


def _ordered_conditions(data: ReportData, claim: str, paper: str, order: Sequence[str]) -> Finding:
    """Each condition of ``order`` loses more than the next: paired Δ(next − this) > 0."""
    view = data.headline

    def check(name: str) -> tuple[str, bool]:
        steps = [
            (f"{b} − {a}", paired(pooled(view, name, b), pooled(view, name, a)))
            for a, b in pairwise(order)
        ]
        text = f"{name}: " + ", ".join(f"{what} {_contrast(c)}" for what, c in steps)
        return text, all(c.low > 0 for _, c in steps)

    return _verdict(
        data,
        claim,
        paper,
        "paired Δ between neighbours > 0",
        f"cells of {', '.join(order)}",
        [(n, _cells_of(view, n, order), partial(check, n)) for n in _running(data, order)],
    )


Check = tuple[str, Sequence[Cell], Callable[[], tuple[str, bool]]]
"""One test of a claim: what a failure names, the cells it needs, and the test itself (this
store's figures as text, and whether the claim holds there)."""


def _verdict(
    data: ReportData, claim: str, paper: str, test: str, needs: str, checks: Iterable[Check]
) -> Finding:
    """Run every check whose cells are complete; any cell absent or running makes the claim
    not testable (and is named), as does having nothing to check (``needs`` says what)."""
    view = data.headline
    parts: list[str] = []
    failed: list[str] = []
    missing: list[Cell] = []
    for label, cells, run in checks:
        gaps = _missing(view, cells)
        missing += gaps
        if gaps:
            continue
        text, holds = run()
        parts.append(text)
        if not holds:
            failed.append(label)
    if missing or not parts:
        return _untestable(claim, paper, _named(view, missing) or [needs])
    return _judged(claim, paper, "; ".join(parts), failed, test)


def _judged(claim: str, paper: str, here: str, failed: Sequence[str], test: str) -> Finding:
    if failed:
        return Finding(claim, paper, here, "does not hold", f"{test}; fails: {', '.join(failed)}")
    return Finding(claim, paper, here, "holds", test)


def _untestable(claim: str, paper: str, needs: Iterable[str]) -> Finding:
    return Finding(claim, paper, "—", "not testable", "needs " + ", ".join(needs))


# -- cells ----------------------------------------------------------------------------------------


def _base_cells(view: ViewScores, name: str) -> list[Cell]:
    return _condition_cells(view, name, "base")


def _condition_cells(view: ViewScores, name: str, condition: str) -> list[Cell]:
    """The polygon cells of a configuration and condition, by budget."""
    return sorted(
        (
            c
            for c in view.grid
            if c.configuration == name and c.condition == condition and c.budget != BOX
        ),
        key=lambda c: c.budget,
    )


def _cells_of(view: ViewScores, name: str, conditions: Iterable[str]) -> list[Cell]:
    """The polygon cells of a configuration under each of ``conditions``."""
    return [c for condition in conditions for c in _condition_cells(view, name, condition)]


def _missing(view: ViewScores, cells: Iterable[Cell]) -> list[Cell]:
    """Cells absent from the grid or with unsettled questions (incomplete)."""
    return [c for c in cells if c not in view.grid or not view.complete(c)]


def _named(view: ViewScores, cells: Iterable[Cell]) -> list[str]:
    """``cfg/condition/N=n``, each marked absent (not in the grid) or running (incomplete)."""
    return [
        f"{c.configuration}/{c.condition}/N={c.budget} "
        + ("(absent)" if c not in view.grid else "(incomplete)")
        for c in dict.fromkeys(cells)
    ]


def _running(data: ReportData, conditions: Iterable[str]) -> list[str]:
    """Configurations whose grid has every one of ``conditions`` (and base)."""
    wanted = {"base", *conditions}
    return [n for n in data.configurations if wanted <= set(data.conditions_of(n))]


def _scores(view: ViewScores, cell: Cell) -> list[PolygonScore | None]:
    return list(view.polygons.get(cell, {}).values())


def _cell_contrast(view: ViewScores, a: Cell, b: Cell) -> Contrast:
    """Paired Δ(a − b) of fixed IoU on the questions both cells settled."""
    return paired_contrast(
        per_question(view.polygons.get(a, {})), per_question(view.polygons.get(b, {}))
    )


def _pooled_contrast(view: ViewScores, a: str, b: str) -> Contrast:
    return paired(pooled(view, a, "base"), pooled(view, b, "base"))


_NEEDS_CURVES = "≥ 2 configurations, one with base cells at ≥ 3 budgets incl. N = 64"


def _has_curve(view: ViewScores, name: str) -> bool:
    """The configuration has a budget curve F2 can judge: ≥ 3 budgets, N = 64 among them."""
    cells = _base_cells(view, name)
    return len(cells) >= 3 and Cell(name, "base", TOP) in cells


def _not_rescored(rescored: bool, unscored: Iterable[Unscored]) -> list[str]:
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
    for cell in _base_cells(data.headline, name):
        ious = data.rescored.ious.get(reference, {}).get(cell, {})
        for q, score in data.headline.polygons.get(cell, {}).items():
            parsed = score is not None and score.parseable
            out[(cell.budget, q)] = 100.0 * ious[q] if parsed else 0.0
    return out


def _accuracy_contrast(data: ReportData, budget: int, a: str, b: str) -> Contrast:
    """Paired Δ(a − b) of correct@.5 (100 or 0 per question, 0 if unparseable) at ``budget``."""

    def correct(name: str) -> dict[str, float]:
        scores = data.headline.polygons.get(Cell(name, "base", budget), {})
        return {
            q: 100.0 if s is not None and s.parseable and s.iou >= 0.5 else 0.0
            for q, s in scores.items()
        }

    return paired_contrast(correct(a), correct(b))


_NEEDS_BOX = "a configuration with complete base/box and base/N cells"


def _strongest_with_box(data: ReportData) -> tuple[str, dict[str, BoxScore | None]] | None:
    """The configuration with the highest pooled fixed IoU among those with a complete box
    cell and complete base cells (the paper's "strongest configuration"), with its box
    answers' scores."""
    view = data.headline
    ready = [
        name
        for name in data.configurations
        if Cell(name, "base", BOX) in view.grid
        and _base_cells(view, name)
        and not _missing(view, [Cell(name, "base", BOX), *_base_cells(view, name)])
    ]
    means = {
        name: summarise_cell(list(pooled(view, name, "base").values())).iou.fixed for name in ready
    }
    ranked = sorted((n for n in means if not math.isnan(means[n])), key=lambda n: -means[n])
    return (ranked[0], view.boxes.get(Cell(ranked[0], "base", BOX), {})) if ranked else None


CLAIMS: tuple[Callable[[ReportData], Finding], ...] = (
    f1_ordering,
    f1_box_gap,
    f1_box_control,
    f2_non_monotone,
    f2_legal_collapse,
    f2_subdivision,
    f2_phases,
    alternate_references,
    rank_stability_claim,
    f3_reasoning,
    f3_evidence,
    f4_spatial_over_colour,
    f4_sub_additive,
    f4_truthful_cues,
)
