"""An answer as drawn (scoring._drawn): where the protocol puts it, and what scoring saw in it.

The overlay must show the ring scored, not a look-alike: its vertices where PROTOCOL §1 maps
them, its even-odd fill the region ``iou_cont`` measures and the raster ``iou`` counts, its
marks (crossings, duplicate vertices) where legality found fault. Bad answers draw what is
drawable and say what is not, in plain sentences.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from fractions import Fraction

import numpy as np
import pyclipper
import pytest
import shapely
from hypothesis import given, settings
from hypothesis import strategies as st
from pycocotools import mask as coco_mask

from scoring import (
    BUDGETS,
    MAX_DRAWN,
    SCALE,
    DrawnAnswer,
    Referent,
    box_iou,
    box_polygon,
    draw_box,
    draw_polygon,
    legality_defect,
    mask_iou,
    parse_list,
    rasterize,
    score_box,
    score_polygon,
)
from scoring._drawn import drawn_values, edge_contacts
from scoring._region import Region, even_odd_region, region_iou
from scoring._score import place_answer
from tests.examples import scaled
from tests.scoring.shapes import SHAPES, Shape

Point = tuple[float, float]
Ring = list[tuple[int, int]]

BEYOND = "the ring lies over a frame outside the image: not drawn"
"""The note of a scored ring that never comes within a frame of the image."""

FRAMES = [(999, 999), (640, 480), (480, 640), (2000, 1000), (37, 1013)]
"""``(width, height)``: square, landscape, portrait, wider than 999 px, tiny and tall."""


def referent(width: int, height: int) -> Referent:
    """A referent filling the middle of a ``width × height`` frame, for scoring answers."""
    corners = [(0.2, 0.2), (0.8, 0.3), (0.7, 0.8), (0.3, 0.7)]
    part = tuple(c for x, y in corners for c in (x * width, y * height))
    bbox = (0.2 * width, 0.2 * height, 0.6 * width, 0.6 * height)
    return Referent(1, width, height, (part,), bbox)


REFERENTS = {frame: referent(*frame) for frame in FRAMES}


def flat(points: Sequence[Point | None]) -> list[float]:
    return [c for p in points if p is not None for c in p]


def as_text(ring: Ring, style: str = "plain") -> str:
    if style == "pairs":
        return "Answer: " + ", ".join(f"({x}, {y})" for x, y in ring)
    if style == "nested":
        return "[" + ", ".join(f"[{x}, {y}]" for x, y in ring) + "]"
    return " ".join(f"{x} {y}" for x, y in ring)


def shoelace(ring: Sequence[Point]) -> float:
    return 0.5 * sum(
        x0 * y1 - x1 * y0 for (x0, y0), (x1, y1) in zip(ring, [*ring[1:], ring[0]], strict=True)
    )


def fill_area(drawn: DrawnAnswer) -> float:
    """The area of the region the fill rings give by the non-zero rule: holes run opposite to
    their outer ring, so the signed areas add up to it."""
    return abs(sum(shoelace(ring) for ring in drawn.fill))


def fill_region(drawn: DrawnAnswer) -> Region:
    """The fill rings back on Clipper's grid (a power of two: the scaling is exact)."""
    grid = 1 << 16
    paths = [[[round(x * grid), round(y * grid)] for x, y in ring] for ring in drawn.fill]
    area = abs(sum(pyclipper.Area(p) for p in paths)) / grid**2
    return Region(paths=paths, area=area)


def fill_mask(drawn: DrawnAnswer, height: int, width: int) -> np.ndarray:
    """The fill rings rasterised as the region they bound: each ring's fill, exclusive-or'd
    (the rings do not cross, so parity across them is the region)."""
    mask = np.zeros((height, width), dtype=bool)
    for ring in drawn.fill:
        mask ^= coco_mask.decode(rasterize([flat(ring)], height, width)).astype(bool)
    return mask


def perimeter(rings: Sequence[Sequence[Point]]) -> float:
    return sum(
        math.dist(a, b) for ring in rings for a, b in zip(ring, [*ring[1:], ring[0]], strict=True)
    )


