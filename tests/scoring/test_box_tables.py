"""Each box benchmark's main-table row, on hand-made judged answers computed by hand."""

from __future__ import annotations

import math

import pytest

from scoring import (
    BOX_READERS,
    BoxJudgement,
    JudgedQuestion,
    groundingme_row,
    groundingme_subdimensions,
    ref_adv_row,
    refbench_pro_row,
)


def _q(
    iou: float,
    dimension: str = "d",
    *,
    distractors: int | None = None,
    rejection: bool = False,
    absent: bool = False,
    sub: str | None = None,
) -> JudgedQuestion:
    box = None if absent else (0.0, 0.0, 1.0, 1.0)
    return JudgedQuestion(
        "q", dimension, sub, distractors, rejection, BoxJudgement(box, absent, iou)
    )


def test_ref_adv_row_has_each_threshold_macc_and_distractor_groups() -> None:
    questions = [
        _q(0.95, distractors=2), _q(0.8, distractors=3), _q(0.6, distractors=5),
        _q(0.3, distractors=9),
    ]  # fmt: skip
    row = ref_adv_row(questions, BOX_READERS["ref-adv"])
    assert row["Acc0.5"] == 75.0 and row["Acc0.75"] == 50.0 and row["Acc0.9"] == 25.0
    # Thresholds 0.5 … 0.95: hits per question 10, 7 (0.5–0.8), 3 (0.5–0.6), 0 → 20 of 40.
    assert row["mAcc"] == pytest.approx(50.0)
    assert row["2–3 Acc0.5"] == 100.0 and row["2–3 Δ"] == 25.0
    assert row["4–6 Acc0.5"] == 100.0 and row["≥7 Acc0.5"] == 0.0 and row["≥7 Δ"] == -75.0


def test_groundingme_counts_a_rejection_right_when_the_answer_says_absent() -> None:
    questions = [
        _q(0.7, "Discriminative", sub="Appearance"), _q(0.2, "Discriminative", sub="Text"),
        _q(0.5, "Spatial", sub="Counting"), _q(0.9, "Limited", sub="Small"),
        _q(0.0, "Rejection", rejection=True, absent=True, sub="State"),
        _q(0.0, "Rejection", rejection=True, absent=False, sub="State"),
    ]  # fmt: skip
    row = groundingme_row(questions, BOX_READERS["groundingme"])
    assert row == {
        "Discriminative": 50.0, "Spatial": 100.0, "Limited": 100.0, "Rejection": 50.0,
        "Total": pytest.approx(400 / 6),
    }  # fmt: skip
    subs = groundingme_subdimensions(questions, BOX_READERS["groundingme"])
    assert subs["Discriminative/Appearance"] == 100.0 and subs["Rejection/State"] == 50.0


def test_refbench_pro_row_takes_the_papers_means() -> None:
    reader = BOX_READERS["refbench-pro"]  # mAcc over 0.5 … 0.9: nine thresholds
    questions = [
        _q(1.0, "attribute"), _q(0.0, "position"), _q(0.72, "interaction"),
        _q(0.5, "relation"), _q(0.9, "commonsense"),
        _q(0.0, "reject", rejection=True, absent=True), _q(0.0, "reject", rejection=True),
    ]  # fmt: skip
    row = refbench_pro_row(questions, reader)
    per_task = {"attribute": 100.0, "position": 0.0, "interaction": 500 / 9,
                "relation": 100 / 9, "commonsense": 100.0, "reject": 50.0}  # fmt: skip
    for task, value in per_task.items():
        assert row[task] == pytest.approx(value), task
    assert row["Acc_API"] == pytest.approx((100 + 0 + 500 / 9) / 3)
    assert row["Acc_RC"] == pytest.approx((100 / 9 + 100) / 2)
    assert row["Acc_p"] == pytest.approx((100 + 0 + 500 / 9 + 100 / 9 + 100) / 5)
    assert row["Acc_o"] == pytest.approx((100 + 0 + 500 / 9 + 100 / 9 + 100 + 50) / 6)


def test_a_task_not_asked_is_not_a_zero() -> None:
    row = refbench_pro_row([_q(1.0, "attribute")], BOX_READERS["refbench-pro"])
    assert row["attribute"] == 100.0 and math.isnan(row["position"]) and math.isnan(row["Acc_o"])
