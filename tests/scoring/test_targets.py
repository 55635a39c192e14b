"""Canonical targets G_N (PROTOCOL §2)."""

from __future__ import annotations

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from scoring import (
    BUDGETS,
    DegeneratePartError,
    RingError,
    canonical_target,
    canonical_targets,
    select_part,
    shoelace_area,
)

Point = tuple[float, float]


# --- a plain O(V²) reading of the protocol, to hold the heap versions to -------------------


def naive_target(ring: list[Point], n: int) -> list[Point]:
    ring = list(ring)
    while len(ring) < n:  # §2.2: midpoint of the longest cyclic edge, ties to the lowest index
        lengths = []
        for i in range(len(ring)):
            (ax, ay), (bx, by) = ring[i], ring[(i + 1) % len(ring)]
            lengths.append((bx - ax) * (bx - ax) + (by - ay) * (by - ay))
        i = lengths.index(max(lengths))
        (ax, ay), (bx, by) = ring[i], ring[(i + 1) % len(ring)]
        ring.insert(i + 1, ((ax + bx) / 2.0, (ay + by) / 2.0))
    while len(ring) > n:  # §2.3: Visvalingam–Whyatt on the polyline, both ends pinned
        areas = []
        for i in range(1, len(ring) - 1):
            (ax, ay), (bx, by), (cx, cy) = ring[i - 1], ring[i], ring[i + 1]
            areas.append(abs((bx - ax) * (cy - ay) - (cx - ax) * (by - ay)))
        del ring[1 + areas.index(min(areas))]  # ties to the lowest index
    return ring


coordinate = st.integers(min_value=0, max_value=640).map(float)
rings = st.lists(st.tuples(coordinate, coordinate), min_size=3, max_size=120).filter(
    lambda r: len(set(r)) >= 3 and shoelace_area(r) != 0.0
)
budgets = st.integers(min_value=3, max_value=96)


def flat(ring: list[Point]) -> list[float]:
    return [c for p in ring for c in p]


@given(rings, st.sampled_from(BUDGETS), st.integers(0, 7))
def test_target_has_exactly_n_vertices(ring: list[Point], n: int, phase: int) -> None:
    assert len(canonical_target(flat(ring), n, phase)) == n


@given(rings, budgets)
def test_heap_resampling_equals_the_plain_reading(ring: list[Point], n: int) -> None:
    assert canonical_target(flat(ring), n) == naive_target(ring, n)


@given(rings)
def test_a_ring_with_n_vertices_is_its_own_target(ring: list[Point]) -> None:
    assert canonical_target(flat(ring), len(ring)) == ring


@given(rings, st.integers(0, 7))
def test_phase_rotates_the_start_to_floor_k_v_over_8(ring: list[Point], phase: int) -> None:
    start = phase * len(ring) // 8
    assert canonical_target(flat(ring), len(ring), phase) == ring[start:] + ring[:start]


@given(rings, st.sampled_from(BUDGETS))
def test_down_sampling_keeps_a_subsequence_and_up_sampling_keeps_every_vertex(
    ring: list[Point], n: int
) -> None:
    target = canonical_target(flat(ring), n)
    small, large = (target, ring) if n < len(ring) else (ring, target)
    it = iter(large)
    assert all(any(p == q for q in it) for p in small)  # small is a subsequence of large


@given(rings)
def test_all_budgets_at_once_equal_one_budget_at_a_time(ring: list[Point]) -> None:
    together = canonical_targets(flat(ring), BUDGETS)
    assert {n: list(t) for n, t in together.items()} == {
        n: canonical_target(flat(ring), n) for n in BUDGETS
    }


def test_up_sampling_splits_the_closing_edge_too() -> None:
    # The closing edge (2,0)→(0,0) is the longest; its midpoint goes at the end of the ring.
    assert canonical_target([0, 0, 1, 1, 2, 0], 4) == [(0, 0), (1, 1), (2, 0), (1, 0)]


def test_up_sampling_ties_take_the_lowest_edge_index() -> None:
    square = [0, 0, 4, 0, 4, 4, 0, 4]
    assert canonical_target(square, 5) == [(0, 0), (2, 0), (4, 0), (4, 4), (0, 4)]
    assert canonical_target(square, 6) == [(0, 0), (2, 0), (4, 0), (4, 2), (4, 4), (0, 4)]


