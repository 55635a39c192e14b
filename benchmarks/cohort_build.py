"""Time to make the default synthetic data and build, store and reload a 1,500-question cohort.

Goal (issue 3): the cohort builds from the synthetic set in under a minute. The store write is
shown beside the plain way of writing the same rows (DuckDB ``executemany``). Pinned to one core.
Run:

    .venv/bin/python -m benchmarks.cohort_build [--images 2400] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

import duckdb

from benchmarks._figures import record
from conditions import (
    CohortSpec,
    DataRoot,
    SynthSpec,
    build_cohort,
    generate_synthetic,
    load_cohort,
    write_cohort,
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=SynthSpec.images)
    parser.add_argument("--keep", type=Path, help="write the data and experiment here")
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    with tempfile.TemporaryDirectory() as tmp:
        work = args.keep or Path(tmp)
        data, experiment = work / "data", work / "experiment.duckdb"
        experiment.unlink(missing_ok=True)

        t0 = time.perf_counter()
        counts = generate_synthetic(data, SynthSpec(images=args.images))
        t1 = time.perf_counter()
        cohort = build_cohort(DataRoot.at(data), CohortSpec())
        t2 = time.perf_counter()
        write_cohort(experiment, cohort)
        t3 = time.perf_counter()
        loaded = load_cohort(experiment)
        t4 = time.perf_counter()
        baseline = _executemany_targets(cohort.targets)

    assert loaded.hash == cohort.hash
    print(f"synthetic data: {args.images} images, refs {counts}: {t1 - t0:.1f} s")
    print(f"cohort build: {len(cohort.questions)} questions, {len(cohort.targets)} targets: "
          f"{t2 - t1:.1f} s (goal < 60 s)")  # fmt: skip
    print(f"store write (questions, targets, instances): {t3 - t2:.2f} s; "
          f"targets alone by executemany: {baseline:.2f} s")  # fmt: skip
    print(f"load and re-check the hash: {t4 - t3:.2f} s")
    print(f"cohort {cohort.hash}")
    c_n = " / ".join(f"{cohort.fidelity[n]:.1f}" for n in sorted(cohort.fidelity))
    print(f"C_N of the synthetic cohort, N = 8 / 16 / 24 / 32 / 64: {c_n}")
    record(build_s=t2 - t1, questions=len(cohort.questions), write_s=t3 - t2, baseline_s=baseline)


def _executemany_targets(targets: Mapping[tuple[str, int, int], tuple[float, ...]]) -> float:
    con = duckdb.connect(":memory:")
    con.execute("CREATE TABLE t (qid VARCHAR, budget INTEGER, phase INTEGER, vertices DOUBLE[])")
    rows = [(*k, list(v)) for k, v in targets.items()]
    start = time.perf_counter()
    con.executemany("INSERT INTO t VALUES (?, ?, ?, ?)", rows)
    return time.perf_counter() - start


if __name__ == "__main__":
    main()