def distance_to_segment(c: Point, a: Point, b: Point) -> float:
    (cx, cy), (ax, ay), (bx, by) = c, a, b
    dx, dy = bx - ax, by - ay
    length = dx * dx + dy * dy
    t = 0.0 if length == 0 else min(1.0, max(0.0, ((cx - ax) * dx + (cy - ay) * dy) / length))
    return math.hypot(ax + t * dx - cx, ay + t * dy - cy)


def witnessed(c: Point, ring: Sequence[Point], tolerance: float = 1e-6) -> bool:
    """``c`` lies on two edges of ``ring`` that do not merely share it as their common end:
    two edges that are not neighbours, or two neighbours folding back along each other at
    their shared vertex ``c``."""
    m = len(ring)
    edges = [(ring[i], ring[(i + 1) % m]) for i in range(m)]
    on = [i for i, (a, b) in enumerate(edges) if distance_to_segment(c, a, b) < tolerance]
    for i in on:
        for j in on:
            if j <= i:
                continue
            if not (j == i + 1 or (i == 0 and j == m - 1)):
                return True
            (a, b), (p, q) = edges[i], edges[j]
            r, s = (b[0] - a[0], b[1] - a[1]), (q[0] - p[0], q[1] - p[1])
            parallel = abs(r[0] * s[1] - r[1] * s[0]) <= 1e-9 * math.hypot(*r) * math.hypot(*s)
            folds = parallel and r[0] * s[0] + r[1] * s[1] < 0
            shared = b if j == i + 1 else a
            if folds and math.dist(c, shared) < tolerance:
                return True
    return False


def same_points(a: Sequence[Point], b: Sequence[Point], tolerance: float = 1e-9) -> bool:
    """Each point of either list lies within ``tolerance`` of one of the other (a point where
    three edges meet is worked out from two pairs, which may differ in the last bit)."""

    def covered(xs: Sequence[Point], ys: Sequence[Point]) -> bool:
        return all(any(math.dist(x, y) <= tolerance for y in ys) for x in xs)

    return covered(a, b) and covered(b, a)


# --- the protocol's map: x·W/999, y·H/999 -----------------------------------------------------


@pytest.mark.parametrize(("width", "height"), FRAMES, ids=lambda v: str(v))
def test_vertices_land_at_units_times_frame_over_999(width: int, height: int) -> None:
    units = [(0, 0), (999, 0), (999, 999), (0, 999), (500, 250), (1, 998)]
    drawn = draw_polygon(as_text(units), len(units), width, height)
    assert drawn.shape == "polygon" and drawn.notes == ()
    for (x, y), vertex in zip(units, drawn.vertices, strict=True):
        assert vertex == pytest.approx((x * width / 999, y * height / 999), abs=1e-9)


def test_a_hand_drawn_answer_lands_on_hand_computed_pixels() -> None:
    # 640×480: 333 units are a third of the width, 666 two thirds of the height.
    drawn = draw_polygon("[[0, 0], [999, 0], [333, 666]]", 3, 640, 480)
    expected = [(0, 0), (640, 0), (Fraction(640, 3), 320)]
    assert flat(drawn.vertices) == pytest.approx([float(c) for p in expected for c in p])
    assert drawn.outline == drawn.vertices  # inside the frame the outline is the answer's own
    assert fill_area(drawn) == pytest.approx(0.5 * 640 * 320)


BOX_TEXTS = [
    "[100, 50, 800, 900]",
    "[800, 900, 100, 50]",  # corners given the other way round
    "The box: [-100, -100, 1200, 500]",  # beyond the frame: clipped to it
    "0 0 999 999",
    "500 500 500 500",  # no area
]


