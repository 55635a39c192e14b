"""Frozen per-question metadata (PROTOCOL §8): D, Q, RS, semantic group, phrase length, and the
tertile bins and composite difficulty computed once over a cohort."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from scoring import Referent, ring_from_flat, shoelace_area

Group = Literal["person", "animal", "vehicle", "outdoor", "food", "indoor"]
GROUPS: tuple[Group, ...] = ("person", "animal", "vehicle", "outdoor", "food", "indoor")
Difficulty = Literal["easy", "medium", "hard"]
DIFFICULTIES: tuple[Difficulty, ...] = ("easy", "medium", "hard")
D_BINS = ("D1", "D2", "D3+")

# PROTOCOL §8 (decided): six groups over the twelve COCO supercategories.
_GROUP_OF_SUPERCATEGORY: dict[str, Group] = {
    "person": "person",
    "animal": "animal",
    "vehicle": "vehicle",
    "outdoor": "outdoor",
    "sports": "outdoor",
    "accessory": "outdoor",
    "food": "food",
    "kitchen": "food",
    "furniture": "indoor",
    "electronic": "indoor",
    "appliance": "indoor",
    "indoor": "indoor",
}


def semantic_group(supercategory: str) -> Group | None:
    """The PROTOCOL §8 group of a COCO supercategory, or None for one outside COCO's twelve."""
    return _GROUP_OF_SUPERCATEGORY.get(supercategory)


def contour_complexity(part: Sequence[float]) -> float:
    """``Q = ℓ² / (4πA)`` of a polygon part: 1 for a circle, larger for longer outlines."""
    ring = ring_from_flat(part)
    perimeter = sum(math.dist(ring[i], ring[(i + 1) % len(ring)]) for i in range(len(ring)))
    return perimeter**2 / (4.0 * math.pi * abs(shoelace_area(ring)))


def relative_scale(referent: Referent) -> float:
    """``RS``: the target's box area over the image area."""
    _, _, w, h = referent.bbox
    return (w * h) / (referent.width * referent.height)


def d_bin(d: int) -> str:
    """``D1``, ``D2`` or ``D3+`` for ``d`` other same-category instances (d ≥ 1)."""
    return D_BINS[min(d, 3) - 1]


@dataclass(frozen=True)
class Raw:
    """The metadata of one question that needs no other question."""

    d: int
    q: float
    rs: float


def raw_metadata(referent: Referent) -> Raw:
    """``D``, ``Q`` (of the selected part) and ``RS`` of one referent.

    Floats are rounded to 12 significant digits so that the cohort hash does not depend on
    the last bit of a platform's ``hypot``.
    """
    return Raw(
        d=len(referent.distractors),
        q=_stable(contour_complexity(referent.part)),
        rs=_stable(relative_scale(referent)),
    )


class Tertiles(BaseModel):
    """The two cut points of a cohort-wide tertile split: bin 1 ``≤ low``, bin 3 ``> high``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    low: float
    high: float

    @classmethod
    def of(cls, values: Sequence[float]) -> Tertiles:
        """Cut points at the 1/3 and 2/3 quantiles (numpy's default linear interpolation)."""
        low, high = np.quantile(np.asarray(values, dtype=np.float64), [1 / 3, 2 / 3])
        return cls(low=_stable(float(low)), high=_stable(float(high)))

    def bin(self, value: float) -> int:
        """1, 2 or 3."""
        return 1 if value <= self.low else 2 if value <= self.high else 3


class Thresholds(BaseModel):
    """The cohort's frozen tertile thresholds for ``Q`` and ``RS``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    q: Tertiles
    rs: Tertiles


def difficulty(d: int, q_bin: int, rs_bin: int) -> Difficulty:
    """PROTOCOL §8 (decided): a point each for D3+, Q3 and RS1; 0 easy, 1 medium, ≥ 2 hard."""
    points = int(d >= 3) + int(q_bin == 3) + int(rs_bin == 1)
    return DIFFICULTIES[min(points, 2)]


def _stable(x: float) -> float:
    return float(f"{x:.12g}")
