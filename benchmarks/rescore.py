"""Re-scoring without calls: a paper-sized store's answers against all 11 references.

Issue 16's goal: every stored answer of a 120,000-answer store scored against the eight
phases' ``G_N``, the unreduced part, the union of all parts and the continuous-area backend,
in under 10 minutes on one core. The store holds the default synthetic data's 1,500-question
cohort and 120,000 polygon answers over the paper's configurations, conditions and budgets,
as models answer (see ``_data``: mostly the target traced with noise, some shifted, crossing,
at a distractor, in decimals; a wrong vertex count or prose leaves about one in ten
unparseable). The timing is ``runner.rescore.rescore`` on the whole store, pinned to one core:
reading the cohort, building every referent's targets at eight phases, scoring, writing. A
second call must find everything done and write nothing. Run:

    .venv/bin/python -m benchmarks.rescore [--answers 120000] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from benchmarks._data import generated_answer
from benchmarks._figures import record
from benchmarks._store import CONFIGURATIONS
from conditions import (
    CONDITION_NAMES,
    Cohort,
    CohortSpec,
    DataRoot,
    SynthSpec,
    build_cohort,
    generate_synthetic,
    write_cohort,
)
from runner.rescore import rescore
from runner.store import GridRow, Registration, Repository, ResponseRow
from scoring import BUDGETS, REFERENCES, Referent, parse_list

GOAL_S = 600.0
T0 = datetime(2026, 11, 30, tzinfo=UTC)


def polygon_grid(cohort: Cohort, answers: int) -> list[GridRow]:
    """The first ``answers`` polygon cells of configurations × conditions × budgets ×
    questions."""
    rows: list[GridRow] = []
    for configuration in CONFIGURATIONS:
        for condition in CONDITION_NAMES:
            for budget in BUDGETS:
                rows.extend(
                    GridRow(
                        configuration=configuration,
                        condition=condition,
                        budget=budget,
                        qid=q.qid,
                        attempts=3,
                    )
                    for q in cohort.questions
                )
                if len(rows) >= answers:
                    return rows[:answers]
    return rows


def answer_rows(cohort: Cohort, grid: list[GridRow], seed: int = 0) -> Iterator[ResponseRow]:
    """One answered attempt per grid cell: a realistic answer to its question at its budget."""
    rng = np.random.default_rng(seed)
    referents: dict[str, Referent] = {}
    for g in grid:
        referent = referents.get(g.qid) or referents.setdefault(g.qid, cohort.referent(g.qid))
        text = generated_answer(referent, g.budget, rng)
        fields = {**g._asdict(), "attempt": 0, "replicate": 0, "protocol": "p" * 64,
                  "provider": "qwen", "model": "m", "outcome": "answer", "answer": text,
                  "parseable": parse_list(text, 2 * g.budget) is not None,
                  "http_status": 200, "started_at": T0}  # fmt: skip
        yield ResponseRow._make(fields.get(c) for c in ResponseRow._fields)


def build_store(path: Path, work: Path, answers: int) -> tuple[int, float]:
    """Data, cohort and answers in a fresh store; how many answers parse, and the seconds."""
    begun = time.perf_counter()
    generate_synthetic(work / "data", SynthSpec())
    cohort = build_cohort(DataRoot.at(work / "data"), CohortSpec())
    write_cohort(path, cohort)
    grid = polygon_grid(cohort, answers)
    parseable = 0
    with Repository(path) as store:
        store.register(
            [Registration(c, "p" * 64, "qwen", "m", 3, "{}") for c in CONFIGURATIONS], grid
        )
        batch: list[ResponseRow] = []
        for row in answer_rows(cohort, grid):
            batch.append(row)
            parseable += row.parseable
            if len(batch) == 5000:
                store.write_responses(batch)
                batch = []
        store.write_responses(batch)
    return parseable, time.perf_counter() - begun


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answers", type=int, default=120_000)
    parser.add_argument("--keep", type=Path, help="build the store here and keep it")
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core, as the goal says
    with tempfile.TemporaryDirectory() as tmp:
        work = args.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        path = work / "rescore.duckdb"
        path.unlink(missing_ok=True)
        parseable, built = build_store(path, work, args.answers)
        print(f"store: {args.answers:,} polygon answers ({parseable:,} parseable) on a "
              f"1,500-question synthetic cohort, built in {built:.0f} s")  # fmt: skip

        begun = time.perf_counter()
        first = rescore(path)
        wall = time.perf_counter() - begun
        begun = time.perf_counter()
        again = rescore(path)
        second = time.perf_counter() - begun
    assert first.rescored == first.considered == parseable and again.rows == 0
    print(f"re-scored {first.rescored:,} answers against {len(REFERENCES)} references "
          f"({first.rows:,} rows) in {wall:.1f} s = {wall / 60:.2f} min on one core "
          f"(goal < {GOAL_S / 60:.0f} min: {'met' if wall < GOAL_S else 'NOT met'})")  # fmt: skip
    print(f"  {first.rescored / wall:,.0f} answers/s, {first.rows / wall:,.0f} rows/s; "
          f"for all {args.answers:,} stored answers {wall:.1f} s")  # fmt: skip
    print(f"second run: {second:.2f} s, {again.rows} rows written, "
          f"{again.already:,} already done")  # fmt: skip
    record(rescore_s=wall, answers=first.rescored, answers_per_s=first.rescored / wall,
           rows_per_s=first.rows / wall, again_s=second, again_rows=again.rows)  # fmt: skip


if __name__ == "__main__":
    main()
