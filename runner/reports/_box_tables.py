"""Each box benchmark's main table, one row per configuration and reasoning setting (§10).

The columns are the papers' own: Ref-Adv's Table 7 (Acc0.5, Acc0.75, Acc0.9, mAcc, Acc0.5 of
the 4–6 and ≥ 7 distractor groups with their difference from the overall), GroundingME's
leaderboard (Acc@0.5 per L-1 dimension and the total), RefBench-PRO's Table 2 (Acc_p, Acc_o,
the perception tasks, Acc_API, the reasoning tasks, Reject, Acc_RC). Values are percentages.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from conditions import Benchmark, Reasoning
from runner.reports._tables import ReportTable
from scoring import (
    BOX_PROTOCOLS,
    JudgedQuestion,
    groundingme_row,
    ref_adv_row,
    refbench_pro_row,
)


@dataclass(frozen=True)
class BoxRun:
    """One configuration's judged answers under one reasoning setting."""

    configuration: str
    reasoning: Reasoning
    questions: Sequence[JudgedQuestion]


# (column title, key in the scoring row) per benchmark, in the paper's order.
_COLUMNS: dict[Benchmark, tuple[tuple[str, str], ...]] = {
    "ref-adv": (("Acc0.5", "Acc0.5"), ("Acc0.75", "Acc0.75"), ("Acc0.9", "Acc0.9"),
                ("mAcc", "mAcc"), ("4–6", "4–6 Acc0.5"), ("Δ", "4–6 Δ"),
                ("≥7", "≥7 Acc0.5"), ("Δ ", "≥7 Δ")),
    "groundingme": (("Discriminative", "Discriminative"), ("Spatial", "Spatial"),
                    ("Limited", "Limited"), ("Rejection", "Rejection"), ("Total", "Total")),
    "refbench-pro": (("Acc_p", "Acc_p"), ("Acc_o", "Acc_o"), ("Attribute", "attribute"),
                     ("Position", "position"), ("Interaction", "interaction"),
                     ("Acc_API", "Acc_API"), ("Relation", "relation"),
                     ("Commonsense", "commonsense"), ("Reject", "reject"), ("Acc_RC", "Acc_RC")),
}  # fmt: skip
_TITLES: dict[Benchmark, str] = {
    "ref-adv": "Ref-Adv: accuracy at IoU 0.5 / 0.75 / 0.9, mAcc, and Acc0.5 by distractors",
    "groundingme": "GroundingME: Acc@0.5 per dimension (Rejection: answers saying absent)",
    "refbench-pro": "RefBench-PRO: mAcc per task (0.5:0.05:0.9), RejAcc, and their means",
}
_ROWS = {"ref-adv": ref_adv_row, "groundingme": groundingme_row, "refbench-pro": refbench_pro_row}


def box_benchmark_table(benchmark: Benchmark, runs: Sequence[BoxRun]) -> ReportTable:
    """``benchmark``'s main table over ``runs``, read by the benchmark's own protocol."""
    protocol = BOX_PROTOCOLS[benchmark]
    columns = _COLUMNS[benchmark]
    rows = []
    for run in runs:
        values = _ROWS[benchmark](run.questions, protocol)
        cot = "✓" if run.reasoning == "cot" else "✗"
        rows.append((run.configuration, cot, *(_number(values[key], key) for _, key in columns)))
    return ReportTable(
        name=f"box-{benchmark}",
        title=_TITLES[benchmark],
        columns=("Model", "CoT?", *(title.strip() for title, _ in columns)),
        rows=tuple(rows),
        notes=(
            f"Answers read as {benchmark}'s released evaluation code reads them "
            "(PROTOCOL §10); — where the run asked no such question.",
        ),
    )


def _number(value: float, key: str) -> str:
    if math.isnan(value):
        return "—"
    return f"{value:+.1f}" if key.endswith("Δ") else f"{value:.1f}"
