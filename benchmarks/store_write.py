"""Store write throughput: response rows per second through batched, idempotent writes.

Issue 5's goal: at least 20,000 response rows/s. Baseline: the same rows inserted with
DuckDB's ``executemany`` (row by row), on a sample, in the same run. Issue 19's checkpoints
(every ``CHECKPOINT_ROWS`` rows) are measured beside the same writes with checkpoints only at
the end, as the store wrote before. Run:

    .venv/bin/python -m benchmarks.store_write [--rows 100000] [--batch 1000]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import duckdb

import runner.store._repository as store_module
from benchmarks._figures import record
from benchmarks._store import answer_rows, paper_grid
from runner.store import RESPONSE_COLUMNS, ResponseRow, Store


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--sample", type=int, default=5000, help="rows for the baseline")
    args = parser.parse_args()
    rows = answer_rows(paper_grid(cells=args.rows))
    with tempfile.TemporaryDirectory() as tmp:
        unchecked = _without_checkpoints(Path(tmp) / "unchecked.duckdb", rows, args.batch)
        with Store(Path(tmp) / "exp.duckdb") as store:
            begun = time.perf_counter()
            for i in range(0, len(rows), args.batch):
                store.write_responses(rows[i : i + args.batch])
            ours = time.perf_counter() - begun
            begun = time.perf_counter()
            for i in range(0, len(rows), args.batch):  # every key again: all kept as they were
                store.write_responses(rows[i : i + args.batch])
            again = time.perf_counter() - begun
            stored = store.repository.query("SELECT count(*) FROM responses")[1][0][0]
        Store(Path(tmp) / "baseline.duckdb").close()  # the same tables, empty
        with duckdb.connect(str(Path(tmp) / "baseline.duckdb")) as con:
            con.execute("BEGIN")
            sample = rows[: args.sample]
            marks = ", ".join("?" * len(RESPONSE_COLUMNS))
            columns = ", ".join(f'"{c}"' for c in RESPONSE_COLUMNS)
            begun = time.perf_counter()
            con.executemany(
                f"INSERT INTO responses ({columns}, seq) VALUES ({marks}, 0)",
                [list(r) for r in sample],
            )
            baseline = time.perf_counter() - begun
            con.execute("COMMIT")
    text = _mean_text(rows)
    print(f"rows: {len(rows):,} (answer + reasoning ≈ {text:.0f} chars), batch {args.batch:,}")
    print(f"{'write':<34}{'rows/s':>12}")
    print(f"{'groundbench, new keys':<34}{len(rows) / ours:>12,.0f}")
    print(f"{'groundbench, every key again':<34}{len(rows) / again:>12,.0f}")
    print(f"{'executemany, row by row (baseline)':<34}{len(sample) / baseline:>12,.0f}")
    print(f"{'groundbench, no checkpoint until close':<34}{len(rows) / unchecked:>12,.0f}")
    print(f"checkpoints every {store_module.CHECKPOINT_ROWS:,} rows cost "
          f"{100 * (ours / unchecked - 1):+.1f}% of the write time")  # fmt: skip
    print(f"ratio new keys / baseline: {(len(rows) / ours) / (len(sample) / baseline):.0f}×")
    print(f"rows in the store: {stored:,} (every key once)")
    record(
        rows_per_s=len(rows) / ours,
        baseline_rows_per_s=len(sample) / baseline,
        checkpoint_cost_pct=100 * (ours / unchecked - 1),
    )


def _without_checkpoints(path: Path, rows: list[ResponseRow], batch: int) -> float:
    """Seconds to write ``rows`` with no checkpoint before the store closes."""
    every = store_module.CHECKPOINT_ROWS
    store_module.CHECKPOINT_ROWS = len(rows) + 1
    try:
        with Store(path) as store:
            begun = time.perf_counter()
            for i in range(0, len(rows), batch):
                store.write_responses(rows[i : i + batch])
            return time.perf_counter() - begun
    finally:
        store_module.CHECKPOINT_ROWS = every


def _mean_text(rows: list[ResponseRow]) -> float:
    return sum(len(str(row.answer)) + len(str(row.reasoning)) for row in rows) / len(rows)


if __name__ == "__main__":
    main()
