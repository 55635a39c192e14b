"""Rasterisation R(·) with pycocotools (PROTOCOL §3)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pycocotools import mask as coco_mask

from scoring import mask_area, mask_iou, rasterize


def decode(rle: dict[str, object]) -> np.ndarray:
    return np.asarray(coco_mask.decode([rle])[:, :, 0], dtype=bool)


def test_pycocotools_reads_four_numbers_as_a_box_so_rasterize_pads_them() -> None:
    # The hazard: [x1, y1, x2, y2] for a two-vertex ring becomes the box x=2, y=2, w=8, h=8.
    try:
        as_box = coco_mask.frPyObjects([[2, 2, 8, 8]], 20, 20)[0]
    except TypeError:  # pycocotools 2.0.11 sends it to frBbox, which then wants an ndarray
        as_box = coco_mask.frPyObjects(np.array([[2, 2, 8, 8]], dtype=float), 20, 20)[0]
    assert coco_mask.area(as_box) == 64
    assert mask_area(rasterize([[2, 2, 8, 8]], 20, 20)) == 0  # a segment fills nothing


def test_bow_tie_is_filled_even_odd() -> None:
    mask = decode(rasterize([[0, 0, 10, 10, 10, 0, 0, 10]], 10, 10))
    assert mask.sum() == 50  # the two triangles; the crossing adds no pixels
    # Rows are y: the triangles sit left and right of the crossing at (5, 5).
    assert mask[5, 2] and mask[5, 8] and not mask[2, 5] and not mask[8, 5]


def test_a_ring_traversed_twice_fills_nothing() -> None:
    square = [2, 2, 8, 2, 8, 8, 2, 8]
    assert mask_area(rasterize([square * 2], 10, 10)) == 0


def test_pixel_centres_are_sampled() -> None:
    assert mask_area(rasterize([[0, 0, 4, 0, 4, 3, 0, 3]], 10, 10)) == 12
    assert mask_area(rasterize([[0, 0, 10, 0, 10, 10, 0, 10]], 10, 10)) == 100


def test_everything_outside_the_frame_is_clipped_away() -> None:
    inside = rasterize([[0, 0, 5, 0, 5, 5, 0, 5]], 10, 10)
    overhanging = rasterize([[-50, -50, 5, -50, 5, 5, -50, 5]], 10, 10)
    assert mask_iou(inside, overhanging) == 1.0
    assert mask_area(rasterize([[20, 20, 30, 20, 30, 30]], 10, 10)) == 0


@pytest.mark.parametrize("far", [1e4, 1e9, 1e300])
def test_far_vertices_are_clipped_before_pycocotools(far: float) -> None:
    # A triangle with one vertex far to the right: inside the frame it is the band between the
    # two long edges, which the window clip keeps (only rounding on the window border moves).
    tri = [0.0, 2.0, far, 5.0, 0.0, 8.0]
    mask = decode(rasterize([tri], 10, 10))
    assert mask.sum() == 60
    assert mask[:, 0].sum() == 6


def test_several_parts_are_united() -> None:
    a = [0, 0, 4, 0, 4, 4, 0, 4]
    b = [2, 2, 6, 2, 6, 6, 2, 6]
    assert mask_area(rasterize([a, b], 10, 10)) == 16 + 16 - 4


def test_empty_masks_have_iou_zero() -> None:
    empty = rasterize([], 10, 10)
    assert mask_area(empty) == 0
    assert mask_iou(empty, empty) == 0.0


points = st.lists(st.tuples(st.integers(-20, 120), st.integers(-20, 120)), min_size=3, max_size=40)


@given(points, points)
def test_iou_is_symmetric(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> None:
    ra = rasterize([[c for p in a for c in p]], 100, 100)
    rb = rasterize([[c for p in b for c in p]], 100, 100)
    assert mask_iou(ra, rb) == mask_iou(rb, ra)


@given(points)
def test_iou_with_itself_is_one_when_not_empty(a: list[tuple[int, int]]) -> None:
    ra = rasterize([[c for p in a for c in p]], 100, 100)
    assert mask_iou(ra, ra) == (1.0 if mask_area(ra) else 0.0)
