"""Per-question metadata (PROTOCOL §8): Q, tertiles, difficulty, groups."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conditions import GROUPS, Tertiles, semantic_group
from conditions._metadata import contour_complexity, d_bin, difficulty


def test_q_of_a_square_and_of_a_near_circle() -> None:
    assert contour_complexity([0, 0, 10, 0, 10, 10, 0, 10]) == pytest.approx(4 / math.pi)
    circle = [
        c for i in range(720) for c in (math.cos(i * math.pi / 360), math.sin(i * math.pi / 360))
    ]
    assert contour_complexity(circle) == pytest.approx(1.0, abs=1e-4)


@given(st.lists(st.floats(0, 100, allow_nan=False), min_size=3, max_size=300))
def test_tertiles_split_values_into_three_ordered_bins(values: list[float]) -> None:
    t = Tertiles.of(values)
    bins = [t.bin(v) for v in values]
    assert t.low <= t.high
    for v, b in zip(values, bins, strict=True):
        for w, c in zip(values, bins, strict=True):
            if v < w:
                assert b <= c
    distinct = sorted(set(values))
    if len(distinct) == len(values):  # no ties: each bin holds about a third
        assert max(bins.count(k) for k in (1, 2, 3)) <= len(values) // 3 + 2


def test_difficulty_counts_d3_q3_and_rs1() -> None:
    assert difficulty(1, 1, 2) == "easy"
    assert difficulty(3, 1, 2) == difficulty(1, 3, 2) == difficulty(1, 2, 1) == "medium"
    assert difficulty(4, 3, 2) == difficulty(3, 3, 1) == "hard"
    assert [d_bin(d) for d in (1, 2, 3, 7)] == ["D1", "D2", "D3+", "D3+"]


def test_the_twelve_supercategories_fall_in_the_six_groups() -> None:
    supercategories = ["person", "animal", "vehicle", "outdoor", "sports", "accessory", "food",
                       "kitchen", "furniture", "electronic", "appliance", "indoor"]  # fmt: skip
    assert {semantic_group(s) for s in supercategories} == set(GROUPS)
    assert semantic_group("spaceship") is None
