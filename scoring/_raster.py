"""Rasterisation ``R(·)`` and mask IoU (PROTOCOL §3), through pycocotools.

pycocotools samples pixel centres on a 0.2-px grid, fills a self-intersecting ring by the
even-odd rule and clips everything outside the image away. Its RLE masks let IoU be computed
run by run in C, without ever decoding a ``H×W`` array.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from pycocotools import mask as coco_mask

Rle = dict[str, Any]
"""A pycocotools compressed RLE: ``{"size": [h, w], "counts": bytes}``."""

# Vertices farther than one frame outside the image are clipped before pycocotools sees them:
# its C code rounds ``5·x + 0.5`` to an int (overflow for huge answers) and allocates one
# boundary sample per 0.2 px of every edge. Clipping against a convex window keeps the even-odd
# region inside it, so the mask within the frame does not change; only the new vertices on the
# window's border are rounded to the 0.2-px grid, at least one frame away from any pixel.
# (decided)
_WINDOW_MARGIN = 1.0


def rasterize(rings: Sequence[Sequence[float]], height: int, width: int) -> Rle:
    """The union of the even-odd fills of ``rings`` (flat ``[x1, y1, …]`` lists in pixels).

    Rings of fewer than three vertices are padded by repeating their first vertex:
    pycocotools would read a 4-number list as a box ``[x, y, w, h]``. A ring with no vertices
    adds nothing.
    """
    polygons = []
    for flat in rings:
        ring = _within_window(flat, height, width)
        if len(ring) == 0:
            continue
        if len(ring) < 6:
            ring = ring + ring[:2] * ((6 - len(ring)) // 2)
        polygons.append(ring)
    if not polygons:
        return empty_mask(height, width)
    rles = coco_mask.frPyObjects(polygons, height, width)
    return rles[0] if len(rles) == 1 else coco_mask.merge(rles)


def empty_mask(height: int, width: int) -> Rle:
    """A mask with no pixel set."""
    encoded: Rle = coco_mask.encode(np.zeros((height, width, 1), dtype=np.uint8, order="F"))[0]
    return encoded


def mask_area(rle: Rle) -> int:
    """Number of pixels set in ``rle``."""
    return int(coco_mask.area(rle))


def mask_ious(mask: Rle, others: Sequence[Rle]) -> list[float]:
    """IoU of ``mask`` with each of ``others``, in one pass through pycocotools' C loop.

    The IoU of two empty masks is 0 (PROTOCOL §3), as pycocotools returns.
    """
    if not others:
        return []
    row = coco_mask.iou([mask], list(others), [0] * len(others))[0]
    return [float(v) for v in row]


def mask_iou(a: Rle, b: Rle) -> float:
    """IoU of two masks; 0 when both are empty."""
    return mask_ious(a, [b])[0]


def _within_window(flat: Sequence[float], height: int, width: int) -> list[float]:
    xs = flat[0::2]
    ys = flat[1::2]
    x0, x1 = -_WINDOW_MARGIN * width, (1 + _WINDOW_MARGIN) * width
    y0, y1 = -_WINDOW_MARGIN * height, (1 + _WINDOW_MARGIN) * height
    if xs and min(xs) >= x0 and max(xs) <= x1 and min(ys) >= y0 and max(ys) <= y1:
        return [float(c) for c in flat]
    points = list(zip(xs, ys, strict=True))
    for axis, bound, keep_above in ((0, x0, True), (0, x1, False), (1, y0, True), (1, y1, False)):
        points = _clip_half_plane(points, axis, bound, keep_above)
    return [c for p in points for c in p]


def _clip_half_plane(
    points: list[tuple[float, float]], axis: int, bound: float, keep_above: bool
) -> list[tuple[float, float]]:
    """One Sutherland–Hodgman pass: the ring cut to one side of ``point[axis] = bound``."""

    def inside(p: tuple[float, float]) -> bool:
        return p[axis] >= bound if keep_above else p[axis] <= bound

    out: list[tuple[float, float]] = []
    for k, current in enumerate(points):
        previous = points[k - 1]
        if inside(current) != inside(previous):
            t = (bound - previous[axis]) / (current[axis] - previous[axis])
            crossing = (
                previous[0] + t * (current[0] - previous[0]),
                previous[1] + t * (current[1] - previous[1]),
            )
            out.append((bound, crossing[1]) if axis == 0 else (crossing[0], bound))
        if inside(current):
            out.append(current)
    return out
