"""Scores of one response (PROTOCOL §5)."""

from __future__ import annotations

import math

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from scoring import (
    UNPARSEABLE,
    Distractor,
    Referent,
    score_box,
    score_polygon,
)
from scoring._region import even_odd_region
from tests.scoring.shapes import SHAPES, Shape

FRAME = 999  # in a 999×999 frame one answer unit is one pixel


def frame_referent(part: list[float], distractors: tuple[Distractor, ...] = ()) -> Referent:
    xs, ys = part[0::2], part[1::2]
    bbox = (min(xs), min(ys), max(xs) - min(xs), max(ys) - min(ys))
    return Referent(1, FRAME, FRAME, (tuple(part),), bbox, distractors)


WHOLE_FRAME = frame_referent([0, 0, 999, 0, 999, 999, 0, 999])


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: s.name)
def test_catalogue_legality_and_areas(shape: Shape) -> None:
    score = score_polygon(shape.text, WHOLE_FRAME.reference(len(shape.vertices)))
    assert score.parseable
    assert score.defect == shape.defect
    assert score.legal == (shape.defect is None)
    assert score.legal_iou == (score.iou if score.legal else 0.0)
    # A_i is the whole frame, so iou_part is the answer's raster share of the frame; it differs
    # from the exact clipped area by at most about a pixel along the boundary.
    perimeter = sum(
        math.dist(a, b)
        for a, b in zip(shape.vertices, shape.vertices[1:] + shape.vertices[:1], strict=True)
    )
    assert score.iou_part * FRAME * FRAME == pytest.approx(shape.area, abs=perimeter + 4)
    region = even_odd_region([c for p in shape.vertices for c in p], FRAME, FRAME)
    assert region.area == pytest.approx(shape.area, abs=1e-3)


def test_decimal_tokens_are_illegal_but_scored() -> None:
    reference = WHOLE_FRAME.reference(4)
    integers = score_polygon("100 100 300 100 300 300 100 300", reference)
    decimals = score_polygon("100.0 100 300 100 300 300 100 300.0", reference)
    assert integers.legal and not decimals.legal
    assert decimals.defect == "non-integer"
    assert decimals.iou == integers.iou > 0
    assert decimals.legal_iou == 0.0


def test_unparseable_scores_zero_everywhere() -> None:
    score = score_polygon("I cannot see the object.", WHOLE_FRAME.reference(8))
    assert score == UNPARSEABLE
    assert (score.iou, score.iou_cont, score.legal, score.sel) == (0.0, 0.0, False, False)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "\x00\xff" * 5000,
        "1 2 " * 250_000,
        "[1e400, 2, 3, 4, 5, 6, 7, 8]",
        "nan nan nan nan nan nan nan nan",
        "inf 2 3 4 5 6 7 8",
    ],
    ids=["empty", "binary", "megabyte-of-numbers", "overflow", "nan", "inf"],
)
def test_bad_answers_are_unparseable_not_exceptions(text: str) -> None:
    assert score_polygon(text, WHOLE_FRAME.reference(4)) == UNPARSEABLE


@pytest.mark.parametrize("far", ["1e300", "-1e300", "123456789", "1e-300"])
def test_extreme_but_finite_coordinates_are_scored(far: str) -> None:
    score = score_polygon(f"100 100 {far} 100 300 300 100 300", WHOLE_FRAME.reference(4))
    assert score.parseable and not score.legal
    assert 0.0 <= score.iou <= 1.0 and 0.0 <= score.iou_cont <= 1.0


def test_a_perfect_answer_scores_one() -> None:
    referent = frame_referent([100, 100, 500, 100, 500, 400, 100, 400])
    score = score_polygon("100 100 500 100 500 400 100 400", referent.reference(4))
    assert (score.iou, score.iou_part, score.iou_union) == (1.0, 1.0, 1.0)
    assert score.iou_cont == pytest.approx(1.0)
    assert score.legal and score.sel


def test_normalised_units_map_to_the_frame() -> None:
    # A 640×480 image: x·640/999, y·480/999. The answer's full range is the whole image.
    image = Referent(7, 640, 480, ((0, 0, 640, 0, 640, 480, 0, 480),), (0, 0, 640, 480))
    score = score_polygon("0 0 999 0 999 999 0 999", image.reference(4))
    assert score.iou == 1.0
    assert score.iou_cont == pytest.approx(1.0)


def test_iou_part_and_union_use_the_unreduced_part_and_all_parts() -> None:
    left = (100.0, 100.0, 300.0, 100.0, 300.0, 300.0, 100.0, 300.0, 100.0, 200.0)
    right = (600.0, 100.0, 800.0, 100.0, 800.0, 300.0, 600.0, 300.0)
    referent = Referent(3, FRAME, FRAME, (left, right), (100, 100, 700, 200))
    assert referent.part == left  # five listed vertices beat four
    score = score_polygon("100 100 300 100 300 300 100 300", referent.reference(4))
    assert score.iou_part == pytest.approx(1.0)
    assert score.iou_union == pytest.approx(0.5, abs=0.01)


def test_selection_prefers_the_referent_over_a_distractor() -> None:
    distractor = Distractor(2, ((600.0, 100.0, 800.0, 100.0, 800.0, 300.0, 600.0, 300.0),))
    referent = frame_referent([100, 100, 300, 100, 300, 300, 100, 300], (distractor,))
    reference = referent.reference(4)
    on_target = score_polygon("110 110 310 110 310 310 110 310", reference)
    on_distractor = score_polygon("600 100 800 100 800 300 600 300", reference)
    straddling = score_polygon("250 100 650 100 650 300 250 300", reference)
    nowhere = score_polygon("400 600 500 600 500 700 400 700", reference)
    assert on_target.sel and on_target.iou_distractor == 0.0
    assert not on_distractor.sel and on_distractor.iou_distractor == 1.0
    assert straddling.iou_union == pytest.approx(straddling.iou_distractor)
    assert not nowhere.sel and nowhere.iou_union == 0.0


