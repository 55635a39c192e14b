"""Construction fidelity C_N on real COCO contours and on a generated set (PROTOCOL §2).

- the real fixture (../shared/data/coco-000000039769: two cats, two remotes);
- 100 real COCO val2014 images (../shared/data/coco-val2014-100: 655 eligible referents);
- a generated set: 1,500 star-shaped contours at 640×480 with COCO-like vertex counts
  (6 to 200), radial noise and sizes, so that the figure does not depend on the fixtures.

Then ``C_N`` of the 655 real referents at each of the eight sampling phases and its spread:
with the origin pinned (PROTOCOL §2.3, revised) each phase is its own target.

The paper reports 88.6 / 96.2 / 98.3 / 99.0 / 99.4 on its cohort. Run:

    .venv/bin/python -m benchmarks.fidelity
"""

from __future__ import annotations

import math

import numpy as np

from benchmarks._data import FIXTURE, real_referents
from scoring import BUDGETS, PHASES, Referent, construction_fidelity

PAPER = {8: 88.6, 16: 96.2, 24: 98.3, 32: 99.0, 64: 99.4}


def generated_referents(count: int = 1500, seed: int = 0) -> list[Referent]:
    rng = np.random.default_rng(seed)
    out = []
    for k in range(count):
        v = int(np.clip(rng.lognormal(math.log(24), 0.7), 6, 200))
        radius = rng.uniform(15, 160)
        cx, cy = rng.uniform(radius, 640 - radius), rng.uniform(radius, 480 - radius)
        angles = np.sort(rng.uniform(0, 2 * math.pi, v))
        bumps = 1 + 0.25 * np.sin(rng.integers(2, 7) * angles + rng.uniform(0, 6.3))
        r = radius * bumps * rng.uniform(0.85, 1.15, v)
        xs, ys = cx + r * np.cos(angles), cy + r * np.sin(angles)
        part = tuple(float(c) for p in zip(xs, ys, strict=True) for c in p)
        box = (float(xs.min()), float(ys.min()), float(np.ptp(xs)), float(np.ptp(ys)))
        out.append(Referent(k, 640, 480, (part,), box))
    return out


def main() -> None:
    sets = {
        "fixture (4 real referents)": real_referents(FIXTURE),
        "COCO val2014-100 (655 real)": real_referents(),
        "generated (1,500 contours)": generated_referents(),
    }
    print(f"{'C_N':<30}" + "".join(f"{f'N={n}':>9}" for n in BUDGETS))
    for name, referents in sets.items():
        row = [construction_fidelity(referents, n) for n in BUDGETS]
        print(f"{name:<30}" + "".join(f"{v:>9.2f}" for v in row))
    print(f"{'paper (its cohort)':<30}" + "".join(f"{PAPER[n]:>9.1f}" for n in BUDGETS))
    print()
    print_phases(sets["COCO val2014-100 (655 real)"])


def print_phases(referents: list[Referent]) -> None:
    """``C_N`` at every sampling phase, then the spread (max − min) over the phases."""
    table = {k: [construction_fidelity(referents, n, k) for n in BUDGETS] for k in range(PHASES)}
    print(f"{'COCO val2014-100, by phase':<30}" + "".join(f"{f'N={n}':>9}" for n in BUDGETS))
    for k, row in table.items():
        print(f"{f'phase {k}':<30}" + "".join(f"{v:>9.2f}" for v in row))
    spread = [max(col) - min(col) for col in zip(*table.values(), strict=True)]
    print(f"{'spread over 8 phases':<30}" + "".join(f"{v:>9.2f}" for v in spread))


if __name__ == "__main__":
    main()
