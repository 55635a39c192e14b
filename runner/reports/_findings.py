"""The paper's §1 and §4 claims as verdicts on a store: holds, does not hold, not testable
at this size, or not testable here.

Each claim is tested the same way whatever the store (decided, groundbench; PROTOCOL §7 lists
every claim with its test and its smallest effect of interest):

- a claim rests on paired contrasts on the exact intersection of (budget, question) keys, in
  points under IoU2's fixed denominator, each with its 95% bootstrap interval (PROTOCOL §7);
- each contrast *holds* when its interval lies beyond the claim's smallest effect of interest
  (or inside the ±2-point margin of an "≈"), *fails* when it lies wholly short of it (or
  wholly outside the margin), and is *open* otherwise (:mod:`runner.reports._verdicts`);
- a claim holds when all its contrasts hold, does not hold when any fails, and is *not
  testable at this size* when some stay open, saying about how many questions would decide
  it; an "≈" on answers scored alike on every question tested nothing (*not testable*);
- a claim about configurations or conditions the store lacks, or whose cells have unsettled
  questions (stopped or not sent yet), is *not testable*, and the verdict names the cells.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from runner.reports._claims_ablation import (
    f3_evidence,
    f3_largest,
    f3_no_image,
    f3_reasoning,
    f3_second_order,
    f4_spatial_over_colour,
    f4_sub_additive,
    f4_truthful_cues,
    table4_selection,
    table5_difficulty,
)
from runner.reports._claims_main import (
    alternate_references,
    f1_box_control,
    f1_box_gap,
    f1_ordering,
    f1_thresholds,
    f2_legal_collapse,
    f2_non_monotone,
    f2_phases,
    f2_subdivision,
    rank_stability_accuracy,
    rank_stability_iou,
)
from runner.reports._data import ReportData
from runner.reports._tables import ReportTable
from runner.reports._verdicts import (
    DECIDES_AT_MOST,
    DIFFERENCE,
    LARGE,
    PAPER_ORDER,
    RATIO,
    SHARE,
    Finding,
    Verdict,
)

__all__ = ["CLAIMS", "PAPER_ORDER", "Finding", "Verdict", "findings", "findings_table"]

CLAIMS: tuple[Callable[[ReportData], Finding], ...] = (
    f1_ordering,
    f1_box_gap,
    f1_box_control,
    f1_thresholds,
    f2_non_monotone,
    f2_legal_collapse,
    f2_subdivision,
    f2_phases,
    rank_stability_accuracy,
    rank_stability_iou,
    f3_reasoning,
    f3_largest,
    f3_no_image,
    f3_evidence,
    f3_second_order,
    f4_spatial_over_colour,
    f4_sub_additive,
    f4_truthful_cues,
    table4_selection,
    table5_difficulty,
    alternate_references,
)
"""Every claim of the paper's §1 and §4, in the paper's order."""


def findings(data: ReportData) -> list[Finding]:
    """Every claim tested on ``data``, in the paper's order."""
    return [claim(data) for claim in CLAIMS]


def findings_table(data: ReportData) -> ReportTable:
    """The findings as a table: claim, paper, this store [95% CI], verdict, test (with what
    would decide an open claim, and the claims it shares a contrast with)."""
    found = findings(data)
    questions = max((len(s) for s in data.headline.polygons.values()), default=0)
    rows = tuple((f.claim, f.paper, f.here, f.verdict, _test(f, found, questions)) for f in found)
    return ReportTable(
        "findings",
        "Findings: the paper's §1 and §4 claims tested on this store (IoU2, fixed denominator)",
        ("Claim", "Paper", "This store [95% CI]", "Verdict", "Test"),
        rows,
        (
            "Δ are paired contrasts in points, an unparseable answer counting 0, on the exact "
            "intersection of (budget, question) keys (of questions within one budget, or for "
            "the box gap; Table 5's difficulty steps compare different questions, unpaired), "
            "with 95% bootstrap intervals",
            "each contrast is read against its smallest effect of interest, fixed in PROTOCOL "
            f"§7 from the paper's numbers: {DIFFERENCE:g} points of IoU (and the ±{DIFFERENCE:g} "
            f"margin of ≈, second-order and no reliable gain), {SHARE:g} points of a share of "
            f"questions, {LARGE:g} for a collapse or a large gap, a factor {RATIO:g} for ≫ and "
            "comparably; it holds when its interval lies beyond the effect, fails when it lies "
            "wholly short of it (an absent effect fails), and is open otherwise; a claim holds "
            "when all hold, does not hold when any fails, and is not testable at this size when "
            "an interval holds the boundary (the test says about how many questions would "
            "decide it, from this store's intervals)",
            "not testable: the store lacks the named cells (absent), they have unsettled "
            "questions (incomplete: a rerun of `groundbench run` finishes them), they are "
            "not re-scored (run `groundbench rescore STORE`), or an ≈ compared answers scored "
            "alike on every question (nothing was tested)",
        ),
    )


def _test(f: Finding, found: Sequence[Finding], questions: int) -> str:
    """A finding's test, with what would decide it and the claims sharing its contrasts."""
    text = f.test
    if f.scale is not None and questions:
        text += f"; {decided_by(f.scale, questions)}"
    shared = [g.claim.split(":")[0] for g in found if g is not f and g.keys & f.keys]
    if shared:
        text += f"; shares contrasts with {', '.join(shared)}"
    return text


def decided_by(scale: float, questions: int) -> str:
    """About how many questions would decide an open claim, from this store's ``questions``.

    >>> decided_by(4.2, 300)
    'about 1,300 questions would decide it (this store: 300)'
    >>> decided_by(1e9, 300)
    'more than 30,000 questions would decide it: its estimate sits on the boundary'
    """
    if math.isnan(scale):
        return "no questions in common to measure it on"
    if scale > DECIDES_AT_MOST:
        most = round(DECIDES_AT_MOST * questions)
        return f"more than {most:,} questions would decide it: its estimate sits on the boundary"
    needed = scale * questions
    rounded = float(f"{needed:.2g}")
    return f"about {rounded:,.0f} questions would decide it (this store: {questions:,})"
