"""One answer scored against every reference at once (PROTOCOL §5, re-scoring)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scoring import (
    ALTERNATE_REFERENCES,
    PHASE_REFERENCES,
    PHASES,
    REFERENCES,
    Distractor,
    Referent,
    score_polygon,
    score_references,
)
from tests.scoring.shapes import SHAPES, Shape

FRAME = 999  # one answer unit is one pixel

# A square with its four edge midpoints listed: C0 M0 C1 M1 C2 M2 C3 M3 (side 800, area
# 640,000). Down to 4 vertices with the sampling origin pinned, the midpoints go first (zero
# area), then the corner whose triangle is smallest: the one beside the pinned end. So each
# phase cuts one corner triangle (area 160,000) off the square, a different one each time:
#   phase 0 cuts C3 (C2–M3)  1 cuts C1 (M0–C2)  2 cuts C0 (C3–M0)  3 cuts C2 (M1–C3)
#   phase 4 cuts C1 (C0–M1)  5 cuts C3 (M2–C0)  6 cuts C2 (C1–M2)  7 cuts C0 (M3–C1)
SQUARE = (100, 100, 500, 100, 900, 100, 900, 500, 900, 900, 500, 900, 100, 900, 100, 500)
PHASED = Referent(7, FRAME, FRAME, (SQUARE,), (100.0, 100.0, 800.0, 800.0))

# The 200 × 200 square in corner C3: wholly inside the triangles that phases 0 and 5 cut
# off; 10,000 of it inside those of phases 2 and 3 (∫ (x/2 − 50) dx over 100..300); clear of
# the others. Against a target of area 480,000: IoU 0, or 30,000 / 490,000, or 40,000 / 480,000.
CORNER = "[100, 700, 300, 700, 300, 900, 100, 900]"
BY_HAND = {
    "phase0": 0.0, "phase1": 1 / 12, "phase2": 3 / 49, "phase3": 3 / 49,
    "phase4": 1 / 12, "phase5": 0.0, "phase6": 1 / 12, "phase7": 1 / 12,
    "part": 1 / 16, "union": 1 / 16, "continuous": 0.0,
}  # fmt: skip


def test_the_references_are_the_eight_phases_then_the_alternates() -> None:
    assert (*PHASE_REFERENCES, *ALTERNATE_REFERENCES) == REFERENCES
    assert tuple(f"phase{k}" for k in range(PHASES)) == PHASE_REFERENCES and PHASES == 8
    assert ALTERNATE_REFERENCES == ("part", "union", "continuous")


def test_each_phase_cuts_its_own_corner() -> None:
    """The hand-made referent really gives eight different targets."""
    targets = {PHASED.reference(4, k).target for k in range(PHASES)}
    assert len(targets) == PHASES
    assert PHASED.reference(4, 0).target == ((100, 100), (900, 100), (900, 900), (100, 500))
    assert PHASED.reference(4, 5).target == ((500, 900), (100, 100), (900, 100), (900, 900))


def test_phases_give_the_hand_computed_ious() -> None:
    ious = score_references(CORNER, PHASED, 4)
    assert ious is not None and tuple(ious) == REFERENCES
    for name, expected in BY_HAND.items():
        # Raster IoUs: pycocotools samples 0.2-px steps along the diagonal cuts.
        assert ious[name] == pytest.approx(expected, abs=2e-3), name
    assert ious["continuous"] == 0.0  # disjoint regions, exactly


def test_the_mapping_is_read_only() -> None:
    ious = score_references(CORNER, PHASED, 4)
    assert ious is not None
    with pytest.raises(TypeError):
        ious["phase0"] = 1.0  # type: ignore[index]


@pytest.mark.parametrize(
    "text", ["I cannot see it.", "", "[100, 700, 300, 700, 300, 900]", "nan " * 8]
)
def test_an_unparseable_answer_has_no_ious(text: str) -> None:
    assert score_references(text, PHASED, 4) is None


# Two parts (the union differs from the part) and a distractor, in a frame that is not square,
# so that every scale and mask of score_polygon is exercised.
TWO_PARTS = Referent(
    11,
    640,
    480,
    ((40.0, 60.0, 300.0, 40.0, 330.0, 200.0, 210.0, 330.0, 120.0, 300.0, 60.0, 180.0,
      50.0, 120.0, 45.0, 90.0, 42.0, 75.0),
     (400.0, 300.0, 560.0, 310.0, 520.0, 440.0)),
    (40.0, 40.0, 520.0, 400.0),
    (Distractor(12, ((350.0, 50.0, 600.0, 60.0, 590.0, 250.0, 360.0, 240.0),)),),
)  # fmt: skip
lattice = st.tuples(st.integers(0, 999), st.integers(0, 999))


def _agree(text: str, referent: Referent, n: int) -> None:
    ious = score_references(text, referent, n)
    score = score_polygon(text, referent.reference(n))
    assert (ious is None) == (not score.parseable)
    if ious is None:
        return
    # The same computation on the same raster and region: equal, not merely close.
    assert ious["phase0"] == score.iou
    assert ious["part"] == score.iou_part
    assert ious["union"] == score.iou_union
    assert ious["continuous"] == score.iou_cont


@given(st.lists(lattice, min_size=8, max_size=8), st.sampled_from([TWO_PARTS, PHASED]))
def test_law_phase0_part_union_continuous_are_score_polygons(
    vertices: list[tuple[int, int]], referent: Referent
) -> None:
    _agree(" ".join(f"{x} {y}" for x, y in vertices), referent, 8)


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: s.name)
def test_the_shape_catalogue_agrees_with_score_polygon(shape: Shape) -> None:
    _agree(shape.text, TWO_PARTS, len(shape.vertices))


def test_a_single_part_union_is_its_part() -> None:
    ious = score_references("[150, 150, 850, 150, 850, 850, 150, 850]", PHASED, 4)
    assert ious is not None and ious["union"] == ious["part"] > 0.7
