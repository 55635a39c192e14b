"""Every benchmark in one command, with one table of its headline figures against the goals.

Each benchmark runs in a process of its own (so one's memory or Ray does not weigh on the
next), in this order: scoring throughput against its baseline, the targets' construction, the
cohort build, store writes against their baseline, the resume scan, how cost grows (grids of
120,000 and 1,200,000 requests stored and resumed, about 3 minutes), re-scoring a
120,000-answer store against every reference (about 3 minutes more), the client ceiling, the
end-to-end ceiling, rate-limit utilisation (two minutes against a 600/min sliding window),
the three server limiters at the limit and told 4× (virtual time, about 20 seconds), a box
benchmark (import, reading, a run of 8,000 requests), the start-up time of `groundbench run`
(three runs, about a minute), the estimate before a run against its spend (about a minute
and a half), and the paper-sized grid (about 120,000 calls on a
1,500-question synthetic cohort, simulator flat out) with its wall time and peak memory. Their
own reports go to ``--logs`` (default: a temporary folder, named at the end); the table is
printed last. About 15 minutes on the 2-core machine.
Run:

    .venv/bin/python -m benchmarks.suite [--skip paper_grid] [--logs DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from benchmarks._figures import OUT_VARIABLE

Figures = dict[str, Any]


@dataclass(frozen=True)
class Row:
    """One line of the table: a figure of a benchmark, what it is set against, and its goal."""

    benchmark: str
    what: str
    value: Callable[[Figures], str]
    against: Callable[[Figures], str]
    goal: str
    met: Callable[[Figures], bool] | None  # None: a figure shown beside the others, no goal


def _against(key: str, base: str, name: str = "baseline") -> Callable[[Figures], str]:
    return lambda f: f"{name} {f[base]:,.0f}/s ({f[key] / f[base]:.1f}×)"


def _scoring_goal(key: str, base: str) -> Callable[[Figures], bool]:
    return lambda f: f[key] >= 3000 and f[key] >= 10 * f[base]


def _pct(tag: str) -> Callable[[Figures], str]:
    return lambda f: f"{f[tag + '_pct']:.2f}%"


def _throttles(tag: str) -> Callable[[Figures], str]:
    return lambda f: f"{f[tag + '_429']} × 429"


def _limit_met(tag: str, pct: float, throttles: int) -> Callable[[Figures], bool]:
    return lambda f: f[tag + "_pct"] >= pct and f[tag + "_429"] <= throttles


ROWS = [
    Row("scoring_throughput", "scoring, full record (one core)",
        lambda f: f"{f['per_s']:,.0f}/s", _against("per_s", "baseline_per_s"),
        "≥ 3,000/s, ≥ 10× baseline", _scoring_goal("per_s", "baseline_per_s")),
    Row("scoring_throughput", "scoring, the paper's distractor mix",
        lambda f: f"{f['mix_per_s']:,.0f}/s", _against("mix_per_s", "mix_baseline_per_s"),
        "≥ 3,000/s, ≥ 10× baseline", _scoring_goal("mix_per_s", "mix_baseline_per_s")),
    Row("targets_speed", "every G_N: 1,500 referents × 5 budgets × 8 phases",
        lambda f: f"{f['seconds']:.2f} s", lambda f: f"{f['targets']:,} targets",
        "< 5 s (one core)", lambda f: f["seconds"] < 5.0),
    Row("cohort_build", "cohort build from the synthetic set",
        lambda f: f"{f['build_s']:.1f} s", lambda f: f"{f['questions']:,} questions",
        "< 60 s", lambda f: f["build_s"] < 60.0),
    Row("cohort_build", "cohort write to the store",
        lambda f: f"{f['write_s']:.2f} s",
        lambda f: f"targets by executemany {f['baseline_s']:.2f} s",
        "", None),
    Row("store_write", "store, response rows written",
        lambda f: f"{f['rows_per_s']:,.0f}/s",
        _against("rows_per_s", "baseline_rows_per_s", "executemany"),
        "≥ 20,000/s", lambda f: f["rows_per_s"] >= 20_000),
    Row("store_write", "store, checkpoints every 5,000 rows",
        lambda f: f"{f['checkpoint_cost_pct']:+.1f}%", lambda f: "of the write time",
        "", None),
    Row("query_during_run", "run's writes while a ~20 s sql query runs",
        lambda f: f"{f['during_per_s']:.0f}/s", lambda f: f"{f['before_per_s']:.0f}/s before",
        "", None),
    Row("parse_bounds", "parser, slowest of nine 4 MiB answers",
        lambda f: f"{f['worst_parse_s']:.2f} s",
        lambda f: f"worst peak memory {f['worst_peak_mb']:.0f} MB", "< 1 s",
        lambda f: f["worst_parse_s"] < 1.0),
    Row("resume_scan", "resume scan, 120,000-request grid",
        lambda f: f"{f['scan_s']:.3f} s", lambda f: f"{f['pending']:,} pending",
        "< 2 s", lambda f: f["scan_s"] < 2.0),
    Row("scale", "resume scan, 1,200,000-request grid",
        lambda f: f"{f['scan_s_1200k']:.2f} s",
        lambda f: f"120,000: {f['scan_s_120k']:.2f} s; register {f['register_s_1200k']:.1f} s",
        "< 2 s", lambda f: f["scan_s_1200k"] < 2.0),
    Row("scale", "driver's peak memory, 1,200,000-request grid",
        lambda f: f"{f['driver_mb_1200k'] / 1024:.2f} GB",
        lambda f: f"store {f['store_mb_1200k'] / 1024:.2f} GB, file {f['file_mb_1200k']:,.0f} MB",
        "< 1 GB", lambda f: f["driver_mb_1200k"] < 1024),
    Row("rescore", "re-scoring, 120,000 answers × 11 references (one core)",
        lambda f: f"{f['rescore_s'] / 60:.1f} min",
        lambda f: f"{f['answers_per_s']:,.0f} answers/s; again {f['again_rows']} rows",
        "< 10 min, again writes 0",
        lambda f: f["rescore_s"] < 600 and f["again_rows"] == 0),
    Row("client_ceiling", "client ceiling, one backend, one core",
        lambda f: f"{f['requests_per_s']:,.0f} req/s", lambda f: "",
        "≥ 1,500 req/s", lambda f: f["requests_per_s"] >= 1500),
    Row("end_to_end", "end-to-end ceiling (Ray, store, scoring)",
        lambda f: f"{f['requests_per_s']:,.0f} req/s", lambda f: "",
        "≥ 1,000 req/s", lambda f: f["requests_per_s"] >= 1000 and f["complete"]),
    Row("rate_utilisation", "rate-limit utilisation, 600/min sliding window (real time)",
        lambda f: f"{f['utilisation_pct']:.2f}%", lambda f: f"{f['throttled']} × 429",
        "≥ 98%, no 429", lambda f: f["utilisation_pct"] >= 98.0 and f["throttled"] == 0),
    *(row for kind in ("sliding_window", "token_bucket", "fixed_window") for row in (
        Row("rate_limiters", f"{kind.replace('_', ' ')} at its limit, 3 min (virtual)",
            _pct(f"{kind}_1x"), _throttles(f"{kind}_1x"), "≥ 99%, no 429",
            _limit_met(f"{kind}_1x", 99.0, 0)),
        Row("rate_limiters", f"{kind.replace('_', ' ')}, client told 4×, 5 min (virtual)",
            _pct(f"{kind}_4x"), _throttles(f"{kind}_4x"), "≥ 95%, ≤ 3 × 429",
            _limit_met(f"{kind}_4x", 95.0, 3)),
    )),
    Row("box_run", "box benchmark: answers read (one core)",
        lambda f: f"{f['read_per_s']:,.0f}/s", lambda f: f"import {f['import_s']:.2f} s",
        "", None),
    Row("box_run", "box benchmark: run, 4 configurations × 2",
        lambda f: f"{f['requests_per_s']:,.0f} req/s",
        lambda f: f"{f['requests']:,} requests in {f['run_s']:.0f} s",
        "complete", lambda f: bool(f["complete"])),
    Row("startup", "start-up: `groundbench run` to the first call",
        lambda f: f"{f['first_call_s']:.1f} s",
        lambda f: f"median of {f['runs']}; imports {f['import_s']:.1f} s",
        "≤ 4 s (idle machine)", lambda f: f["first_call_s"] <= 4.0),
    Row("estimate_vs_spend", "estimate before a run against its spend (demo grid, --limit 2)",
        lambda f: f"{f['preflight_ratio']:.2f}× the pre-flight's",
        lambda f: f"{f['check_ratio']:.2f}× check's; spent ${f['spent']:.4f}",
        "within ±25%", lambda f: bool(f["within"])),
    Row("paper_grid", "paper grid: wall time",
        lambda f: f"{f['wall_s'] / 60:.1f} min", lambda f: f"{f['requests']:,} requests",
        "< 20 min, complete", lambda f: f["wall_s"] < 1200 and f["complete"]),
    Row("paper_grid", "paper grid: peak memory (PSS)",
        lambda f: f"{f['peak_pss_gb']:.2f} GB", lambda f: "driver + every Ray process",
        "< 3 GB", lambda f: f["peak_pss_gb"] < 3.0),
    Row("batch_grid", "paper grid, Qwen and Gemini in batch mode: wall time",
        lambda f: f"{f['wall_s'] / 60:.1f} min",
        lambda f: f"{f['requests']:,} requests, {f['batches']:,} batches",
        "complete", lambda f: f["complete"]),
    Row("batch_grid", "paper grid, batch mode: spend against all online",
        lambda f: f"${f['spend']:,.2f}", lambda f: f"${f['online']:,.2f} online",
        "batch half price", None),
    Row("batch_grid", "paper grid, batch mode: peak memory (PSS)",
        lambda f: f"{f['peak_pss_gb']:.2f} GB", lambda f: "driver + every Ray process",
        "< 3 GB", lambda f: f["peak_pss_gb"] < 3.0),
]  # fmt: skip


def run(benchmark: str, logs: Path) -> tuple[Figures | None, float]:
    """Run one benchmark; its figures (None if it failed) and how long it took."""
    out = logs / f"{benchmark}.json"
    out.unlink(missing_ok=True)
    begun = time.perf_counter()
    with (logs / f"{benchmark}.log").open("w") as log:
        done = subprocess.run(
            [sys.executable, "-m", f"benchmarks.{benchmark}"],
            stdout=log, stderr=subprocess.STDOUT, env={**os.environ, OUT_VARIABLE: str(out)},
        )  # fmt: skip
    took = time.perf_counter() - begun
    if done.returncode != 0 or not out.exists():
        return None, took
    figures: Figures = json.loads(out.read_text())
    return figures, took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip", nargs="*", default=[], help="benchmarks to leave out")
    parser.add_argument("--logs", type=Path, help="keep each benchmark's report here")
    args = parser.parse_args()
    logs = args.logs or Path(tempfile.mkdtemp(prefix="groundbench-bench-"))
    logs.mkdir(parents=True, exist_ok=True)
    # A log or a pipe gets the table at full width, not at rich's 80-column default.
    console = Console(width=None if sys.stdout.isatty() else 132)
    results: dict[str, tuple[Figures | None, float]] = {}
    for benchmark in dict.fromkeys(r.benchmark for r in ROWS):
        if benchmark in args.skip:
            continue
        console.print(f"running {benchmark} …", style="dim")
        results[benchmark] = run(benchmark, logs)
    console.print(_table(results))
    console.print(f"each benchmark's own report: {logs}/<name>.log", style="dim")


def _table(results: dict[str, tuple[Figures | None, float]]) -> Table:
    table = Table(title="groundbench benchmarks (this machine; compare ratios within one run)")
    for column in ("figure", "value", "beside it", "goal", "met", "took (s)"):
        table.add_column(column, justify="right" if column in ("value", "took (s)") else "left")
    for row in ROWS:
        if row.benchmark not in results:
            continue
        figures, took = results[row.benchmark]
        if figures is None:
            table.add_row(row.what, "failed", "see its log", row.goal, "✗", f"{took:.0f}")
            continue
        met = "" if row.met is None else "[green]yes[/]" if row.met(figures) else "[red]no[/]"
        table.add_row(
            row.what, row.value(figures), row.against(figures), row.goal, met, f"{took:.0f}"
        )
    return table


if __name__ == "__main__":
    main()
