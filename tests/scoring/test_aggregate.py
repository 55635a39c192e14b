"""Aggregates of a cell and paired contrasts (PROTOCOL §7)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from scoring import (
    UNPARSEABLE,
    BoxScore,
    PolygonScore,
    control_scores,
    group_by,
    paired_contrast,
    per_question,
    summarise_box_cell,
    summarise_cell,
    unpaired_contrast,
)


def answer(
    iou: float, *, legal: bool = True, sel: bool = True, part: float | None = None
) -> PolygonScore:
    return PolygonScore(
        parseable=True,
        iou=iou,
        iou_part=iou if part is None else part,
        iou_union=iou,
        iou_cont=iou,
        legal=legal,
        legal_iou=iou if legal else 0.0,
        sel=sel,
        defect=None if legal else "self-intersecting",
    )


def test_a_hand_computed_cell() -> None:
    scores = [
        answer(0.8, part=0.7),
        answer(0.6, legal=False, part=0.5),
        answer(0.3, sel=False, part=0.3),
        UNPARSEABLE,
        None,  # no response at all: still in the fixed denominator
    ]
    cell = summarise_cell(scores, c_n=80.0)
    assert (cell.questions, cell.parseable, cell.parse_rate) == (5, 3, 60.0)
    assert cell.iou.fixed == pytest.approx(100 * 1.7 / 5)
    assert cell.iou.parseable == pytest.approx(100 * 1.7 / 3)
    assert cell.iou_p.fixed == pytest.approx(100 * 1.5 / 5)
    assert cell.iou_n.fixed == pytest.approx(100 * (100 * 1.5 / 5) / 80.0)
    assert cell.iou_n.parseable == pytest.approx(100 * (100 * 1.5 / 3) / 80.0)
    assert cell.acc[0.5].fixed == pytest.approx(40.0)
    assert cell.acc[0.5].parseable == pytest.approx(100 * 2 / 3)
    assert cell.acc[0.75].fixed == pytest.approx(20.0)
    assert cell.acc[0.9].fixed == 0.0
    assert cell.acc[0.25].fixed == pytest.approx(60.0)
    assert cell.legal_coverage.fixed == pytest.approx(40.0)
    assert cell.legal_coverage.parseable == pytest.approx(100 * 2 / 3)
    assert cell.legal_iou.fixed == pytest.approx(100 * 1.1 / 5)
    assert cell.sel == pytest.approx(40.0)
    assert cell.con == pytest.approx(70.0)


def test_acc_counts_an_iou_equal_to_the_threshold() -> None:
    assert summarise_cell([answer(0.5)]).acc[0.5].fixed == 100.0


def test_empty_and_unparseable_cells() -> None:
    cell = summarise_cell([UNPARSEABLE, UNPARSEABLE])
    assert cell.iou.fixed == 0.0 and math.isnan(cell.iou.parseable)
    assert math.isnan(cell.con) and math.isnan(cell.iou_n.fixed)
    empty = summarise_cell([])
    assert empty.questions == 0 and math.isnan(empty.iou.fixed)


def test_box_cell_and_its_controls() -> None:
    scores = [
        BoxScore(parseable=True, box_iou=0.9, control={8: answer(0.7)}),
        BoxScore(parseable=True, box_iou=0.4, control={8: answer(0.3)}),
        BoxScore(parseable=False, control={8: UNPARSEABLE}),
        None,
    ]
    cell = summarise_box_cell(scores)
    assert cell.parse_rate == 50.0
    assert cell.box_iou.fixed == pytest.approx(100 * 1.3 / 4)
    assert cell.acc[0.5].fixed == 25.0
    controls = summarise_cell(control_scores(scores, 8))
    assert controls.iou.fixed == pytest.approx(25.0)


def test_per_question_values_are_points_with_zero_for_no_answer() -> None:
    values = per_question({"a": answer(0.5), "b": UNPARSEABLE, "c": None})
    assert values == {"a": 50.0, "b": 0.0, "c": 0.0}
    assert per_question({"a": answer(0.5, legal=False)}, "legal") == {"a": 0.0}


def test_contrast_uses_the_exact_intersection_of_question_ids() -> None:
    a = {"q1": 50.0, "q2": 70.0, "q3": 10.0, "only-a": 1000.0}
    b = {"q1": 40.0, "q2": 50.0, "q3": 10.0, "only-b": -1000.0}
    c = paired_contrast(a, b)
    assert c.questions == 3
    assert c.delta == pytest.approx(10.0)
    assert 0.0 <= c.low <= c.delta <= c.high <= 20.0


def test_contrast_is_reproducible_and_order_free() -> None:
    rng = np.random.default_rng(1)
    a = {f"q{i}": float(v) for i, v in enumerate(rng.uniform(0, 100, 300))}
    b = {k: v - 5 + float(rng.normal(0, 10)) for k, v in a.items()}
    first = paired_contrast(a, b, seed=3)
    again = paired_contrast(dict(reversed(list(a.items()))), b, seed=3)
    assert first == again
    assert first.low < 5 < first.high  # the true shift lies in the interval
    assert first.high - first.low < 5  # and 300 questions pin it down to a few points


def test_contrast_with_nothing_in_common_is_nan() -> None:
    c = paired_contrast({"a": 1.0}, {"b": 1.0})
    assert c.questions == 0 and math.isnan(c.delta)


@given(st.dictionaries(st.integers(0, 50), st.floats(0, 100), min_size=1))
def test_a_cell_contrasted_with_itself_is_exactly_zero(values: dict[int, float]) -> None:
    c = paired_contrast(values, values, resamples=200)
    assert (c.delta, c.low, c.high) == (0.0, 0.0, 0.0)


def test_group_by_slices_a_cell() -> None:
    slices = group_by(
        {"a": answer(1.0), "b": None, "c": answer(0.0)}, {"a": "easy", "b": "hard", "c": "easy"}
    )
    assert {k: len(v) for k, v in slices.items()} == {"easy": 2, "hard": 1}


def test_an_unpaired_contrast_of_two_constant_groups_is_exact() -> None:
    c = unpaired_contrast([60.0, 60.0, 60.0], [40.0, 40.0])
    assert (c.questions, c.delta, c.low, c.high) == (5, 20.0, 20.0, 20.0)


def test_an_unpaired_contrast_resamples_each_group_on_its_own() -> None:
    # Two groups whose means differ by 10, each spread over ±20: the interval holds the
    # difference, lies inside the extreme resamples, and is the same for the same seed.
    a, b = [40.0, 80.0] * 20, [30.0, 70.0] * 25
    c = unpaired_contrast(a, b)
    assert c.delta == pytest.approx(10.0)
    assert -30.0 < c.low < 10.0 < c.high < 50.0
    assert unpaired_contrast(a, b) == c
    assert math.isnan(unpaired_contrast([], b).delta)


@given(st.permutations([float(v) for v in range(0, 100, 7)]), st.permutations([5.0, 9.0, 40.0]))
def test_an_unpaired_contrast_does_not_depend_on_the_order_of_its_values(
    a: list[float], b: list[float]
) -> None:
    # Table 5's groups come in the order a store returns its rows.
    assert unpaired_contrast(a, b) == unpaired_contrast(sorted(a), sorted(b))
