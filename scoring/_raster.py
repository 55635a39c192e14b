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

from scoring._window import window_clip

Rle = dict[str, Any]
"""A pycocotools compressed RLE: ``{"size": [h, w], "counts": bytes}``."""


def rasterize(rings: Sequence[Sequence[float]], height: int, width: int) -> Rle:
    """The union of the even-odd fills of ``rings`` (flat ``[x1, y1, …]`` lists in pixels).

    Rings of fewer than three vertices are padded by repeating their first vertex:
    pycocotools would read a 4-number list as a box ``[x, y, w, h]``. A ring with no vertices
    adds nothing. Vertices far outside the frame are clipped first (see ``_window``).
    """
    polygons = []
    for flat in rings:
        ring = window_clip(flat, height, width)
        if len(ring) == 0:
            continue
        if len(ring) < 6:
            ring = ring + ring[:2] * ((6 - len(ring)) // 2)
        polygons.append(ring)
    if not polygons:
        return empty_mask(height, width)
    rles: list[Rle] = coco_mask.frPyObjects(polygons, height, width)
    merged: Rle = rles[0] if len(rles) == 1 else coco_mask.merge(rles)
    return merged


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
