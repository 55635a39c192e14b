"""Scoring throughput: full per-response records per second, beside a plain baseline.

Both scorers produce the same record for each answer: the parse, the raster IoUs with
``G_N``, the part, the union and every same-category distractor, legality, and the
continuous IoU.

- groundbench: ``score_polygon`` — pycocotools RLE rasterisation, every IoU in one pass of
  pycocotools' C loop, Clipper's even-odd fill for the continuous IoU.
- plain baseline: the same parser and legality check; PIL ``ImageDraw`` rasterisation and numpy
  boolean IoU over full-frame masks (the question's masks drawn once, ahead of the timing, as
  ours are); shapely ``make_valid`` regions, intersection and union for the continuous IoU.

Answers are generated (see ``_data``) for the real COCO referents of
../shared/data/coco-val2014-100 at their own resolution, on one core, in this one process.
The baseline's cost grows with the number of distractors, so the figures are also given per
distractor bin and weighted to the paper's cohort (D1 / D2 / D3+ = 705 / 276 / 519). Run:

    .venv/bin/python -m benchmarks.scoring_throughput [--answers 20000]
"""

from __future__ import annotations

import argparse
import os
import time
from collections import Counter
from collections.abc import Callable

import numpy as np
import numpy.typing as npt
import shapely
from PIL import Image, ImageDraw

from benchmarks._data import generated_answers, real_referents
from benchmarks._figures import record
from scoring import SCALE, Referent, legality_defect, parse_list, score_polygon

Mask = npt.NDArray[np.bool_]
Answer = tuple[Referent, int, str]
PAPER_D_MIX = {"D1": 705, "D2": 276, "D3+": 519}


class PlainBaseline:
    """The same record the way a harness without RLEs or fill rules computes it."""

    def __init__(self) -> None:
        self._masks: dict[tuple[int, int], list[Mask]] = {}
        self._targets: dict[tuple[int, int], shapely.Geometry] = {}

    def prepare(self, referent: Referent, n: int) -> None:
        """Draw a question's masks and build its target region ahead of the timing."""
        key = (id(referent), n)
        if key in self._masks:
            return
        w, h = referent.width, referent.height
        target = list(referent.reference(n).target)
        rings = ([target], [_pairs(referent.part)], [_pairs(p) for p in referent.parts])
        others = [[_pairs(p) for p in d.parts] for d in referent.distractors]
        self._masks[key] = [_draw(r, w, h) for r in (*rings, *others)]
        self._targets[key] = _region(target, w, h)

    def score(self, referent: Referent, n: int, text: str) -> dict[str, object] | None:
        parsed = parse_list(text, 2 * n)
        if parsed is None:
            return None
        w, h = referent.width, referent.height
        units = np.asarray(parsed.values).reshape(-1, 2)
        points = [(x * w / SCALE, y * h / SCALE) for x, y in units]
        answer = _draw([points], w, h)
        key = (id(referent), n)
        ious = [_iou(answer, m) for m in self._masks[key]]
        region, target = _region(points, w, h), self._targets[key]
        union = region.union(target).area
        return {
            "ious": ious,
            "defect": legality_defect(parsed, units),
            "iou_cont": region.intersection(target).area / union if union else 0.0,
        }


def _pairs(flat: tuple[float, ...]) -> list[tuple[float, float]]:
    return list(zip(flat[0::2], flat[1::2], strict=True))


def _draw(rings: list[list[tuple[float, float]]], w: int, h: int) -> Mask:
    image = Image.new("1", (w, h))
    draw = ImageDraw.Draw(image)
    for ring in rings:
        draw.polygon(ring, fill=1)
    return np.asarray(image, dtype=bool)


def _iou(a: Mask, b: Mask) -> float:
    union = int(np.logical_or(a, b).sum())
    return int(np.logical_and(a, b).sum()) / union if union else 0.0


def _region(points: list[tuple[float, float]], w: int, h: int) -> shapely.Geometry:
    polygon = shapely.make_valid(shapely.Polygon(points))
    return polygon.intersection(shapely.box(0, 0, w, h))


