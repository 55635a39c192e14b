"""Scores of one response (PROTOCOL §5): a polygon answer, or a box answer and its control."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import numpy.typing as npt
import shapely

from scoring._parse import ParsedList, parse_list
from scoring._raster import Rle, mask_ious, rasterize
from scoring._referent import Reference, Referent
from scoring._region import Region, even_odd_region, region_iou
from scoring._targets import BUDGETS, shoelace_area
from scoring._window import window_clip

SCALE = 999.0
"""Normalised answers run from 0 to 999 across the image; ``x`` maps to ``x·W/999`` pixels."""

Defect = Literal[
    "unparseable",
    "non-integer",
    "out-of-range",
    "duplicate-vertex",
    "self-intersecting",
    "zero-area",
]
"""Why an answer is not a legal polygon: the first rule it breaks, in this order."""


@dataclass(frozen=True, slots=True)
class PolygonScore:
    """The per-response record of a polygon answer; IoUs are fractions in ``[0, 1]``.

    Attributes
    ----------
    parseable
        The answer's last list held exactly ``2N`` finite values.
    iou
        Filled IoU of the answer's raster with ``R(G_N)``.
    iou_part
        ... with ``A_i``, the unreduced selected part ("IoUp").
    iou_union
        ... with the union of all the referent's parts (the referent's mask).
    iou_cont
        Continuous-area IoU (Clipper) of the answer's even-odd region, clipped to the frame,
        with ``G_N``'s.
    iou_distractor
        The largest raster IoU with a same-category distractor's mask (0 with none).
    legal
        Integer literals in ``0..999``, distinct vertices, a simple ring, positive area.
    legal_iou
        ``iou`` if legal, else 0.
    sel
        Target preference: ``iou_union > 0`` and ``iou_union > iou_distractor`` (decided).
    defect
        The first legality rule broken, ``None`` when legal.
    """

    parseable: bool
    iou: float = 0.0
    iou_part: float = 0.0
    iou_union: float = 0.0
    iou_cont: float = 0.0
    iou_distractor: float = 0.0
    legal: bool = False
    legal_iou: float = 0.0
    sel: bool = False
    defect: Defect | None = None


UNPARSEABLE = PolygonScore(parseable=False, defect="unparseable")
"""The score of every unparseable response: zero on every IoU, neither legal nor selected."""


@dataclass(frozen=True, slots=True)
class BoxScore:
    """The per-response record of a box answer.

    Attributes
    ----------
    parseable
        The answer's last list held exactly 4 finite values.
    box_iou
        IoU of the answered rectangle (clipped to the frame) with the COCO box.
    control
        The box-derived control per budget: the rectangle as the ``N``-vertex polygon answer it
        stands for, scored against ``G_N``.
    """

    parseable: bool
    box_iou: float = 0.0
    control: Mapping[int, PolygonScore] = field(default_factory=dict)


def score_polygon(text: str, reference: Reference) -> PolygonScore:
    """Score one polygon answer against ``G_N`` (``reference = referent.reference(N)``).

    An unparseable answer scores :data:`UNPARSEABLE`; nothing about the text raises.
    """
    parsed = parse_list(text, 2 * reference.n)
    if parsed is None:
        return UNPARSEABLE
    return score_parsed(parsed, reference)


def score_parsed(parsed: ParsedList, reference: Reference) -> PolygonScore:
    """Score an already parsed list of ``2N`` values (the answer's own 0–999 units)."""
    if len(parsed.values) != 2 * reference.n:
        raise ValueError(f"{len(parsed.values)} values for a {reference.n}-vertex reference")
    answer = place_answer(parsed, reference.referent)
    ious = mask_ious(answer.mask, reference.masks)
    iou, iou_part = ious[0], ious[1]
    k = reference.distractor_offset
    iou_union = ious[2] if k == 3 else iou_part
    iou_distractor = max(ious[k:], default=0.0)
    defect = legality_defect(parsed, answer.units)
    iou_cont = answer.continuous_iou(reference.target_region)
    return PolygonScore(
        parseable=True,
        iou=iou,
        iou_part=iou_part,
        iou_union=iou_union,
        iou_cont=iou_cont,
        iou_distractor=iou_distractor,
        legal=defect is None,
        legal_iou=iou if defect is None else 0.0,
        sel=iou_union > 0.0 and iou_union > iou_distractor,
        defect=defect,
    )


@dataclass(frozen=True, eq=False)
class PlacedAnswer:
    """A parsed answer placed in its referent's frame: what every IoU of it starts from.

    Placed once per answer, so scoring it against several references (the run's record, or
    every reference of a re-score) parses, scales and rasterises it only once.

    Attributes
    ----------
    units
        The ``N × 2`` vertices in the answer's own 0–999 units.
    flat
        The ring in pixels, flat ``[x1, y1, …]``.
    mask
        ``R(P̂)``: the ring's clipped cyclic even-odd fill.
    """

    units: npt.NDArray[np.float64]
    flat: list[float]
    mask: Rle
    width: int
    height: int

    def continuous_iou(self, target: Region) -> float:
        """Continuous-area IoU of the answer's even-odd region (clipped to the frame) with
        ``target``'s."""
        return region_iou(even_odd_region(self.flat, self.width, self.height), target)


def place_answer(parsed: ParsedList, referent: Referent) -> PlacedAnswer:
    """Map a parsed answer's 0–999 units to ``referent``'s pixels and rasterise it."""
    units = np.asarray(parsed.values, dtype=float).reshape(-1, 2)
    flat = placed_ring(parsed.values, referent.width, referent.height)
    mask = rasterize([flat], referent.height, referent.width)
    return PlacedAnswer(units, flat, mask, referent.width, referent.height)


def placed_ring(values: Sequence[float], width: int, height: int) -> list[float]:
    """A ring of finite 0–999 values (flat ``[x1, y1, …]``) in a ``width × height`` frame's
    pixels, clipped to the window one frame beyond each side (§3).

    Clipped in units, then mapped: a parseable value may be as large as 1.7·10³⁰⁸, which in a
    frame wider than 999 px overflows to infinity, and clipping a ring with an infinite vertex
    makes NaNs (pycocotools then allocated without bound). The window in units is the
    window in pixels scaled by ``999/W``, ``999/H``, so clipping first is the same ring.

    >>> [round(v) for v in placed_ring([0, 0, 1e308, 500, 0, 999], 2000, 100)]
    [0, 0, 4000, 0, 4000, 100, 0, 100]
    """
    clipped = window_clip(values, int(SCALE), int(SCALE))
    sx, sy = width / SCALE, height / SCALE  # as ever: x·(W/999), the same rounding
    return [v * (sx if k % 2 == 0 else sy) for k, v in enumerate(clipped)]


def legality_defect(parsed: ParsedList, units: npt.NDArray[np.float64]) -> Defect | None:
    """The first legality rule (PROTOCOL §5) the answer breaks, or ``None`` if it is legal.

    Judged on the answer's own integer lattice: the map to pixels scales each axis by a
    positive factor, which keeps distinctness, simplicity and the sign of the area.
    """
    if not parsed.integers:
        return "non-integer"
    if not parsed.in_range:
        return "out-of-range"
    pairs = list(zip(parsed.values[0::2], parsed.values[1::2], strict=True))
    if len(set(pairs)) < len(pairs):
        return "duplicate-vertex"
    if not shapely.LinearRing(units).is_simple:
        return "self-intersecting"
    if shoelace_area(pairs) == 0.0:  # unreachable for a simple ring; kept as the rule
        return "zero-area"
    return None


def score_box(text: str, referent: Referent, budgets: Iterable[int] = BUDGETS) -> BoxScore:
    """Score one box answer ``x1 y1 x2 y2`` (0–999 units) and its box-derived control.

    The rectangle is the one the two corners span, clipped to the frame (decided). The control
    samples its perimeter uniformly in pixels into ``N`` points, from the top-left corner
    clockwise, rounds them to the 0–999 lattice and scores that as a polygon answer (decided).
    """
    budgets = tuple(budgets)
    parsed = parse_list(text, 4)
    if parsed is None:
        return BoxScore(parseable=False, control=dict.fromkeys(budgets, UNPARSEABLE))
    x1, y1, x2, y2 = parsed.values
    sx, sy = referent.width / SCALE, referent.height / SCALE
    left, right = sorted((_clamp(x1 * sx, referent.width), _clamp(x2 * sx, referent.width)))
    top, bottom = sorted((_clamp(y1 * sy, referent.height), _clamp(y2 * sy, referent.height)))
    control = {
        n: score_parsed(
            box_polygon((left, top, right, bottom), n, referent.width, referent.height),
            referent.reference(n),
        )
        for n in budgets
    }
    return BoxScore(
        parseable=True,
        box_iou=box_iou((left, top, right, bottom), referent.bbox),
        control=control,
    )


def box_iou(
    box: tuple[float, float, float, float], coco_bbox: tuple[float, float, float, float]
) -> float:
    """IoU of a ``(left, top, right, bottom)`` rectangle with a COCO ``(x, y, w, h)`` box."""
    left, top, right, bottom = box
    bx, by, bw, bh = coco_bbox
    iw = max(0.0, min(right, bx + bw) - max(left, bx))
    ih = max(0.0, min(bottom, by + bh) - max(top, by))
    inter = iw * ih
    union = (right - left) * (bottom - top) + bw * bh - inter
    return inter / union if union > 0 else 0.0


def box_polygon(
    box: tuple[float, float, float, float], n: int, width: int, height: int
) -> ParsedList:
    """The ``n``-vertex polygon answer a pixel rectangle stands for, on the 0–999 lattice of a
    ``width × height`` image."""
    left, top, right, bottom = box
    w, h = right - left, bottom - top
    perimeter = 2.0 * (w + h)
    # Corners in clockwise order on screen (y grows downwards), starting at the top-left.
    legs = ((left, top, 1.0, 0.0, w), (right, top, 0.0, 1.0, h),
            (right, bottom, -1.0, 0.0, w), (left, bottom, 0.0, -1.0, h))  # fmt: skip
    values: list[float] = []
    for k in range(n):
        s = k * perimeter / n
        for x0, y0, dx, dy, length in legs:
            if s < length:
                px, py = x0 + dx * s, y0 + dy * s
                break
            s -= length
        else:  # rounding carried s past the last leg, which ends at the top-left corner
            px, py = left, top
        values.append(_to_lattice(px, width))
        values.append(_to_lattice(py, height))
    return ParsedList(values=tuple(values), integers=True, in_range=True)


def _to_lattice(pixel: float, size: int) -> float:
    return float(min(999, max(0, math.floor(pixel * SCALE / size + 0.5))))


def _clamp(value: float, size: int) -> float:
    return min(float(size), max(0.0, value))
