"""The main tables of the box benchmarks, from judged answers (PROTOCOL §10).

Each function takes one configuration's judged answers and returns the row that configuration
gets in the paper's main table, as ordered ``column → value`` pairs in percent:

- Ref-Adv (Table 7): Acc0.5, Acc0.75, Acc0.9, mAcc, and Acc0.5 per distractor group with its
  difference from the overall Acc0.5;
- GroundingME (main leaderboard): Acc@0.5 per L-1 dimension (Rejection: the share of answers
  that say absent) and the total over every sample;
- RefBench-PRO (Table 2): mAcc per perception and reasoning task, RejAcc on Reject, and the
  paper's means Acc_API, Acc_RC, Acc_p and Acc_o.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from scoring._boxes import BoxJudgement, BoxReader, accuracy_at, mean_accuracy

Row = dict[str, float]


@dataclass(frozen=True)
class JudgedQuestion:
    """One question of a box benchmark and the judged answer to it."""

    qid: str
    dimension: str  # Ref-Adv: its source; GroundingME: the L-1 task; RefBench-PRO: the task
    subdimension: str | None  # GroundingME's L-2 task
    distractors: int | None  # same-category others in the image, where the benchmark counts
    rejection: bool  # the right answer is "absent"
    judgement: BoxJudgement


# Ref-Adv's distractor groups (Ref-Adv-s, Table 6: 2–3, 4–6, ≥ 7).
DISTRACTOR_GROUPS: tuple[tuple[str, int, float], ...] = (
    ("2–3", 2, 3),
    ("4–6", 4, 6),
    ("≥7", 7, math.inf),
)
GROUNDINGME_DIMENSIONS = ("Discriminative", "Spatial", "Limited", "Rejection")
REFBENCH_PERCEPTION = ("attribute", "position", "interaction")
REFBENCH_REASONING = ("relation", "commonsense")
REFBENCH_REJECT = "reject"


def ref_adv_row(questions: Sequence[JudgedQuestion], reader: BoxReader) -> Row:
    """Ref-Adv's columns for one configuration."""
    judged = [q.judgement for q in questions]
    row: Row = {f"Acc{t:g}": accuracy_at(judged, t, reader.strict) for t in (0.5, 0.75, 0.9)}
    row["mAcc"] = mean_accuracy(judged, reader)
    for label, low, high in DISTRACTOR_GROUPS:
        group = [
            q.judgement
            for q in questions
            if q.distractors is not None and low <= q.distractors <= high
        ]
        row[f"{label} Acc0.5"] = accuracy_at(group, 0.5, reader.strict)
        row[f"{label} Δ"] = row[f"{label} Acc0.5"] - row["Acc0.5"]
    return row


def groundingme_row(questions: Sequence[JudgedQuestion], reader: BoxReader) -> Row:
    """GroundingME's columns: Acc@0.5 per L-1 dimension and over every sample."""
    row: Row = {}
    for dimension in GROUNDINGME_DIMENSIONS:
        row[dimension] = _percent(
            [q for q in questions if q.dimension == dimension], _correct(0.5, reader)
        )
    row["Total"] = _percent(list(questions), _correct(0.5, reader))
    return row


def groundingme_subdimensions(questions: Sequence[JudgedQuestion], reader: BoxReader) -> Row:
    """Acc@0.5 per L-2 task (``Dimension/Task``), for the paper's diagnosis."""
    keys = sorted({(q.dimension, q.subdimension or "") for q in questions})
    return {
        f"{d}/{s}" if s else d: _percent(
            [q for q in questions if (q.dimension, q.subdimension or "") == (d, s)],
            _correct(0.5, reader),
        )
        for d, s in keys
    }


def refbench_pro_row(questions: Sequence[JudgedQuestion], reader: BoxReader) -> Row:
    """RefBench-PRO's columns: mAcc per task, RejAcc, and its means of them."""

    def task(name: str) -> list[JudgedQuestion]:
        return [q for q in questions if q.dimension == name]

    row: Row = {}
    for name in REFBENCH_PERCEPTION + REFBENCH_REASONING:
        row[name] = mean_accuracy([q.judgement for q in task(name)], reader)
    row[REFBENCH_REJECT] = _percent(task(REFBENCH_REJECT), lambda q: q.judgement.says_absent)
    row["Acc_API"] = _mean(row[n] for n in REFBENCH_PERCEPTION)
    row["Acc_RC"] = _mean(row[n] for n in REFBENCH_REASONING)
    row["Acc_p"] = _mean(row[n] for n in REFBENCH_PERCEPTION + REFBENCH_REASONING)
    row["Acc_o"] = _mean(row[n] for n in (*REFBENCH_PERCEPTION, *REFBENCH_REASONING, "reject"))
    return row


def _correct(threshold: float, reader: BoxReader) -> Callable[[JudgedQuestion], bool]:
    """A rejection question is right when the answer says absent; any other at IoU τ."""

    def correct(q: JudgedQuestion) -> bool:
        if q.rejection:
            return q.judgement.says_absent
        return q.judgement.hit(threshold, reader.strict)

    return correct


def _percent(questions: Sequence[JudgedQuestion], right: Callable[[JudgedQuestion], bool]) -> float:
    if not questions:
        return math.nan
    return 100.0 * sum(right(q) for q in questions) / len(questions)


def _mean(values: Iterable[float]) -> float:
    """The mean; NaN when a value is (a task the run did not ask is not a zero)."""
    items = list(values)
    return sum(items) / len(items) if items else math.nan
