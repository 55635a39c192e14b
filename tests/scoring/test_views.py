"""Attempts and views (PROTOCOL §6)."""

from __future__ import annotations

import pytest

from scoring import UNPARSEABLE, VIEW_ATTEMPTS, PolygonScore, locked_attempt

A = PolygonScore(parseable=True, iou=0.1)
B = PolygonScore(parseable=True, iou=0.2)
C = PolygonScore(parseable=True, iou=0.3)
D = PolygonScore(parseable=True, iou=0.4)
X = UNPARSEABLE


@pytest.mark.parametrize(
    ("attempts", "expected"),
    [
        ([A], {"iou0": A, "iou1": A, "iou2": A, "best_effort": A}),
        ([X, B], {"iou0": None, "iou1": B, "iou2": B, "best_effort": B}),
        ([X, X, C], {"iou0": None, "iou1": None, "iou2": C, "best_effort": C}),
        ([X, X, X, D], {"iou0": None, "iou1": None, "iou2": None, "best_effort": D}),
        ([X, X, X, X], dict.fromkeys(VIEW_ATTEMPTS)),
        ([], dict.fromkeys(VIEW_ATTEMPTS)),
        ([None, B], {"iou0": None, "iou1": B, "iou2": B, "best_effort": B}),  # errored attempt 0
        # The first parseable answer is locked, even if a later attempt would have been better.
        ([A, D], {"iou0": A, "iou1": A, "iou2": A, "best_effort": A}),
    ],
)
def test_views_lock_the_first_parseable_attempt_in_their_window(
    attempts: list[PolygonScore | None], expected: dict[str, PolygonScore | None]
) -> None:
    for view, want in expected.items():
        assert locked_attempt(attempts, view) is want, view  # type: ignore[arg-type]


def test_the_headline_view_is_iou2() -> None:
    assert locked_attempt([X, X, C, D]) is C