def test_down_sampling_pins_the_origin_and_the_vertex_before_it() -> None:
    # Vertex 0 sits in the middle of the bottom edge: a zero-area triangle on the cyclic ring,
    # but the origin is pinned, so the 10×10 square loses a corner and keeps the midpoint.
    ring = [5, 0, 10, 0, 10, 10, 0, 10, 0, 0]
    assert canonical_target(ring, 4) == [(5, 0), (10, 10), (0, 10), (0, 0)]
    # The last listed vertex is pinned too: the midpoint listed last stays, a corner goes.
    ring = [10, 0, 10, 10, 0, 10, 0, 0, 5, 0]
    assert canonical_target(ring, 4) == [(10, 0), (10, 10), (0, 10), (5, 0)]


def test_each_phase_pins_its_own_origin() -> None:
    # A hand-drawn 12×8 rectangle listed with a midpoint on each side. The cyclic rule gave
    # every phase the four corners (area 96). Pinned, phase k keeps vertex k (V = 8) and the
    # one before it; the interior midpoints go first (zero area), then the smaller of the
    # corner triangles, so each phase cuts a different corner (area 72) or keeps a midpoint.
    contour = [0, 0, 6, 0, 12, 0, 12, 4, 12, 8, 6, 8, 0, 8, 0, 4]
    expected = [
        [(0, 0), (12, 0), (12, 8), (0, 4)],
        [(6, 0), (12, 8), (0, 8), (0, 0)],
        [(12, 0), (12, 8), (0, 8), (6, 0)],
        [(12, 4), (0, 8), (0, 0), (12, 0)],
        [(12, 8), (0, 8), (0, 0), (12, 4)],
        [(6, 8), (0, 0), (12, 0), (12, 8)],
        [(0, 8), (0, 0), (12, 0), (6, 8)],
        [(0, 4), (12, 0), (12, 8), (0, 8)],
    ]
    for phase, target in enumerate(expected):
        assert canonical_target(contour, 4, phase) == target, phase
        assert abs(shoelace_area(target)) == 72.0


def test_down_sampling_has_no_monotone_area_clamp() -> None:
    # Interior twice-areas (ends (2,4) and (4,3) pinned) 16, 4, 9: (4,0) goes first. Its
    # neighbours' areas fall to 2 and 1, so (1,1) goes next. A clamp would hold both at 4
    # and, by the tie, remove (0,0) instead, leaving (2,4), (1,1), (4,3).
    ring = [2, 4, 0, 0, 4, 0, 1, 1, 4, 3]
    assert canonical_target(ring, 3) == [(2, 4), (0, 0), (4, 3)]


def test_part_selection_takes_most_vertices_then_lowest_index() -> None:
    assert select_part([[0, 0, 1, 0, 1, 1], [0, 0, 1, 0, 1, 1, 0, 1], [0] * 8]) == 1
    with pytest.raises(RingError):
        select_part([])


@pytest.mark.parametrize(
    "part",
    [[0, 0, 1, 1], [0, 0, 0, 0, 0, 0, 0, 0], [0, 0, 1, 1, 2, 2, 3, 3], [0, 0, 1, 0, 0, 0, 1, 0]],
    ids=["two-vertices", "one-point", "collinear", "zero-area-back-and-forth"],
)
def test_degenerate_parts_are_refused(part: list[float]) -> None:
    with pytest.raises(DegeneratePartError):
        canonical_target(part, 8)


@pytest.mark.parametrize("part", [[0, 0, 1, 1, 2], [0, 0, 1, float("nan"), 2, 2]])
def test_malformed_parts_are_refused(part: list[float]) -> None:
    with pytest.raises(RingError):
        canonical_target(part, 8)


def test_budgets_and_phases_are_checked() -> None:
    with pytest.raises(ValueError, match="at least 3"):
        canonical_target([0, 0, 1, 0, 0, 1], 2)
    with pytest.raises(ValueError, match="phase"):
        canonical_target([0, 0, 1, 0, 0, 1], 8, phase=8)


@given(rings)
def test_target_area_tracks_the_part_when_n_is_large(ring: list[Point]) -> None:
    # Up-sampling never changes the region; Visvalingam–Whyatt to 64 of ≤120 vertices barely does.
    assume(len(ring) <= 64)
    assert shoelace_area(canonical_target(flat(ring), 64)) == pytest.approx(shoelace_area(ring))
