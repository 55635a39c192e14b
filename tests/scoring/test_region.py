"""Continuous even-odd regions (Clipper), held to an exact rational oracle."""

from __future__ import annotations

import math

import pytest
import shapely
from hypothesis import given
from hypothesis import strategies as st

from scoring._region import even_odd_region, region_iou
from tests.scoring.exact_area import even_odd_area

Ring = list[tuple[int, int]]


def flat(ring: Ring) -> list[float]:
    return [float(c) for p in ring for c in p]


def test_pentagram_centre_is_empty() -> None:
    star = [(round(50 + 40 * math.cos(4 * math.pi * k / 5)),
             round(50 + 40 * math.sin(4 * math.pi * k / 5))) for k in range(5)]  # fmt: skip
    region = even_odd_region(flat(star), 100, 100)
    assert region.area == pytest.approx(float(even_odd_area([star], 100, 100)), abs=1e-2)
    centre = even_odd_region([45, 45, 55, 45, 55, 55, 45, 55], 100, 100)
    assert region_iou(region, centre) == 0.0


def test_square_answered_twice_is_empty_where_make_valid_is_not() -> None:
    square = [(0, 0), (10, 0), (10, 10), (0, 10)] * 2
    assert even_odd_region(flat(square), 20, 20).area == 0.0
    assert shapely.make_valid(shapely.Polygon(square), method="linework").area == 100.0


def test_degenerate_rings_are_empty() -> None:
    assert even_odd_region([], 10, 10).area == 0.0
    assert even_odd_region([1, 1, 2, 2], 10, 10).area == 0.0
    assert even_odd_region([1, 1, 2, 2, 3, 3, 4, 4], 10, 10).area == 0.0


def test_regions_are_clipped_to_the_frame_even_from_far_away() -> None:
    assert even_odd_region([-10, -10, 20, -10, 20, 20, -10, 20], 10, 10).area == 100.0
    assert even_odd_region([0, 2, 1e300, 5, 0, 8], 10, 10).area == pytest.approx(60.0, abs=1e-2)


ring = st.lists(st.tuples(st.integers(-10, 70), st.integers(-10, 70)), min_size=3, max_size=14)


@given(ring)
def test_area_equals_the_exact_oracle(points: Ring) -> None:
    expected = float(even_odd_area([points], 60, 60))
    # Clipper's 2^-16 px grid moves each computed crossing by at most ~1e-5 px.
    assert even_odd_region(flat(points), 60, 60).area == pytest.approx(expected, abs=1e-2)


@given(ring, ring)
def test_iou_equals_the_exact_oracle(a: Ring, b: Ring) -> None:
    inter = even_odd_area([a, b], 60, 60)
    union = even_odd_area([a], 60, 60) + even_odd_area([b], 60, 60) - inter
    expected = float(inter / union) if union > 0 else 0.0
    ra, rb = even_odd_region(flat(a), 60, 60), even_odd_region(flat(b), 60, 60)
    assert region_iou(ra, rb) == pytest.approx(expected, abs=1e-4)
    assert region_iou(ra, rb) == region_iou(rb, ra)


def test_the_oracle_on_hand_computed_shapes() -> None:
    bow_tie = [(0, 0), (10, 10), (10, 0), (0, 10)]
    assert even_odd_area([bow_tie], 20, 20) == 50
    assert even_odd_area([[(0, 0), (10, 0), (10, 10), (0, 10)] * 2], 20, 20) == 0
    assert even_odd_area([[(-5, 0), (5, 0), (5, 5), (-5, 5)]], 20, 20) == 25
    square, shifted = [(0, 0), (4, 0), (4, 4), (0, 4)], [(2, 2), (6, 2), (6, 6), (2, 6)]
    assert even_odd_area([square, shifted], 20, 20) == 4


def test_overlapping_collinear_edges_that_defeat_geos() -> None:
    # Found by the property test: GEOS's fan-triangle construction lost a face here.
    b = [(54, 70), (0, 12), (22, 1), (22, 0), (0, 41), (0, 0), (0, 1), (28, 28), (2, 58),
         (20, -4), (0, 0), (0, 30), (13, 0), (0, 0), (11, 0), (0, -1)]  # fmt: skip
    assert even_odd_region(flat(b), 60, 60).area == pytest.approx(
        float(even_odd_area([b], 60, 60)), abs=1e-2
    )
