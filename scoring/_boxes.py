"""Box grounding and rejection as the box benchmarks define them (PROTOCOL §10).

Three things vary, and each is explicit here rather than buried in a script:

- the **coordinate convention** a model answers in, which belongs to the configuration:
  0–999 or 0–1000 normalised, 0–1 floats, or absolute pixels of the image as sent (a
  half-resolution image's pixels are half the original's);
- the **parsing behaviour** of each benchmark's released evaluation code: which box of an
  answer counts (:func:`find_box`);
- what counts as saying **"absent"** on a rejection question (no box, an all-zero box, an
  explicit statement), how a hit is thresholded, and which thresholds mAcc averages.

Boxes are corners ``(x1, y1, x2, y2)`` in the original image's pixels, clipped to the image.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from scoring._parse import parse_box

Box = tuple[float, float, float, float]
Convention = Literal["norm999", "norm1000", "unit", "pixels"]
BoxParsing = Literal["groundbench", "ref-adv", "groundingme", "refbench-pro"]

ZERO: Box = (0.0, 0.0, 0.0, 0.0)
# The full scale of each normalised convention (a coordinate of ``scale`` is the far edge).
_SCALE: dict[Convention, float] = {"norm999": 999.0, "norm1000": 1000.0, "unit": 1.0}
_FENCED = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)
_BBOX_2D = re.compile(r"\{.*\"bbox_2d\".*\}", re.DOTALL)
_FOUR_NUMBERS = re.compile(r"(-?\d+(?:\.\d+)?)" + r"[\s,]+(-?\d+(?:\.\d+)?)" * 3)
# Within one line, as RefBench-PRO's reader has it: Qwen's multi-line JSON list
# ``[\n {"bbox_2d": [x1, y1, x2, y2], …}\n]`` yields the inner list.
_BRACKETED = re.compile(r"\[(.*?)\]")
# The keys Ref-Adv's reader looks in first for boxes inside a JSON answer.
_BOX_KEYS = ("bboxes", "boxes", "bbox", "bbox_2d", "predictions", "results", "objects",
             "coordinates")  # fmt: skip
# Statements that the target is not in the image, for protocols that accept one.
_ABSENT = re.compile(
    r"\b(?:no\s+such\s+(?:object|thing|item|target)|does\s*(?:not|n['’]t)\s+(?:exist|appear)"
    r"|(?:is|are)\s*(?:not|n['’]t)\s+(?:present|visible|in\s+(?:the|this)\s+(?:image|picture))"
    r"|not\s+(?:present|found)\b|there\s+is\s+no\b|(?:cannot|can['’]t|could\s*not|couldn['’]t)"
    r"\s+(?:find|locate|see)|target\s+is\s+absent|absent\s+from|no\s+(?:matching|such)\b)",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class RejectionRule:
    """What an answer must do to say "absent"; any one of the allowed signs suffices."""

    no_box: bool = True  # no box at all (GroundingME's ``{"bbox_2d": null}`` among them)
    zero_box: bool = True  # the box [0, 0, 0, 0]
    statement: bool = False  # an explicit statement that the target is absent


@dataclass(frozen=True)
class BoxProtocol:
    """One benchmark's reading of box answers and its accuracy."""

    name: str
    parsing: BoxParsing
    rejection: RejectionRule
    strict: bool  # True: a hit needs IoU > τ; False: IoU ≥ τ
    macc_thresholds: tuple[float, ...]  # the IoU thresholds mAcc averages over
    # GroundingME's reader scores the box both as pixels and as normalised units (0–1 when
    # every value is ≤ 1, else 0–999) and keeps the better IoU, whatever the model's own.
    best_of_units: bool = False


def _steps(first: float, last: float, step: float = 0.05) -> tuple[float, ...]:
    count = round((last - first) / step) + 1
    return tuple(round(first + k * step, 2) for k in range(count))


BOX_PROTOCOLS: dict[str, BoxProtocol] = {
    p.name: p
    for p in (
        # GroundBench's own box baseline: the last list of 4 values (§4), IoU ≥ τ.
        BoxProtocol("groundbench", "groundbench", RejectionRule(), False, _steps(0.5, 0.95)),
        # Ref-Adv: the last JSON answer, its first box; IoU ≥ τ; mAcc's criteria are unstated
        # (decided: 0.5:0.05:0.95, COCO's).
        BoxProtocol("ref-adv", "ref-adv", RejectionRule(), False, _steps(0.5, 0.95)),
        # GroundingME: {"bbox_2d": …} or null, else the last four numbers; a rejection is
        # right when the box read is all zeros; IoU ≥ τ; the better of pixels and units.
        BoxProtocol(
            "groundingme",
            "groundingme",
            RejectionRule(),
            False,
            _steps(0.5, 0.95),
            best_of_units=True,
        ),
        # RefBench-PRO: the last [..] holding exactly four numbers; a rejection is right when
        # no box is read (or it is all zeros); mAcc over 0.5:0.05:0.9, IoU ≥ τ.
        BoxProtocol("refbench-pro", "refbench-pro", RejectionRule(), False, _steps(0.5, 0.9)),
    )
}


@dataclass(frozen=True)
class BoxJudgement:
    """One answer to one box question, read by one protocol."""

    box: Box | None  # the answer's box in original pixels; None: no box
    says_absent: bool  # the answer says the target is absent (by the protocol's rule)
    iou: float  # with the true box; 0.0 without a box or on a rejection question
    found: bool | None = None  # the reader found a box, all-zero or null included (None: unknown)

    def hit(self, threshold: float, strict: bool) -> bool:
        return self.iou > threshold if strict else self.iou >= threshold