@pytest.mark.parametrize(("width", "height"), FRAMES[:3], ids=lambda v: str(v))
@pytest.mark.parametrize("text", BOX_TEXTS)
def test_a_box_is_drawn_as_it_is_scored(text: str, width: int, height: int) -> None:
    values = parse_list(text, 4)
    assert values is not None
    x1, y1, x2, y2 = values.values
    drawn = draw_box(text, width, height, budgets=(8, 16))
    assert drawn.corners is not None
    assert flat(drawn.corners) == pytest.approx(
        [x1 * width / 999, y1 * height / 999, x2 * width / 999, y2 * height / 999]
    )
    left, right = sorted(min(width, max(0.0, x * width / SCALE)) for x in (x1, x2))
    top, bottom = sorted(min(height, max(0.0, y * height / SCALE)) for y in (y1, y2))
    assert drawn.rectangle == (left, top, right, bottom)
    scored = score_box(text, REFERENTS[(width, height)], budgets=(8, 16))
    assert box_iou((left, top, right, bottom), REFERENTS[(width, height)].bbox) == scored.box_iou
    assert sorted(drawn.controls) == [8, 16]
    for n, control in drawn.controls.items():
        lattice = box_polygon((left, top, right, bottom), n, width, height).values
        assert flat(control.vertices) == pytest.approx(
            [v * (width if k % 2 == 0 else height) / 999 for k, v in enumerate(lattice)]
        )
        reference = REFERENTS[(width, height)].reference(n)
        raster = rasterize([flat(control.vertices)], height, width)
        assert mask_iou(raster, reference.masks[0]) == scored.control[n].iou


def test_a_box_draws_a_control_for_every_budget_by_default() -> None:
    assert sorted(draw_box("0 0 500 500", 640, 480).controls) == sorted(BUDGETS)


@pytest.mark.parametrize("text", [None, "", "no box here", "1 2 3", "1 2 3 4 5", "nan 2 3 4"])
def test_an_unparseable_box_draws_nothing_and_says_so(text: str | None) -> None:
    drawn = draw_box(text, 640, 480)
    assert (drawn.corners, drawn.rectangle, drawn.controls) == (None, None, {})
    assert drawn.notes == ("no box of exactly 4 finite values: nothing to draw",)


def test_a_box_too_far_for_pixels_is_still_clipped_to_the_frame() -> None:
    # 1.7e308 units are beyond float range in a 2000-px frame's pixels.
    drawn = draw_box("[0, 0, 1.7e308, 1.7e308]", 2000, 1000, budgets=(8,))
    assert drawn.rectangle == (0.0, 0.0, 2000.0, 1000.0)
    assert drawn.controls == draw_box("0 0 999 999", 2000, 1000, budgets=(8,)).controls


# --- the ring drawn is the ring scored ------------------------------------------------------

frames = st.sampled_from([(999, 999), (640, 480), (300, 500), (150, 90)])
coordinate = st.integers(0, 999) | st.integers(-1500, 2500)
styles = st.sampled_from(["plain", "pairs", "nested"])


def rings(coordinates: st.SearchStrategy[int], least: int = 3) -> st.SearchStrategy[Ring]:
    return st.integers(least, 16).flatmap(
        lambda n: st.lists(st.tuples(coordinates, coordinates), min_size=n, max_size=n)
    )


@given(rings(coordinate), frames, styles)
def test_a_parseable_answer_is_drawn_as_the_ring_scored(
    ring: Ring, frame: tuple[int, int], style: str
) -> None:
    width, height = frame
    text, n = as_text(ring, style), len(ring)
    parsed = parse_list(text, 2 * n)
    assert parsed is not None
    drawn = draw_polygon(text, n, width, height)
    assert drawn.shape == "polygon" or (len(drawn.outline) < 2 and BEYOND in drawn.notes)
    # The vertices are the answer's units mapped to pixels, and the outline the very ring
    # scoring rasterises: clipped to its window (in units, then mapped; see placed_ring).
    placed = place_answer(parsed, referent(width, height))
    assert flat(drawn.vertices) == pytest.approx(
        [v * (width if k % 2 == 0 else height) / 999 for k, v in enumerate(parsed.values)]
    )
    assert flat(drawn.outline) == placed.flat
    # The fill is the region iou_cont measures...
    region = even_odd_region(placed.flat, width, height)
    assert fill_area(drawn) == pytest.approx(region.area, rel=1e-6, abs=1e-9)
    assert fill_region(drawn).paths == region.paths
    # ... and, rasterised, the pixels iou counts, but for pixel centres within the 0.1 px
    # that pycocotools' 0.2-px rounding moves the new vertices where edges cross or meet the
    # frame: a band along the fill's boundary.
    scored = coco_mask.decode(placed.mask).astype(bool)
    filled = fill_mask(drawn, height, width)
    boundary = perimeter(drawn.fill)
    assert int((scored ^ filled).sum()) <= 0.3 * boundary + 2
    if scored.sum() >= 30 * boundary > 0:  # not a sliver: then the band is under 1%
        assert (scored & filled).sum() / (scored | filled).sum() > 0.99


