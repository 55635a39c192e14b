"""How one contrast is read against its smallest effect of interest: holds, fails, open, or
identical (an equivalence on answers scored alike)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runner.reports._findings import decided_by
from runner.reports._verdicts import (
    FAILS,
    Judged,
    Reading,
    above,
    below,
    judge,
    within,
)
from scoring import Contrast, paired_contrast


def interval(low: float, high: float) -> Contrast:
    return Contrast(questions=10, delta=(low + high) / 2, low=low, high=high)


@pytest.mark.parametrize(
    ("low", "high", "expected"),
    [
        (2.1, 5.0, "holds"),  # wholly beyond the effect of 2
        (0.1, 3.0, "open"),  # above 0, but perhaps short of the effect
        (0.1, 1.9, "fails"),  # reliably above 0, and reliably short of the effect
        (-3.0, 0.0, "fails"),
        (0.0, 0.0, "fails"),  # an absent effect, measured exactly
        (-1.0, 3.0, "open"),
    ],
)
def test_above_holds_beyond_the_effect_and_fails_short_of_it(
    low: float, high: float, expected: str
) -> None:
    assert above(interval(low, high), 2.0).outcome == expected


@pytest.mark.parametrize(
    ("low", "high", "expected"),
    [(-13.0, -10.5, "holds"), (-9.0, -2.0, "fails"), (0.0, 2.0, "fails"), (-12.0, -8.0, "open")],
)
def test_below_is_a_fall_of_at_least_the_effect(low: float, high: float, expected: str) -> None:
    assert below(interval(low, high), 10.0).outcome == expected


@pytest.mark.parametrize(
    ("low", "high", "expected"),
    [
        (-1.9, 1.9, "holds"),  # inside the ±2 margin: equivalent
        (-2.0, 2.0, "holds"),
        (2.1, 4.0, "fails"),  # wholly beyond the margin: a real difference
        (-5.0, -2.5, "fails"),  # a real harm fails "no reliable gain" too
        (0.5, 2.5, "open"),  # reliably above 0, but perhaps within the margin
        (-3.0, 3.0, "open"),  # too wide to tell
    ],
)
def test_within_is_an_equivalence_test_with_a_margin(
    low: float, high: float, expected: str
) -> None:
    assert within(interval(low, high)).outcome == expected


def test_an_equivalence_on_identical_scores_tests_nothing() -> None:
    same = {q: float(i % 7) for i, q in enumerate("abcdefghij")}
    c = paired_contrast(same, dict(same))
    assert c.alike
    assert within(c).outcome == "identical"
    assert within(c, flags=True).outcome == "holds"  # two models agreeing on 0/100 flags
    assert above(c, 2.0).outcome == "fails"  # a directional claim on no effect fails


@given(st.lists(st.floats(-50, 50, allow_nan=False), min_size=1, max_size=30))
def test_only_differences_all_zero_read_as_identical(diffs: list[float]) -> None:
    a = {i: d for i, d in enumerate(diffs)}
    c = paired_contrast(a, dict.fromkeys(a, 0.0), resamples=200)
    assert c.alike == all(d == 0.0 for d in diffs)
    assert (within(c).outcome == "identical") == c.alike


def test_a_contrast_over_no_questions_is_open() -> None:
    nothing = Contrast(questions=0, delta=math.nan, low=math.nan, high=math.nan)
    readings = {above(nothing, 2.0).outcome, below(nothing, 2.0).outcome, within(nothing).outcome}
    assert readings == {"open"}


def test_an_open_reading_says_how_many_times_the_questions_would_decide_it() -> None:
    # Δ 3 [1, 5] against 2: half-width 2, distance 1 — four times the questions.
    assert above(Contrast(300, 3.0, 1.0, 5.0), 2.0) == Reading("open", 4.0)
    # ≈ with Δ 1 [−1, 3]: half-width 2, distance to the margin 1.
    assert within(Contrast(300, 1.0, -1.0, 3.0)).scale == 4.0
    assert decided_by(4.0, 300) == "about 1,200 questions would decide it (this store: 300)"
    assert math.isinf(above(Contrast(300, 2.0, 1.0, 3.0), 2.0).scale)
    assert decided_by(math.inf, 300).startswith("more than 30,000 questions")


def test_any_failure_fails_a_claim_then_identical_then_open() -> None:
    mixed = [
        Judged("a", Reading("holds")),
        Judged("b", Reading("open", 3.0)),
        Judged("i", Reading("identical")),
        Judged("c", FAILS),
    ]
    assert judge("claim", "paper", "here", mixed, "test").test == "test; fails: c"
    alike = judge("claim", "paper", "here", mixed[:3], "test")
    assert alike.verdict == "not testable"
    assert alike.test.endswith("nothing was tested: i")
    open_one = judge("claim", "paper", "here", mixed[:2], "test")
    assert (open_one.verdict, open_one.test, open_one.scale) == (
        "not testable at this size",
        "test; interval holds the boundary: b",
        3.0,
    )
    assert judge("claim", "paper", "here", mixed[:1], "test").verdict == "holds"
