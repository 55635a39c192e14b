"""Scoring throughput: full per-response records per second, beside a plain baseline.

Ours: ``score_polygon`` — parse, pycocotools raster, IoU with ``G_N``, the part, the union and
every distractor in one RLE pass, legality, continuous IoU with shapely.
Baseline: the same parser, PIL ``ImageDraw`` rasterisation and numpy boolean IoU with the same
masks (pre-rasterised once per question, as ours are), and neither legality nor continuous IoU.

Both run on one core, in this one process, on the same generated answers to real COCO
referents at their own resolution (../shared/data/coco-val2014-100). Run:

    .venv/bin/python -m benchmarks.scoring_throughput [--answers 20000]
"""

from __future__ import annotations

import argparse
import os
import time
from collections import Counter

import numpy as np
import numpy.typing as npt
from PIL import Image, ImageDraw

from benchmarks._data import generated_answers, real_referents
from scoring import SCALE, Referent, parse_list, score_polygon

Mask = npt.NDArray[np.bool_]


class PlainBaseline:
    """What a harness without RLEs writes: full-frame boolean masks and numpy IoU."""

    def __init__(self) -> None:
        self._masks: dict[tuple[int, int], list[Mask]] = {}

    def score(self, referent: Referent, n: int, text: str) -> list[float] | None:
        parsed = parse_list(text, 2 * n)
        if parsed is None:
            return None
        w, h = referent.width, referent.height
        v = parsed.values
        points = [(v[i] * w / SCALE, v[i + 1] * h / SCALE) for i in range(0, len(v), 2)]
        answer = _draw([points], w, h)
        return [_iou(answer, m) for m in self._references(referent, n)]

    def _references(self, referent: Referent, n: int) -> list[Mask]:
        key = (id(referent), n)
        if key not in self._masks:
            w, h = referent.width, referent.height
            target = [list(referent.reference(n).target)]
            part = [_pairs(referent.part)]
            union = [_pairs(p) for p in referent.parts]
            others = [[_pairs(p) for p in d.parts] for d in referent.distractors]
            self._masks[key] = [_draw(rings, w, h) for rings in (target, part, union, *others)]
        return self._masks[key]


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answers", type=int, default=20_000)
    parser.add_argument("--baseline-answers", type=int, default=2_000)
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core, as the goal says

    referents = real_referents()
    answers = generated_answers(referents, args.answers)
    start = time.perf_counter()
    for r in referents:
        for n in {n for _, n, _ in answers}:
            r.reference(n)
    prepare = time.perf_counter() - start

    start = time.perf_counter()
    scores = [score_polygon(text, r.reference(n)) for r, n, text in answers]
    ours = time.perf_counter() - start

    baseline = PlainBaseline()
    sample = answers[: args.baseline_answers]
    for r, n, _ in sample:  # pre-rasterise its references too, outside the timing
        baseline._references(r, n)
    start = time.perf_counter()
    for r, n, text in sample:
        baseline.score(r, n, text)
    plain = time.perf_counter() - start

    ours_rate, plain_rate = len(answers) / ours, len(sample) / plain
    masks = np.mean([len(r.reference(n).masks) + len(r.distractors) for r, n, _ in answers])
    defects = Counter(s.defect or "legal" for s in scores)
    print(f"referents: {len(referents)} real COCO (val2014-100), answers: {len(answers)}")
    print(f"masks per answer (G_N, part, union if several parts, distractors): {masks:.2f}")
    print("answer mix: " + ", ".join(f"{k} {v / len(scores):.0%}" for k, v in defects.items()))
    print(f"references built once for {len(referents)} referents: {prepare:.2f} s")
    print()
    print(f"{'scorer':<34}{'responses/s':>14}{'µs/response':>14}")
    print(f"{'groundbench (full record)':<34}{ours_rate:>14,.0f}{1e6 / ours_rate:>14.1f}")
    print(f"{'PIL + numpy (raster IoUs only)':<34}{plain_rate:>14,.0f}{1e6 / plain_rate:>14.1f}")
    print(f"{'ratio':<34}{ours_rate / plain_rate:>13.1f}×")


if __name__ == "__main__":
    main()