@given(rings(coordinate), frames)
def test_a_list_of_another_length_is_drawn_unscored(ring: Ring, frame: tuple[int, int]) -> None:
    text = as_text(ring)
    for n in (len(ring) - 1, len(ring) + 1):
        assert parse_list(text, 2 * n) is None
        drawn = draw_polygon(text, n, *frame)
        assert drawn.fill == () and drawn.crossings == ()
        # Drawn open, through the vertices within a frame of the image, if two are.
        assert drawn.shape == ("polyline" if len(drawn.outline) >= 2 else "none")
        if len(drawn.outline) < len(ring):
            assert drawn.notes[-1].endswith("over a frame outside the image: not drawn")
        assert drawn.listed == 2 * len(ring)
        assert (
            drawn.notes[0]
            == f"its last list holds {2 * len(ring)} numbers, not {2 * n}: not scored"
        )


@given(rings(st.integers(0, 999)), st.sampled_from([(640, 480), (999, 999)]))
def test_the_fill_is_what_the_polygon_score_measures(ring: Ring, frame: tuple[int, int]) -> None:
    width, height = frame
    text, n = as_text(ring), len(ring)
    reference = REFERENTS[frame].reference(n)
    score = score_polygon(text, reference)
    drawn = draw_polygon(text, n, width, height)
    raster = rasterize([flat(drawn.vertices)], height, width)
    assert mask_iou(raster, reference.masks[0]) == score.iou
    assert region_iou(fill_region(drawn), reference.target_region) == pytest.approx(
        score.iou_cont, abs=1e-12
    )


# --- the even-odd law ------------------------------------------------------------------------


def test_a_square_traversed_twice_fills_nothing() -> None:
    square = [(100, 100), (300, 100), (300, 300), (100, 300)]
    drawn = draw_polygon(as_text(square * 2), 8, 999, 999)
    assert drawn.shape == "polygon"
    assert drawn.fill == ()
    assert drawn.duplicates == (4, 5, 6, 7)
    assert sorted(drawn.crossings) == [
        (100.0, 100.0),
        (100.0, 300.0),
        (300.0, 100.0),
        (300.0, 300.0),
    ]


def test_a_bow_tie_fills_its_two_triangles() -> None:
    drawn = draw_polygon("100 100 300 300 300 100 100 300", 4, 999, 999)
    triangles = sorted(sorted(ring) for ring in drawn.fill)
    assert triangles == [
        [(100.0, 100.0), (100.0, 300.0), (200.0, 200.0)],
        [(200.0, 200.0), (300.0, 100.0), (300.0, 300.0)],
    ]
    assert [abs(shoelace(ring)) for ring in drawn.fill] == [10_000.0, 10_000.0]
    assert drawn.crossings == ((200.0, 200.0),)


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: s.name)
def test_the_catalogue_fills_its_exact_areas(shape: Shape) -> None:
    # In a 999×999 frame a unit is a pixel, so the catalogue's hand-worked areas apply.
    drawn = draw_polygon(shape.text, len(shape.vertices), 999, 999)
    assert drawn.shape == "polygon"
    assert fill_area(drawn) == pytest.approx(shape.area, abs=1e-2)
    assert bool(drawn.duplicates) == (shape.defect == "duplicate-vertex")
    if shape.defect == "self-intersecting":
        assert drawn.crossings
    if shape.defect is None:
        assert drawn.crossings == ()


