"""Time to build every canonical target of a 1,500-referent cohort: 5 budgets × 8 phases.

The contours are the real COCO polygons of ../shared/data/coco-val2014-100 (each annotation's
selected part), repeated to 1,500 referents. Goal: under 5 s on one core. Run:

    .venv/bin/python -m benchmarks.targets_speed [--referents 1500]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

from benchmarks._data import VAL_100
from benchmarks._figures import record
from scoring import BUDGETS, PHASES, ScoringError, canonical_targets, select_part


def real_parts() -> list[list[float]]:
    """The selected part of every non-crowd polygon annotation that can be a target."""
    data = json.loads(VAL_100.read_text())
    parts = []
    for a in data["annotations"]:
        if a["iscrowd"]:
            continue
        part = a["segmentation"][select_part(a["segmentation"])]
        try:
            canonical_targets(part, (8,))
        except ScoringError:
            continue
        parts.append(part)
    return parts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--referents", type=int, default=1500)
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})

    parts = real_parts()
    cohort = [parts[k % len(parts)] for k in range(args.referents)]
    vertices = [len(p) // 2 for p in cohort]
    start = time.perf_counter()
    built = 0
    for part in cohort:
        for phase in range(PHASES):
            built += len(canonical_targets(part, BUDGETS, phase))
    elapsed = time.perf_counter() - start
    print(f"referents: {len(cohort)} ({len(parts)} distinct real COCO contours), vertices per "
          f"part: median {statistics.median(vertices):.0f}, max {max(vertices)}")  # fmt: skip
    print(f"targets built: {built} ({len(cohort)} × {len(BUDGETS)} budgets × {PHASES} phases)")
    print(f"time: {elapsed:.2f} s ({1e6 * elapsed / built:.1f} µs per target; goal < 5 s)")
    record(seconds=elapsed, targets=built)


if __name__ == "__main__":
    main()