def test_a_referent_pickles_with_its_cached_references() -> None:
    # Scoring actors receive referents by pickle, with targets and masks already built.
    import pickle

    referent = frame_referent([100, 100, 300, 100, 300, 300, 100, 300])
    before = score_polygon("110 110 310 110 310 310 110 310", referent.reference(4))
    copy = pickle.loads(pickle.dumps(referent))
    assert (4, 0) in copy._references
    assert score_polygon("110 110 310 110 310 310 110 310", copy.reference(4)) == before


# --- laws ------------------------------------------------------------------------------------

REFERENT = Referent(
    9,
    640,
    480,
    ((120.5, 80.2, 400.0, 60.0, 520.3, 300.7, 300.0, 420.9, 90.0, 350.0, 150.0, 200.0),),
    (90.0, 60.0, 430.3, 360.9),
    (Distractor(10, ((450.0, 10.0, 630.0, 10.0, 630.0, 200.0, 450.0, 200.0),)),),
)
lattice = st.tuples(st.integers(0, 999), st.integers(0, 999))


def as_text(points: list[tuple[int, int]]) -> str:
    return ", ".join(f"({x}, {y})" for x, y in points)


@given(st.lists(lattice, min_size=8, max_size=8), st.integers(0, 7), st.booleans())
def test_scores_are_invariant_under_cyclic_shift_and_reversal(
    points: list[tuple[int, int]], shift: int, reverse: bool
) -> None:
    reference = REFERENT.reference(8)
    moved = points[shift:] + points[:shift]
    if reverse:
        moved = moved[::-1]
    a, b = score_polygon(as_text(points), reference), score_polygon(as_text(moved), reference)
    assert (a.iou, a.iou_part, a.iou_union, a.iou_distractor) == (
        b.iou, b.iou_part, b.iou_union, b.iou_distractor
    )  # fmt: skip
    assert a.iou_cont == pytest.approx(b.iou_cont, abs=1e-9)
    assert (a.legal, a.defect, a.sel) == (b.legal, b.defect, b.sel)


@given(st.lists(lattice, min_size=16, max_size=16))
def test_scores_are_bounded_and_consistent(points: list[tuple[int, int]]) -> None:
    score = score_polygon(as_text(points), REFERENT.reference(16))
    for value in (score.iou, score.iou_part, score.iou_union, score.iou_cont, score.iou_distractor):
        assert 0.0 <= value <= 1.0 + 1e-12
    assert score.legal_iou == (score.iou if score.legal else 0.0)
    assert score.sel == (score.iou_union > 0 and score.iou_union > score.iou_distractor)


star_shaped = st.tuples(
    st.lists(st.integers(0, 359), min_size=8, max_size=8, unique=True),
    st.lists(st.integers(60, 300), min_size=8, max_size=8),
).map(
    lambda ar: [
        (round(500 + r * math.cos(math.radians(a))), round(500 + r * math.sin(math.radians(a))))
        for a, r in zip(sorted(ar[0]), ar[1], strict=True)
    ]
)


@given(star_shaped)
def test_raster_and_continuous_iou_agree_on_legal_answers(points: list[tuple[int, int]]) -> None:
    score = score_polygon(as_text(points), REFERENT.reference(8))
    assume(score.legal and score.iou_cont > 0.2)
    assert score.iou == pytest.approx(score.iou_cont, abs=0.05)


# --- box answers -----------------------------------------------------------------------------

SQUARE = frame_referent([100, 100, 300, 100, 300, 300, 100, 300])


def test_box_iou_against_the_coco_box() -> None:
    assert score_box("[100, 100, 300, 300]", SQUARE).box_iou == 1.0
    assert score_box("[300, 300, 100, 100]", SQUARE).box_iou == 1.0  # corners in any order
    assert score_box("100 100 300 200", SQUARE).box_iou == pytest.approx(0.5)
    assert score_box("-500 -500 300 300", SQUARE).box_iou == pytest.approx(40_000 / 300**2)
    assert score_box("500 500 600 600", SQUARE).box_iou == 0.0


def test_box_control_is_the_rectangle_as_an_n_polygon() -> None:
    box = score_box("100 100 300 300", SQUARE, budgets=(8, 16, 64))
    for n, control in box.control.items():
        # A square's perimeter in multiples of N/4 steps puts a vertex on every corner.
        assert control.iou == 1.0, n
        assert control.legal
    assert set(box.control) == {8, 16, 64}


def test_box_control_starts_top_left_and_runs_clockwise() -> None:
    from scoring import box_polygon

    polygon = box_polygon((100.0, 100.0, 300.0, 300.0), 8, FRAME, FRAME)
    assert polygon.values == (100, 100, 200, 100, 300, 100, 300, 200,
                              300, 300, 200, 300, 100, 300, 100, 200)  # fmt: skip


def test_unparseable_box_has_unparseable_controls() -> None:
    box = score_box("no box", SQUARE, budgets=(8, 16))
    assert not box.parseable and box.box_iou == 0.0
    assert box.control == {8: UNPARSEABLE, 16: UNPARSEABLE}


def test_a_degenerate_box_scores_zero_control_and_is_illegal() -> None:
    control = score_box("200 100 200 300", SQUARE, budgets=(8,)).control[8]
    assert control.parseable and control.iou == 0.0 and not control.legal