@given(rings(coordinate), st.data())
def test_reversal_and_cyclic_shift_keep_the_fill(ring: Ring, data: st.DataObject) -> None:
    shift = data.draw(st.integers(1, len(ring) - 1))
    area = fill_area(draw_polygon(as_text(ring), len(ring), 640, 480))
    for other in (ring[::-1], ring[shift:] + ring[:shift]):
        moved = fill_area(draw_polygon(as_text(other), len(ring), 640, 480))
        assert moved == pytest.approx(area, rel=1e-6, abs=1e-6)


# --- marks and legality ----------------------------------------------------------------------

# A coarse lattice (multiples of 111 units) makes collinear edges, touchings and repeated
# vertices common.
coarse = st.integers(0, 9).map(lambda k: 111 * k)


# Three and one and a half times the profile, the counts at which these two laws found a
# fold-back marked off the edges that meet there and marks that moved when the ring started
# elsewhere or ran the other way (0ef53dd, fc366c1); together they take under a second.
@settings(max_examples=scaled(3))
@given(rings(coarse), st.sampled_from([(999, 999), (640, 480), (37, 1013)]))
def test_marks_agree_with_legality(ring: Ring, frame: tuple[int, int]) -> None:
    width, height = frame
    text, n = as_text(ring), len(ring)
    parsed = parse_list(text, 2 * n)
    assert parsed is not None
    units = np.asarray(parsed.values, dtype=float).reshape(-1, 2)
    defect = legality_defect(parsed, units)
    drawn = draw_polygon(text, n, width, height)
    assert drawn.duplicates == tuple(i for i, p in enumerate(ring) if p in ring[:i])
    assert bool(drawn.duplicates) == (defect == "duplicate-vertex")
    if defect is None:
        assert drawn.crossings == () and drawn.duplicates == ()
    if defect == "self-intersecting":
        assert drawn.crossings
    # Marked exactly when GEOS finds the ring not simple (a zero-length edge alone is simple).
    assert bool(drawn.crossings) == (not shapely.LinearRing(units).is_simple)
    pixels = [v for v in drawn.vertices if v is not None]
    for crossing in drawn.crossings:
        assert witnessed(crossing, pixels), f"{crossing} lies on no two edges that meet there"


@settings(max_examples=scaled(1.5))
@given(rings(st.integers(0, 4)), st.data())
def test_contacts_do_not_depend_on_where_the_ring_starts_or_its_direction(
    ring: Ring, data: st.DataObject
) -> None:
    shift = data.draw(st.integers(1, len(ring) - 1))
    points = np.asarray(ring, dtype=float)
    contacts = edge_contacts(points)
    assert same_points(edge_contacts(np.roll(points, shift, axis=0)), contacts)
    assert same_points(edge_contacts(points[::-1].copy()), contacts)
    assert all(witnessed(c, [(float(x), float(y)) for x, y in ring]) for c in contacts)


