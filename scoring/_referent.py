"""What an answer is judged against: a question's referent and its per-budget references."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from scoring._errors import AnnotationError, CrowdAnnotationError, DegeneratePartError, RingError
from scoring._raster import Rle, rasterize
from scoring._region import Region, even_odd_region
from scoring._targets import (
    BUDGETS,
    Point,
    canonical_targets,
    check_part,
    ring_from_flat,
    select_part,
)

Parts = tuple[tuple[float, ...], ...]


@dataclass(frozen=True)
class Distractor:
    """A same-category instance in the referent's image: its annotation id and polygon parts."""

    ann_id: int
    parts: Parts


@dataclass(frozen=True, eq=False)
class Referent:
    """One question's referent, as scoring needs it; masks and targets are built on first use.

    Attributes
    ----------
    ann_id
        The referent's COCO annotation id (named in every error about it).
    width, height
        The annotation frame, in pixels.
    parts
        The referent's polygon parts, flat ``[x1, y1, …]`` tuples in pixels.
    bbox
        The COCO box ``(x, y, w, h)`` in pixels.
    distractors
        The other instances of the referent's category in the image.

    Raises
    ------
    AnnotationError
        A part is not a list of finite coordinate pairs (of the referent or of a distractor).
    DegeneratePartError
        The selected part has fewer than 3 distinct vertices or zero area.
    """

    ann_id: int
    width: int
    height: int
    parts: Parts
    bbox: tuple[float, float, float, float]
    distractors: tuple[Distractor, ...] = ()
    _references: dict[tuple[int, int], Reference] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        if self.width <= 0 or self.height <= 0:
            raise AnnotationError(self.ann_id, f"image size {self.width}×{self.height}")
        _check_parts(self.ann_id, self.parts)
        for d in self.distractors:
            _check_parts(d.ann_id, d.parts)
        try:
            check_part(ring_from_flat(self.part))
        except DegeneratePartError as exc:
            raise DegeneratePartError(self.ann_id, f"selected part: {exc.reason}") from None

    @classmethod
    def from_coco(
        cls,
        annotation: Mapping[str, Any],
        image: Mapping[str, Any],
        distractors: Iterable[Mapping[str, Any]] = (),
    ) -> Referent:
        """Build from COCO ``instances.json`` records: the annotation, its image, and the other
        instances of its category in that image.

        Raises
        ------
        CrowdAnnotationError
            The referent or a distractor has an RLE (crowd) segmentation.
        """
        try:
            ann_id = int(annotation["id"])
            width, height = int(image["width"]), int(image["height"])
            bbox = annotation["bbox"]
        except (KeyError, TypeError, ValueError) as exc:
            raise AnnotationError(
                annotation.get("id"), f"missing or malformed field {exc}"
            ) from None
        return cls(
            ann_id=ann_id,
            width=width,
            height=height,
            parts=_polygon_parts(annotation),
            bbox=_bbox(ann_id, bbox),
            distractors=tuple(Distractor(int(d["id"]), _polygon_parts(d)) for d in distractors),
        )

    @cached_property
    def part_index(self) -> int:
        """Index of the selected part (the most listed vertices; ties to the lowest index)."""
        return select_part(self.parts)

    @property
    def part(self) -> tuple[float, ...]:
        """The selected part, flat."""
        return self.parts[self.part_index]

    @cached_property
    def part_mask(self) -> Rle:
        """``A_i``: the rasterised selected part, unreduced."""
        return rasterize([self.part], self.height, self.width)

    @cached_property
    def union_mask(self) -> Rle:
        """The rasterised union of all the referent's parts: the referent's mask."""
        if len(self.parts) == 1:
            return self.part_mask
        return rasterize(self.parts, self.height, self.width)

    @cached_property
    def distractor_masks(self) -> tuple[Rle, ...]:
        """The rasterised mask (all parts) of each distractor, in order."""
        return tuple(rasterize(d.parts, self.height, self.width) for d in self.distractors)

    def reference(self, n: int, phase: int = 0) -> Reference:
        """Everything needed to score an ``n``-vertex answer against ``G_N`` at ``phase``."""
        key = (n, phase)
        if key not in self._references:
            self._build_references((n,) if n not in BUDGETS else BUDGETS, phase)
        return self._references[key]

    def _build_references(self, budgets: Sequence[int], phase: int) -> None:
        # One resampling run serves every budget (see _targets), so build them all at once.
        for n, target in canonical_targets(self.part, budgets, phase).items():
            self._references[(n, phase)] = Reference.build(self, n, phase, target)


@dataclass(frozen=True, eq=False)
class Reference:
    """The masks and regions an ``n``-vertex answer is scored against, built once per budget.

    ``masks`` stacks, for one pass of pycocotools' IoU: ``G_N``, the selected part ``A_i``,
    the union of all parts (only when there are several), then each distractor. (Sending
    every distractor through the one call measured faster than skipping those whose box the
    answer misses: pycocotools makes that check itself, in C.)
    """

    referent: Referent
    n: int
    phase: int
    target: tuple[Point, ...]
    target_mask: Rle
    target_region: Region
    masks: tuple[Rle, ...]

    @classmethod
    def build(cls, referent: Referent, n: int, phase: int, target: tuple[Point, ...]) -> Reference:
        r = referent
        flat = [c for p in target for c in p]
        target_mask = rasterize([flat], r.height, r.width)
        union = (r.union_mask,) if len(r.parts) > 1 else ()
        return cls(
            referent=r,
            n=n,
            phase=phase,
            target=target,
            target_mask=target_mask,
            target_region=even_odd_region(flat, r.width, r.height),
            masks=(target_mask, r.part_mask, *union, *r.distractor_masks),
        )

    @property
    def distractor_offset(self) -> int:
        """Index in ``masks`` of the first distractor."""
        return 3 if len(self.referent.parts) > 1 else 2


def _check_parts(ann_id: int, parts: Parts) -> None:
    if not parts:
        raise AnnotationError(ann_id, "no polygon parts")
    for k, part in enumerate(parts):
        try:
            ring_from_flat(part)
        except RingError as exc:
            raise AnnotationError(ann_id, f"part {k}: {exc}") from None


def _polygon_parts(annotation: Mapping[str, Any]) -> Parts:
    ann_id = annotation.get("id")
    segmentation = annotation.get("segmentation")
    if annotation.get("iscrowd") or isinstance(segmentation, Mapping):
        raise CrowdAnnotationError(
            ann_id, "crowd (RLE) segmentation; only polygon parts can be scored"
        )
    if not isinstance(segmentation, list) or not all(isinstance(p, list) for p in segmentation):
        raise AnnotationError(ann_id, "segmentation must be a list of polygon parts")
    try:
        return tuple(tuple(float(c) for c in part) for part in segmentation)
    except (TypeError, ValueError) as exc:
        raise AnnotationError(ann_id, f"segmentation coordinates must be numbers: {exc}") from None


def _bbox(ann_id: int, bbox: Sequence[float]) -> tuple[float, float, float, float]:
    if len(bbox) != 4:
        raise AnnotationError(ann_id, f"bbox must have 4 numbers, got {len(bbox)}")
    x, y, w, h = (float(v) for v in bbox)
    return (x, y, w, h)
