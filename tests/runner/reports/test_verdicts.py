"""How one contrast is read: holds, fails, or open, on either side of a boundary or margin."""

from __future__ import annotations

import math

import pytest

from runner.reports._verdicts import Judged, above, at_most, below, judge, within
from scoring import Contrast


def interval(low: float, high: float) -> Contrast:
    return Contrast(questions=10, delta=(low + high) / 2, low=low, high=high)


@pytest.mark.parametrize(
    ("low", "high", "expected"),
    [(0.1, 3.0, "holds"), (-3.0, 0.0, "fails"), (0.0, 0.0, "fails"), (-1.0, 1.0, "open")],
)
def test_above_holds_only_on_an_interval_wholly_above_zero(
    low: float, high: float, expected: str
) -> None:
    assert above(interval(low, high)) == expected


@pytest.mark.parametrize(
    ("low", "high", "expected"),
    [(-3.0, -0.1, "holds"), (0.0, 2.0, "fails"), (-1.0, 1.0, "open")],
)
def test_below_mirrors_above(low: float, high: float, expected: str) -> None:
    assert below(interval(low, high)) == expected


@pytest.mark.parametrize(
    ("low", "high", "expected"),
    [
        (-1.9, 1.9, "holds"),  # inside the ±2 margin: equivalent
        (-2.0, 2.0, "holds"),
        (2.1, 4.0, "fails"),  # wholly beyond the margin: a real difference
        (-5.0, -2.5, "fails"),
        (0.5, 2.5, "open"),  # reliably above 0, but perhaps within the margin
        (-3.0, 3.0, "open"),  # too wide to tell
    ],
)
def test_within_is_an_equivalence_test_with_a_margin(
    low: float, high: float, expected: str
) -> None:
    assert within(interval(low, high)) == expected


@pytest.mark.parametrize(
    ("low", "high", "expected"),
    [(-10.0, 2.0, "holds"), (2.5, 9.0, "fails"), (0.5, 2.5, "open"), (-1.0, 4.0, "open")],
)
def test_at_most_rules_out_a_gain_beyond_the_margin(low: float, high: float, expected: str) -> None:
    assert at_most(interval(low, high)) == expected


def test_a_contrast_over_no_questions_is_open() -> None:
    nothing = Contrast(questions=0, delta=math.nan, low=math.nan, high=math.nan)
    assert {above(nothing), below(nothing), within(nothing), at_most(nothing)} == {"open"}


def test_any_failure_fails_a_claim_and_any_open_one_leaves_it_untested() -> None:
    mixed = [Judged("a", "holds"), Judged("b", "open"), Judged("c", "fails")]
    assert judge("claim", "paper", "here", mixed, "test").test == "test; fails: c"
    open_one = judge("claim", "paper", "here", mixed[:2], "test")
    assert (open_one.verdict, open_one.test) == (
        "not testable at this size",
        "test; interval holds the boundary: b",
    )
    assert judge("claim", "paper", "here", mixed[:1], "test").verdict == "holds"
