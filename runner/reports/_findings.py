"""The paper's §1 and §4 claims as verdicts on a store: holds, does not hold, not testable
at this size, or not testable here.

Each claim is tested the same way whatever the store (decided, groundbench; PROTOCOL §7 lists
every claim with its test):

- a claim rests on paired contrasts on the exact intersection of (budget, question) keys, in
  points under IoU2's fixed denominator, each with its 95% bootstrap interval (PROTOCOL §7);
- each contrast *holds* when its interval lies on the claimed side (of 0, or of the ±2-point
  margin for "≈", "no reliable gain" and "second-order"), *fails* when it lies wholly on the
  other side, and is *open* otherwise (:mod:`runner.reports._verdicts`);
- a claim holds when all its contrasts hold, does not hold when any fails, and is *not
  testable at this size* when some stay open: absence of evidence is no verdict;
- a claim about configurations or conditions the store lacks, or whose cells have unsettled
  questions (stopped or not sent yet), is *not testable*, and the verdict names the cells.
"""

from __future__ import annotations

from collections.abc import Callable

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
from runner.reports._verdicts import MARGIN, PAPER_ORDER, Finding, Verdict

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
    """The findings as a table: claim, paper, this store [95% CI], verdict, test."""
    rows = tuple((f.claim, f.paper, f.here, f.verdict, f.test) for f in findings(data))
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
            "each contrast holds when its interval lies on the claimed side (of 0, or within "
            f"the ±{MARGIN:g}-point margin for ≈, no reliable gain and second-order), fails when "
            "it lies wholly on the other side; a claim holds when all hold, does not hold when "
            "any fails, and is not testable at this size when an interval holds the boundary",
            "not testable: the store lacks the named cells (absent), they have unsettled "
            "questions (incomplete: a rerun of `groundbench run` finishes them), or they are "
            "not re-scored (run `groundbench rescore STORE`)",
        ),
    )