def _seconds(score: Callable[[Referent, int, str], object], answers: list[Answer]) -> list[float]:
    """Seconds each answer took; one pass, so that every answer is scored once per scorer."""
    out = []
    clock = time.perf_counter
    for referent, n, text in answers:
        start = clock()
        score(referent, n, text)
        out.append(clock() - start)
    return out


def _rates(
    seconds: list[tuple[float, float]], bins: list[str]
) -> tuple[dict[str, tuple[float, float]], dict[str, int]]:
    """(ours, baseline) answers per second, overall, per distractor bin and for the paper's mix."""
    rates: dict[str, tuple[float, float]] = {}
    counts: dict[str, int] = {}
    for label in ("all", *PAPER_D_MIX):
        chosen = [s for s, b in zip(seconds, bins, strict=True) if label in ("all", b)]
        counts[label] = len(chosen)
        rates[label] = (len(chosen) / sum(s[0] for s in chosen),
                        len(chosen) / sum(s[1] for s in chosen))  # fmt: skip
    # Time per answer adds up, so the paper's mix weights each bin's seconds per answer.
    weight = sum(PAPER_D_MIX.values())
    mix = [sum(PAPER_D_MIX[b] / weight / rates[b][k] for b in PAPER_D_MIX) for k in (0, 1)]
    rates["paper D mix"] = (1 / mix[0], 1 / mix[1])
    return rates, counts


def _agreement(answers: list[Answer], baseline: PlainBaseline) -> tuple[float, float]:
    """Mean |difference| of filled IoU and of continuous IoU between the two scorers."""
    raster, continuous = [], []
    for r, n, text in answers:
        theirs = baseline.score(r, n, text)
        if theirs is not None:
            mine = score_polygon(text, r.reference(n))
            raster.append(abs(mine.iou - theirs["ious"][0]))  # type: ignore[index]
            continuous.append(abs(mine.iou_cont - theirs["iou_cont"]))  # type: ignore[operator]
    return float(np.mean(raster)), float(np.mean(continuous))


def _bin(referent: Referent) -> str:
    d = len(referent.distractors)
    return "D1" if d == 1 else "D2" if d == 2 else "D3+"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answers", type=int, default=20_000)
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core, as the goal says

    start = time.perf_counter()
    for r in real_referents():  # fresh objects: how long the references take to build
        r.reference(8)
    prepare = time.perf_counter() - start

    referents = real_referents()
    answers = generated_answers(referents, args.answers)
    baseline = PlainBaseline()
    for r, n, _ in answers:
        baseline.prepare(r, n)

    def ours(r: Referent, n: int, text: str) -> object:
        return score_polygon(text, r.reference(n))

    seconds = list(zip(_seconds(ours, answers), _seconds(baseline.score, answers), strict=True))
    rates, counts = _rates(seconds, [_bin(r) for r, _, _ in answers])

    scores = [score_polygon(text, r.reference(n)) for r, n, text in answers]
    defects = Counter(s.defect or "legal" for s in scores)
    masks = np.mean([len(r.reference(n).masks) for r, n, _ in answers])
    print(f"referents: {len(referents)} real COCO (val2014-100); answers: {len(answers)}")
    print("answer mix: " + ", ".join(f"{k} {v / len(scores):.0%}" for k, v in defects.items()))
    print(f"masks per answer (G_N, part, union if several parts, distractors): {masks:.2f}")
    print(f"references (5 budgets, masks, regions) for {len(referents)} referents: {prepare:.2f} s")
    raster, continuous = _agreement(answers[:2000], baseline)
    print(f"agreement with the baseline on 2,000 answers, mean |Δ|: filled IoU {raster:.4f}"
          f" (PIL's fill is not pycocotools'), continuous IoU {continuous:.1e}")  # fmt: skip
    print()
    print(f"{'answers':<14}{'count':>7}{'groundbench /s':>16}{'baseline /s':>14}{'ratio':>8}")
    for label, (fast, plain) in rates.items():
        count = counts.get(label, "-")
        print(f"{label:<14}{count:>7}{fast:>16,.0f}{plain:>14,.0f}{fast / plain:>7.1f}×")
    (fast, plain), (mix_fast, mix_plain) = rates["all"], rates["paper D mix"]
    record(per_s=fast, baseline_per_s=plain, mix_per_s=mix_fast, mix_baseline_per_s=mix_plain)


if __name__ == "__main__":
    main()