CONTACTS: list[tuple[str, Ring, list[Point]]] = [
    ("square", [(0, 0), (2, 0), (2, 2), (0, 2)], []),
    ("triangle", [(0, 0), (4, 0), (0, 3)], []),
    ("collinear-inner-vertex", [(0, 0), (1, 0), (2, 0), (2, 2), (0, 2)], []),
    ("bow-tie", [(0, 0), (2, 2), (2, 0), (0, 2)], [(1.0, 1.0)]),
    ("crossing-off-lattice", [(0, 0), (3, 1), (3, 0), (0, 1)], [(1.5, 0.5)]),
    # (2, 0) lies on the first edge: two triangles meeting at that vertex.
    ("touching-at-a-vertex", [(0, 0), (4, 0), (4, 4), (2, 0), (0, 4)], [(2.0, 0.0)]),
    # The edge (3, 0)→(1, 0) runs back along the first edge: one point for the overlap (its
    # lesser end, wherever the ring starts), and the two touchings at its ends.
    (
        "collinear-overlap",
        [(0, 0), (4, 0), (4, 2), (3, 2), (3, 0), (1, 0), (1, 2), (0, 2)],
        [(1.0, 0.0), (3.0, 0.0)],
    ),
    # Up to (6, 8) and back down to (6, 5): marked at the tip and where it rejoins its edge.
    ("fold-back-spike", [(2, 2), (6, 2), (6, 6), (6, 8), (6, 5), (2, 6)], [(6.0, 5.0), (6.0, 8.0)]),
    # The last edge runs back along the first: the fold is at the first vertex, (0, 0).
    ("fold-back-at-the-start", [(0, 0), (10, 0), (10, 10), (20, 0)], [(0.0, 0.0), (10.0, 0.0)]),
    # Out along a line and back: folds at both ends, one point for the middle overlap.
    (
        "collinear-out-and-back",
        [(1, 1), (2, 2), (3, 3), (4, 4)],
        [(1.0, 1.0), (2.0, 2.0), (4.0, 4.0)],
    ),
    (
        "square-twice",
        [(0, 0), (2, 0), (2, 2), (0, 2)] * 2,
        [(0.0, 0.0), (0.0, 2.0), (2.0, 0.0), (2.0, 2.0)],
    ),
    # A repeated neighbour is a zero-length edge: a duplicate vertex, not a contact.
    ("repeated-neighbour", [(0, 0), (2, 0), (2, 0), (2, 2), (0, 2)], [(2.0, 0.0)]),
]


@pytest.mark.parametrize(("name", "ring", "expected"), CONTACTS, ids=[c[0] for c in CONTACTS])
def test_edge_contacts_of_named_shapes(name: str, ring: Ring, expected: list[Point]) -> None:
    assert edge_contacts(np.asarray(ring, dtype=float)) == expected


def test_a_repeated_neighbour_alone_is_no_crossing_when_drawn() -> None:
    # edge_contacts sees the edges either side of the repeat meet at it; the ring is still
    # simple (GEOS drops the zero-length edge), so the overlay marks a duplicate, not a crossing.
    drawn = draw_polygon("0 0 200 0 200 0 200 200 0 200", 5, 999, 999)
    assert drawn.duplicates == (2,)
    assert drawn.crossings == ()


# --- bad input: draw what is drawable, say what is not ---------------------------------------


def spread(count: int) -> list[int]:
    """``count`` values wandering over 0..999, so that a long ring is no single point."""
    return [(k * 7919) % 1000 for k in range(count)]


def test_a_hundred_thousand_vertices_are_drawn_up_to_the_limit() -> None:
    text = " ".join(map(str, spread(200_000)))
    drawn = draw_polygon(text, 64, 640, 480)
    assert drawn.shape == "polyline"
    assert drawn.listed == 2 * MAX_DRAWN + 1  # counted that far, no further
    assert len(drawn.vertices) == len(drawn.outline) == MAX_DRAWN
    assert drawn.notes == (
        "its last list holds over 8,192 numbers, not 128: not scored",
        "only its last 4,096 vertices are drawn, unnumbered",
    )
    # The last vertices of the list, in its order.
    assert flat(drawn.vertices[-2:]) == pytest.approx(
        [v * s / 999 for v, s in zip(spread(200_000)[-4:], (640, 480) * 2, strict=True)]
    )


def test_a_hundred_thousand_vertices_given_as_the_scored_ring_are_capped() -> None:
    turns = np.linspace(0.0, 2.0 * np.pi, 100_000, endpoint=False)
    circle = np.column_stack([500 + 400 * np.cos(turns), 500 + 400 * np.sin(turns)])
    drawn = drawn_values(circle.ravel().tolist(), 100_000, 640, 480, scored=True)
    assert drawn.shape == "polygon"
    assert len(drawn.vertices) == MAX_DRAWN
    assert drawn.notes == ("over 512 vertices: crossings not marked",)


