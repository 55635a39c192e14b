"""Box grounding and rejection as the box benchmarks score them (PROTOCOL §10).

A :class:`BoxReader` is one benchmark's whole reading of box answers. It judges an answer in
three steps, each as the benchmark's released evaluation code takes it:

1. **find** the four numbers it writes (:func:`find_box`, one finder per released file);
2. **place** them in the original image's pixels (a :data:`Placer` per benchmark): scaled by the
   configuration's coordinate convention — 0–999 or 0–1000 normalised, 0–1 floats, or pixels of
   the image as sent — or, for GroundingME, tried both as pixels and as units, whatever the
   model's convention; corners put in order or not; clipped to the image, to its last pixel, or
   not at all;
3. **judge**: the IoU with the true box (the best over the placements), "absent" when the box
   found — for RefBench-PRO, the box placed — is all zeros, a hit at ``IoU ≥ τ``, mAcc over the
   benchmark's thresholds.

The ``groundbench`` reader is the lenient one: GroundBench's own list parser (§4), corners in
order, clipped to the image, in the configuration's convention.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from scoring._box_finders import ZERO, Box, ReaderName, find_box

Convention = Literal["norm999", "norm1000", "unit", "pixels"]
# The boxes in original pixels that an answer's numbers are scored as: (numbers, convention,
# width, height, sent_scale) -> one box per reading; the best IoU of them counts.
Placer = Callable[[Box, Convention, int, int, float], tuple[Box, ...]]

# The full scale of each normalised convention (a coordinate of ``scale`` is the far edge).
_SCALE: dict[Convention, float] = {"norm999": 999.0, "norm1000": 1000.0, "unit": 1.0}
# Statements that the target is not in the image, for readers that accept one.
_ABSENT = re.compile(
    r"\b(?:no\s+such\s+(?:object|thing|item|target)|does\s*(?:not|n['’]t)\s+(?:exist|appear)"
    r"|(?:is|are)\s*(?:not|n['’]t)\s+(?:present|visible|in\s+(?:the|this)\s+(?:image|picture))"
    r"|not\s+(?:present|found)\b|there\s+is\s+no\b|(?:cannot|can['’]t|could\s*not|couldn['’]t)"
    r"\s+(?:find|locate|see)|target\s+is\s+absent|absent\s+from|no\s+(?:matching|such)\b)",
    re.IGNORECASE,
)


# -- placing an answer's numbers in pixels ------------------------------------------------------


def to_pixels(
    box: Box, convention: Convention, width: int, height: int, sent_scale: float = 1.0
) -> Box:
    """``box`` as the model wrote it, in pixels of the ``width × height`` original image,
    corners in order and clipped to ``[0, width] × [0, height]`` — Ref-Adv's ``to_abs_xyxy``,
    and the lenient ``groundbench`` reading.

    ``sent_scale`` is the size of the image as sent relative to the original (0.5 for a
    half-resolution variant); it matters only to the ``pixels`` convention.
    """
    x1, y1, x2, y2 = _scaled(box, convention, width, height, sent_scale)
    xa, xb = sorted((x1, x2))
    ya, yb = sorted((y1, y2))
    return (_clip(xa, 0.0, width), _clip(ya, 0.0, height), _clip(xb, 0.0, width),
            _clip(yb, 0.0, height))  # fmt: skip


def _scaled(box: Box, convention: Convention, width: int, height: int, sent_scale: float) -> Box:
    """Scaled as Ref-Adv's and GroundingME's code do it, ``v / 1000 * width`` (the order of
    the operations decides the last bit, and so an IoU that lands on a threshold)."""
    x1, y1, x2, y2 = box
    if convention == "pixels":
        return (x1 / sent_scale, y1 / sent_scale, x2 / sent_scale, y2 / sent_scale)
    if convention == "unit":
        return (x1 * width, y1 * height, x2 * width, y2 * height)
    s = _SCALE[convention]
    return (x1 / s * width, y1 / s * height, x2 / s * width, y2 / s * height)


def _clip(value: float, low: float, high: float) -> float:
    return min(max(value, low), high)


def _place_in_order(
    box: Box, convention: Convention, width: int, height: int, sent_scale: float
) -> tuple[Box, ...]:
    return (to_pixels(box, convention, width, height, sent_scale),)


def _place_groundingme(
    box: Box, convention: Convention, width: int, height: int, sent_scale: float
) -> tuple[Box, ...]:
    """evaluate.py's two candidates, neither ordered nor clipped: the numbers as pixels, and
    ``normalize_bbox``'s units (0–1 when every value is ≤ 1, else 0–999). The configuration's
    convention plays no part; pixels are of the image as sent."""
    units: Convention = "unit" if all(v <= 1 for v in box) else "norm999"
    return (
        _scaled(box, "pixels", width, height, sent_scale),
        _scaled(box, units, width, height, sent_scale),
    )


def _place_refbench_pro(
    box: Box, convention: Convention, width: int, height: int, sent_scale: float
) -> tuple[Box, ...]:
    """``resize_bbox``: ``v * (width / 1000)`` (here the configuration's scale), each value
    clipped to ``[0, width − 1]``, corners left as written."""

    def place(value: float, extent: int) -> float:
        if convention == "pixels":
            scaled = value / sent_scale
        else:
            scaled = value * (extent / _SCALE[convention])
        return max(0.0, min(scaled, float(extent - 1)))

    x1, y1, x2, y2 = box
    return ((place(x1, width), place(y1, height), place(x2, width), place(y2, height)),)


# -- the readers --------------------------------------------------------------------------------


@dataclass(frozen=True)
class RejectionRule:
    """What an answer must do to say "absent"; any one of the allowed signs suffices."""

    no_box: bool = True  # no box at all (GroundingME's ``{"bbox_2d": null}`` among them)
    zero_box: bool = True  # the box [0, 0, 0, 0]
    statement: bool = False  # an explicit statement that the target is absent


@dataclass(frozen=True)
class BoxReader:
    """One benchmark's reading of box answers (find, place, judge) and its accuracy; selected
    by name (:data:`ReaderName`) as an experiment's or ``boxes score``'s ``reader``."""

    name: str
    parsing: ReaderName
    place: Placer
    macc_thresholds: tuple[float, ...]  # the IoU thresholds mAcc averages over
    # Raised whenever the reading changes: a store whose answers an earlier revision read is
    # re-scored, without a call, on its next run.
    revision: int
    rejection: RejectionRule = RejectionRule()
    strict: bool = False  # True: a hit needs IoU > τ; False: IoU ≥ τ
    # RefBench-PRO tests "all zeros" on the box scaled and clipped, the others on the numbers.
    zero_after_placing: bool = False

    @property
    def label(self) -> str:
        """The reader's name as a store records it, e.g. ``refbench-pro reader r2``."""
        return f"{self.name} reader r{self.revision}"


def _steps(first: float, last: float, step: float = 0.05) -> tuple[float, ...]:
    """The thresholds as exact decimals (§10: not ``np.arange``'s 0.6000000000000001)."""
    count = round((last - first) / step) + 1
    return tuple(round(first + k * step, 2) for k in range(count))


BOX_READERS: dict[str, BoxReader] = {
    p.name: p
    for p in (
        # GroundBench's own, lenient box reading: the last list of 4 values (§4).
        BoxReader("groundbench", "groundbench", _place_in_order, _steps(0.5, 0.95), 2),
        # Ref-Adv (run.py): mAcc's thresholds are unstated (decided: 0.5:0.05:0.95, COCO's).
        BoxReader("ref-adv", "ref-adv", _place_in_order, _steps(0.5, 0.95), 2),
        # GroundingME (evaluate.py): the better of its two readings; no mAcc in its tables.
        BoxReader("groundingme", "groundingme", _place_groundingme, _steps(0.5, 0.95), 2),
        # RefBench-PRO (eval_qwen3vl.py): mAcc over 0.5:0.05:0.9.
        BoxReader(
            "refbench-pro",
            "refbench-pro",
            _place_refbench_pro,
            _steps(0.5, 0.9),
            2,
            zero_after_placing=True,
        ),
    )
}


@dataclass(frozen=True)
class BoxJudgement:
    """One answer to one box question, read by one reader."""

    box: Box | None  # the answer's box in original pixels; None: no box, or no usable one
    says_absent: bool  # the answer says the target is absent (by the reader's rule)
    iou: float  # with the true box; 0.0 without a box or on a rejection question
    found: bool | None = None  # the reader found a box, all-zero or null included (None: unknown)

    def hit(self, threshold: float, strict: bool) -> bool:
        return self.iou > threshold if strict else self.iou >= threshold


def says_absent(text: str, box: Box | None, rule: RejectionRule) -> bool:
    """Whether the answer says the target is absent, by ``rule``."""
    if box is None and rule.no_box:
        return True
    if box is not None and rule.zero_box and box == ZERO:
        return True
    return rule.statement and _ABSENT.search(text) is not None


def judge_box(
    text: str,
    truth: Box | None,
    reader: BoxReader,
    convention: Convention,
    width: int,
    height: int,
    sent_scale: float = 1.0,
) -> BoxJudgement:
    """Read one answer. ``truth`` is the true box in pixels, or None on a rejection question.

    A box with a coordinate that is not a finite number (JSON's ``NaN``, ``"inf"`` through
    ``float()``) is a box that matches nothing and does not say "absent" (§10).
    """
    raw = find_box(text, reader.parsing)
    if raw is None:
        return BoxJudgement(None, says_absent(text, None, reader.rejection), 0.0, False)
    if not all(math.isfinite(v) for v in raw):
        return BoxJudgement(None, says_absent(text, raw, reader.rejection), 0.0, True)
    placed = reader.place(raw, convention, width, height, sent_scale)
    tested = placed[0] if reader.zero_after_placing else raw
    absent = says_absent(text, tested, reader.rejection)
    if tested == ZERO:
        return BoxJudgement(None, absent, 0.0, True)
    if truth is None:
        return BoxJudgement(placed[0], absent, 0.0, True)
    ious = [corner_iou(b, truth) for b in placed]
    best = ious.index(max(ious))  # the first of equals, as evaluate.py's ``index(max(…))``
    return BoxJudgement(placed[best], absent, ious[best], True)


def corner_iou(a: Box, b: Box) -> float:
    """IoU of two ``(x1, y1, x2, y2)`` boxes; 0.0 when their union is empty.

    A box whose corners are not in order (``x2 < x1`` or ``y2 < y1``) overlaps nothing, so its
    IoU is 0.0 — what each benchmark's IoU function gives such a box.
    """
    iw = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    ih = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = iw * ih
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


# -- metrics --------------------------------------------------------------------------------


def accuracy_at(judgements: Sequence[BoxJudgement], threshold: float, strict: bool) -> float:
    """Acc@τ in percent over questions that have a target (every one counts in the
    denominator; an answer without a box is a miss)."""
    if not judgements:
        return float("nan")
    return 100.0 * sum(j.hit(threshold, strict) for j in judgements) / len(judgements)


def mean_accuracy(judgements: Sequence[BoxJudgement], reader: BoxReader) -> float:
    """mAcc: Acc@τ averaged over the reader's thresholds, in percent."""
    return _mean(accuracy_at(judgements, t, reader.strict) for t in reader.macc_thresholds)


def rejection_accuracy(judgements: Sequence[BoxJudgement]) -> float:
    """RejAcc in percent over rejection questions: the share of answers that say absent."""
    if not judgements:
        return float("nan")
    return 100.0 * sum(j.says_absent for j in judgements) / len(judgements)


def _mean(values: Iterable[float]) -> float:
    items = list(values)
    return sum(items) / len(items) if items else float("nan")
