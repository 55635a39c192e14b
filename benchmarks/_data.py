"""Inputs shared by the benchmarks: real COCO referents and generated answers to score."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from conditions import eligible_referents, load_instances
from scoring import BUDGETS, SCALE, Referent

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
VAL_100 = SHARED / "coco-val2014-100" / "instances_val2014_100.json"
FIXTURE = SHARED / "coco-000000039769" / "instances.json"


def real_referents(path: Path = VAL_100) -> list[Referent]:
    """The eligible referents of a real COCO file (655 in ``coco-val2014-100``)."""
    return eligible_referents(load_instances(path), path)


def generated_answers(
    referents: list[Referent], count: int, seed: int = 0
) -> list[tuple[Referent, int, str]]:
    """``count`` (referent, budget, answer text) triples that look like model output.

    The mix follows what hosted models return: mostly the target traced with noise, some at a
    distractor, some with crossings, decimal coordinates, a wrong vertex count or prose.
    """
    rng = np.random.default_rng(seed)
    out = []
    for k in range(count):
        referent = referents[k % len(referents)]
        n = BUDGETS[int(rng.integers(len(BUDGETS)))]
        out.append((referent, n, generated_answer(referent, n, rng)))
    return out


def generated_answer(referent: Referent, n: int, rng: np.random.Generator) -> str:
    """A made-up answer of one of the kinds models give, in their usual proportions."""
    kind = rng.choice(
        ["traced", "shifted", "crossing", "decimal", "distractor", "wrong-count", "prose"],
        p=[0.45, 0.15, 0.1, 0.1, 0.1, 0.05, 0.05],
    )
    if kind == "prose":
        return "I cannot determine the exact outline of the object in this image."
    source = referent
    if kind == "distractor" and referent.distractors:
        d = referent.distractors[0]
        source = Referent(d.ann_id, referent.width, referent.height, d.parts, referent.bbox)
    units = np.asarray(source.reference(n).target) * (
        SCALE / referent.width,
        SCALE / referent.height,
    )
    _, _, w, h = referent.bbox
    scale = max(4.0, math.hypot(w, h) * SCALE / max(referent.width, referent.height))
    units = units + rng.normal(0.0, 0.04 * scale, units.shape)
    if kind == "shifted":
        units = units + rng.normal(0.0, 0.25 * scale, 2)
    if kind == "crossing":
        i, j = rng.choice(len(units), 2, replace=False)
        units[[i, j]] = units[[j, i]]
    if kind == "wrong-count":
        units = units[:-1]
    if kind == "decimal":
        return "[" + ", ".join(f"[{a:.1f}, {b:.1f}]" for a, b in units) + "]"
    cells = np.clip(np.rint(units), 0, 999).astype(int)
    return "Polygon: " + ", ".join(f"({a}, {b})" for a, b in cells)