@pytest.mark.parametrize("text", ["1e308 1e308 1.7e308 0 500 500", "1e308 0 0 0 999 999 0 999"])
def test_coordinates_that_overflow_in_pixels_are_scored_and_drawn_as_one_ring(text: str) -> None:
    # Finite in 0–999 units (so parseable), beyond float range once multiplied by 2000/999.
    # Scoring clips in units before mapping (placed_ring): mapped first, the ring held inf,
    # clipping made NaNs, and pycocotools allocated until the machine ran out of memory.
    n = len(text.split()) // 2
    parsed = parse_list(text, 2 * n)
    assert parsed is not None
    drawn = draw_polygon(text, n, 2000, 1000)
    placed = place_answer(parsed, referent(2000, 1000))
    assert all(math.isfinite(v) for v in placed.flat)
    assert flat(drawn.outline) == placed.flat
    assert drawn.shape == "polygon"
    overflowing = sum(v is None for v in drawn.vertices)
    assert overflowing > 0
    assert (
        f"{'1 vertex is' if overflowing == 1 else f'{overflowing} vertices are'} too far out"
        in (" ".join(drawn.notes))
    )
    assert fill_area(drawn) == pytest.approx(
        even_odd_region(placed.flat, 2000, 1000).area, rel=1e-9
    )


def test_one_overflowing_vertex_keeps_the_ring_scoring_sees() -> None:
    # The far vertex pulls the first edge out to the right: the region is the frame's lower
    # right half, as scoring measures it.
    drawn = draw_polygon("1e308 0 0 0 999 999 0 999", 4, 2000, 1000)
    assert drawn.vertices[0] is None
    assert fill_area(drawn) == pytest.approx(0.5 * 2000 * 1000, rel=1e-9)


def test_huge_finite_coordinates_are_drawn_clipped_to_scorings_window() -> None:
    drawn = draw_polygon("1e308 0 0 0 999 999 0 999", 4, 999, 999)
    assert drawn.vertices[0] == (1e308, 0.0)
    assert all(-999 <= x <= 1998 and -999 <= y <= 1998 for x, y in drawn.outline)
    region = even_odd_region(flat(drawn.vertices), 999, 999)
    assert fill_area(drawn) == pytest.approx(region.area, rel=1e-6)
    assert drawn.notes == ("coordinates too large to mark where edges cross",)


@pytest.mark.parametrize(
    ("text", "missing"),
    [
        ("nan 1 2 3 4 5", 0),
        ("1 2 inf 4 5 6", 1),
        ("[1, 2, 3, 4, 5, -infinity]", 2),
        ("[1e400, 2, 3, 4, 5, 6]", 0),
    ],
)
def test_non_finite_values_make_an_unscored_polyline(text: str, missing: int) -> None:
    assert parse_list(text, 6) is None
    drawn = draw_polygon(text, 3, 640, 480)
    assert drawn.shape == "polyline"
    assert drawn.vertices[missing] is None
    assert sum(v is None for v in drawn.vertices) == 1
    assert drawn.notes == (
        "its last list holds a value that is not finite: not scored",
        "1 vertex is not finite in pixels: not drawn",
    )


def test_an_odd_count_of_values_draws_the_pairs() -> None:
    drawn = draw_polygon("10 20 30 40 50", 3, 999, 999)
    assert drawn.shape == "polyline"
    assert (drawn.listed, drawn.vertices) == (5, ((10.0, 20.0), (30.0, 40.0)))
    assert drawn.notes == (
        "its last list holds 5 numbers, not 6: not scored",
        "an odd count of values: the last is not drawn",
    )


@pytest.mark.parametrize("text", [None, "", "I cannot see it.", "There are 7 cats.", "[sic]"])
def test_no_list_draws_nothing(text: str | None) -> None:
    drawn = draw_polygon(text, 8, 640, 480)
    assert drawn.shape == "none"
    assert (drawn.listed, drawn.vertices, drawn.outline, drawn.fill) == (0, (), (), ())
    assert drawn.notes == ("the answer holds no list of numbers: nothing to draw",)


def test_a_ring_far_outside_the_frame_is_outlined_within_scorings_window() -> None:
    drawn = draw_polygon("-5000 -5000 5000 -5000 5000 5000 -5000 5000", 4, 200, 100)
    assert drawn.shape == "polygon" and drawn.notes == ()
    assert sorted(drawn.outline) == [
        (-200.0, -100.0),
        (-200.0, 200.0),
        (400.0, -100.0),
        (400.0, 200.0),
    ]
    assert fill_area(drawn) == 200 * 100  # the whole frame


