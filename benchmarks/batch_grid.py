"""The paper-sized grid with its batch-capable backends in batch mode, on the simulator.

The paper's four configurations over the 13-condition grid (about 120,000 calls) on a
1,500-question synthetic cohort, as ``benchmarks.paper_grid`` runs them, except that Qwen's
and Gemini's backends go through their providers' batch APIs (the simulator's, with a fast
turnaround); Doubao and Kimi stay online (groundbench speaks no batch API of theirs). Prints the
wall time, the batches made, the peak memory (driver and every Ray process), and the spend of
each backend against what the same answers cost online, at stated illustrative prices. Run:

    .venv/bin/python -m benchmarks.batch_grid [--turnaround 5] [--keep DIR]
"""

from __future__ import annotations

import argparse
import re
import tempfile
import time
from pathlib import Path

from benchmarks._figures import record
from benchmarks.paper_grid import FLAT_OUT, MemorySampler, prepare
from runner.demo import experiment_text
from runner.distributed import RunOptions, run_experiment
from runner.experiment import load_experiment
from runner.store import read_only

BATCH = ("qwen-max", "gemini-high")  # the paper's configurations whose providers batch
# Illustrative, the same for every backend: what matters is the ratio, which is batch_rate.
PRICES = "prices = { input_per_mtok = 1.0, output_per_mtok = 4.0 }"


def experiment(
    turnaround_s: float, poll_s: float, store: str = "paper.duckdb", profile: str = "default"
) -> str:
    """The paper grid's demo file, flat out, with the batch-capable backends in batch mode;
    the simulator answers by ``profile`` (``benchmarks.paper_recovery`` runs ``paper``)."""
    simulator = {"seed": 0, "profile": profile, "batch": {"turnaround_s": turnaround_s}}
    text = experiment_text(500, store=store, limits=FLAT_OUT, concurrency=64, simulator=simulator)
    for name in ("doubao", "kimi", *BATCH):
        settings = [PRICES]
        if name in BATCH:
            polls = f"batch = {{ poll_s = {poll_s}, max_poll_s = {poll_s} }}"
            settings += ['mode = "batch"', polls]
        text = re.sub(
            rf"(\[backends\.{re.escape(name)}\]\n)", r"\1" + "\n".join(settings) + "\n", text
        )
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turnaround", type=float, default=5.0, help="simulated, seconds")
    parser.add_argument("--poll", type=float, default=2.0, help="seconds between polls")
    parser.add_argument("--keep", type=Path, help="work here and keep it (default: a temp dir)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = args.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        prepare(work)
        path = work / "paper.toml"
        path.write_text(experiment(args.turnaround, args.poll))
        with MemorySampler() as memory:
            begun = time.perf_counter()
            report = run_experiment(
                load_experiment(path), RunOptions(progress_every_s=30.0), print, path
            )
            wall = time.perf_counter() - begun
        with read_only(work / "paper.duckdb") as con:
            batches = con.execute(
                "SELECT backend, count(*), sum(requests), max(requests), "
                "count(*) FILTER (WHERE phase = 'read') FROM batches GROUP BY ALL ORDER BY 1"
            ).fetchall()
    requests = sum(p.requests for p in report.progress)
    print()
    print(f"grid: {requests:,} requests, complete: {report.complete}, "
          f"unscored at the end: {report.unscored:,}")  # fmt: skip
    print(f"run wall time (Ray start to report): {wall:.1f} s = {wall / 60:.1f} min, "
          f"batch turnaround {args.turnaround:g} s, polled every {args.poll:g} s")  # fmt: skip
    print(f"peak memory, driver + Ray processes: PSS {memory.peak_pss / 1024**2:.2f} GB, "
          f"RSS {memory.peak_rss / 1024**2:.2f} GB")  # fmt: skip
    for backend, count, lines, largest, read in batches:
        print(f"batches of {backend}: {count:,} ({read:,} read), {lines:,} lines, "
              f"the largest {largest:,}")  # fmt: skip
    online_total = batch_total = 0.0
    for b in report.backends:
        online = b.batch.online_cost if b.batch is not None else b.spent
        online_total += online
        batch_total += b.spent
        mode = "batch" if b.batch is not None else "online"
        print(f"spend {b.name} ({mode}): ${b.spent:,.2f}, online ${online:,.2f}")
    print(f"spend, the whole grid: ${batch_total:,.2f} against ${online_total:,.2f} all online "
          f"({100 * (1 - batch_total / online_total):.0f}% saved) at $1/M input, $4/M output "
          "tokens (illustrative)")  # fmt: skip
    record(
        wall_s=wall, peak_pss_gb=memory.peak_pss / 1024**2, requests=requests,
        batches=sum(row[1] for row in batches), spend=batch_total, online=online_total,
        complete=report.complete and report.unscored == 0,
    )  # fmt: skip


if __name__ == "__main__":
    main()