def to_pixels(
    box: Box, convention: Convention, width: int, height: int, sent_scale: float = 1.0
) -> Box:
    """``box`` as the model wrote it, in pixels of the ``width × height`` original image.

    ``sent_scale`` is the size of the image as sent relative to the original (0.5 for a
    half-resolution variant); it matters only to the ``pixels`` convention. Corners are put
    in order (a box written right-to-left is the same box) and clipped to the image, as
    Ref-Adv's and RefBench-PRO's readers do.
    """
    x1, y1, x2, y2 = box
    if convention == "pixels":
        fx = fy = 1.0 / sent_scale
    else:
        fx, fy = width / _SCALE[convention], height / _SCALE[convention]
    x1, x2 = sorted((_clip(x1 * fx, width), _clip(x2 * fx, width)))
    y1, y2 = sorted((_clip(y1 * fy, height), _clip(y2 * fy, height)))
    return (x1, y1, x2, y2)


def _clip(value: float, limit: int) -> float:
    return min(max(value, 0.0), float(limit))


def find_box(text: str, parsing: BoxParsing) -> Box | None:
    """The box an answer gives, in its own units, as ``parsing`` reads it; None if none.

    - ``groundbench``: the last list of exactly 4 values (PROTOCOL §4);
    - ``ref-adv``: the last fenced JSON block, else a JSON value that ends the answer; the
      first 4-number list in it (looked for under box-like keys first);
    - ``groundingme``: a JSON object with ``bbox_2d`` (``null`` is the zero box), else the
      last run of four numbers;
    - ``refbench-pro``: the last ``[…]`` whose content is exactly four numbers.
    """
    if parsing == "groundbench":
        return parse_box(text)
    if parsing == "ref-adv":
        return _first_box(_last_json(text))
    if parsing == "groundingme":
        return _bbox_2d(text)
    for content in reversed(_BRACKETED.findall(text)):
        box = _four_numbers(content)
        if box is not None:
            return box
    return None


def _last_json(text: str) -> Any:
    for chunk in reversed([c.strip() for c in _FENCED.findall(text) if c.strip()]):
        try:
            return json.loads(chunk)
        except ValueError:
            continue
    tail = text.rstrip()
    decoder = json.JSONDecoder()
    for start, char in enumerate(tail):
        if char in "[{":
            try:
                value, end = decoder.raw_decode(tail, start)
            except ValueError:
                continue
            if end == len(tail):
                return value
    return None


def _first_box(value: Any) -> Box | None:
    if isinstance(value, list):
        if len(value) == 4 and all(_is_number(v) for v in value):
            return _box(value)
        for item in value:
            if (box := _first_box(item)) is not None:
                return box
    elif isinstance(value, dict):
        ordered = [k for k in _BOX_KEYS if k in value] + [k for k in value if k not in _BOX_KEYS]
        for key in ordered:
            if (box := _first_box(value[key])) is not None:
                return box
    return None


def _bbox_2d(text: str) -> Box | None:
    found = _BBOX_2D.search(text)
    if found is not None:
        try:
            value = json.loads(found.group(0))["bbox_2d"]
        except (ValueError, KeyError, TypeError):
            value = []
        if value is None:
            return ZERO
        if isinstance(value, list) and len(value) == 4 and all(_is_number(v) for v in value):
            return _box(value)
    runs = _FOUR_NUMBERS.findall(text)
    return _box([float(v) for v in runs[-1]]) if runs else None


def _four_numbers(content: str) -> Box | None:
    parts = content.split(",")
    if len(parts) != 4:
        return None
    try:
        return _box([float(p) for p in parts])
    except ValueError:
        return None


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _box(values: Sequence[float]) -> Box | None:
    x1, y1, x2, y2 = (float(v) for v in values)
    box = (x1, y1, x2, y2)
    return box if all(math.isfinite(v) for v in box) else None


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
    protocol: BoxProtocol,
    convention: Convention,
    width: int,
    height: int,
    sent_scale: float = 1.0,
) -> BoxJudgement:
    """Read one answer. ``truth`` is the true box in pixels, or None on a rejection question."""
    raw = find_box(text, protocol.parsing)
    absent = says_absent(text, raw, protocol.rejection)
    if raw is None or raw == ZERO:
        return BoxJudgement(None, absent, 0.0, raw is not None)
    readings = [to_pixels(raw, convention, width, height, sent_scale)]
    if protocol.best_of_units:
        units: Convention = "unit" if all(v <= 1 for v in raw) else "norm999"
        readings += [to_pixels(raw, "pixels", width, height), to_pixels(raw, units, width, height)]
    if truth is None:
        return BoxJudgement(readings[0], absent, 0.0, True)
    ious = [corner_iou(b, truth) for b in readings]
    best = max(range(len(ious)), key=ious.__getitem__)
    return BoxJudgement(readings[best], absent, ious[best], True)


def corner_iou(a: Box, b: Box) -> float:
    """IoU of two ``(x1, y1, x2, y2)`` boxes; 0.0 when their union is empty."""
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


def mean_accuracy(judgements: Sequence[BoxJudgement], protocol: BoxProtocol) -> float:
    """mAcc: Acc@τ averaged over the protocol's thresholds, in percent."""
    return _mean(accuracy_at(judgements, t, protocol.strict) for t in protocol.macc_thresholds)


def rejection_accuracy(judgements: Sequence[BoxJudgement]) -> float:
    """RejAcc in percent over rejection questions: the share of answers that say absent."""
    if not judgements:
        return float("nan")
    return 100.0 * sum(j.says_absent for j in judgements) / len(judgements)


def _mean(values: Iterable[float]) -> float:
    items = list(values)
    return sum(items) / len(items) if items else float("nan")