def test_a_ring_wholly_beyond_scorings_window_is_scored_but_not_drawn() -> None:
    drawn = draw_polygon("5000 5000 6000 5000 6000 6000", 3, 200, 100)
    assert drawn.shape == "none"
    expected = [(5000, 5000), (6000, 5000), (6000, 6000)]
    assert flat(drawn.vertices) == pytest.approx(
        [c for x, y in expected for c in (x * 200 / 999, y * 100 / 999)]
    )
    assert (drawn.outline, drawn.fill, drawn.notes) == ((), (), (BEYOND,))


def test_a_polyline_leaves_out_vertices_over_a_frame_away() -> None:
    drawn = draw_polygon("-5000 -5000 100 100 200 200 9000 9000 300 100", 4, 999, 999)
    assert drawn.shape == "polyline"
    assert len(drawn.vertices) == 5
    assert drawn.outline == ((100.0, 100.0), (200.0, 200.0), (300.0, 100.0))
    assert drawn.notes[1:] == ("2 vertices are over a frame outside the image: not drawn",)


NOTED: list[tuple[str, int, int, int]] = [
    ("[5]", 3, 640, 480),
    ("1e308 1e308 1.7e308 0 500 500", 3, 2000, 1000),
    ("1e308 0 0 0 999 999 0 999", 4, 2000, 1000),
    ("nan 1 2 3 4 5", 3, 640, 480),
    ("1 2 3 4 5", 3, 640, 480),
    ("-5000 -5000 100 100 200 200 300 300 400 100", 4, 999, 999),
    ("-5000 -5000 100 100 200 200 9000 9000 300 100", 4, 999, 999),
    (" ".join(map(str, spread(20_000))), 8, 640, 480),
    ("no numbers", 8, 640, 480),
    ("5000 5000 6000 5000 6000 6000", 3, 200, 100),
]


@pytest.mark.parametrize(("text", "n", "width", "height"), NOTED, ids=range(len(NOTED)))
def test_notes_are_plain_sentences(text: str, n: int, width: int, height: int) -> None:
    notes = draw_polygon(text, n, width, height).notes
    assert notes
    for note in notes:
        assert re.fullmatch(r"[a-z0-9][^\n]*[^.\s]", note), note
        assert not re.search(r"\b1 (vertices|numbers|values)\b", note), note
        assert not re.search(r"\b(nan|inf)\b", note), note


@pytest.mark.parametrize(
    ("text", "note"),
    [
        ("[5]", "its last list holds 1 number, not 6: not scored"),
        (
            "-5000 -5000 100 100 200 200 300 300 400 100",
            "1 vertex is over a frame outside the image: not drawn",
        ),
    ],
)
def test_one_is_singular(text: str, note: str) -> None:
    assert note in draw_polygon(text, 3, 999, 999).notes


NUMBERS = ["0", "999", "-7", "2.5", "5000", "1e308", "1.7e308", "1e400", "nan", "inf", "-inf"]
tokens = st.sampled_from([*NUMBERS, " ", ", ", "; ", "\n", "[", "]", "(", ")", "x", "."])


@given(st.lists(tokens, max_size=60).map("".join), st.sampled_from([3, 4, 8]))
def test_any_text_draws_without_failing(text: str, n: int) -> None:
    width, height = 2000, 1000
    drawn = draw_polygon(text, n, width, height)
    scored = parse_list(text, 2 * n) is not None
    assert (drawn.shape == "polygon") == (scored and len(drawn.outline) >= 2)
    assert len(drawn.vertices) <= MAX_DRAWN
    for x, y in drawn.outline:
        assert -width <= x <= 2 * width and -height <= y <= 2 * height
    for ring in drawn.fill:
        assert all(0 <= x <= width and 0 <= y <= height for x, y in ring)
    if drawn.shape == "none":
        assert drawn.notes
