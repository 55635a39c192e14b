"""One stored answer scored against every reference at once (PROTOCOL §5, re-scoring).

The run scores an answer against phase 0's ``G_N`` (with the part, the union and the
continuous IoU beside it). Re-scoring asks how the same answer fares against the other
references the paper's audits use: ``G_N`` built from each of the eight sampling phases,
the unreduced selected part, the union of all parts, and phase 0's ``G_N`` under the
continuous-area backend. The answer is parsed, placed and rasterised once, and its raster
meets every raster reference in one pass of pycocotools' C loop.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from scoring._parse import parse_list
from scoring._raster import mask_ious
from scoring._referent import Referent
from scoring._score import place_answer
from scoring._targets import PHASES

PHASE_REFERENCES: tuple[str, ...] = tuple(f"phase{k}" for k in range(PHASES))
"""Re-scored references: ``G_N`` at each sampling phase (``phase0`` is the official target)."""
ALTERNATE_REFERENCES: tuple[str, ...] = ("part", "union", "continuous")
"""Re-scored references: the unreduced selected part, the union of all parts (both rasterised),
and ``G_N`` (phase 0) under the continuous-area backend."""
REFERENCES: tuple[str, ...] = (*PHASE_REFERENCES, *ALTERNATE_REFERENCES)
"""Every reference a stored answer is re-scored against, in the order they are reported."""


def score_references(text: str, referent: Referent, n: int) -> Mapping[str, float] | None:
    """The IoU (a fraction) of an ``n``-vertex answer with each of :data:`REFERENCES`.

    ``phaseK`` is the filled IoU with ``R(G_N)`` built at sampling phase ``K``; ``part`` and
    ``union`` the filled IoU with the rasterised selected part ``A_i`` and with all parts;
    ``continuous`` the continuous-area IoU with phase 0's ``G_N``. ``phase0``, ``part``,
    ``union`` and ``continuous`` are :func:`score_polygon`'s ``iou``, ``iou_part``,
    ``iou_union`` and ``iou_cont``. ``None`` when the answer is unparseable (the same parser,
    ``2n`` values): it has no IoU to re-score. The mapping is read-only.
    """
    parsed = parse_list(text, 2 * n)
    if parsed is None:
        return None
    answer = place_answer(parsed, referent)
    phases = [referent.reference(n, k) for k in range(PHASES)]
    # A single-part referent's union is its part: one IoU serves both, as in score_parsed.
    several = len(referent.parts) > 1
    extra = (referent.part_mask, referent.union_mask) if several else (referent.part_mask,)
    ious = mask_ious(answer.mask, [r.target_mask for r in phases] + list(extra))
    part = ious[PHASES]
    union = ious[PHASES + 1] if several else part
    continuous = answer.continuous_iou(phases[0].target_region)
    return MappingProxyType(
        dict(zip(REFERENCES, (*ious[:PHASES], part, union, continuous), strict=True))
    )
