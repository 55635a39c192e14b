"""The paper-sized grid end to end: about 120,000 calls on a 1,500-question synthetic cohort.

The paper's four configurations over the 13-condition grid, each on its own backend actor,
against the built-in simulator flat out (no rate limit, no latency), on a local Ray: the run's
wall time, its completed requests per second, and its peak memory, summed over the driver and
every Ray process of the session (proportional set size, so shared pages count once; the
resident size, which counts them in each process, beside it). Issue 7 sets the goal: under 20
minutes and under 3 GB on this 2-core machine. Run:

    .venv/bin/python -m benchmarks.paper_grid [--concurrency 64] [--keep DIR]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import tempfile
import threading
import time
from pathlib import Path

from benchmarks._figures import record
from conditions import (
    PAPER_CONFIGURATIONS,
    CohortSpec,
    DataRoot,
    SynthSpec,
    build_cohort,
    generate_synthetic,
    write_cohort,
)
from runner.demo import experiment_text
from runner.distributed import RunOptions, run_experiment
from runner.experiment import load_experiment
from runner.store import read_only

FLAT_OUT = {c.name: 10_000_000 for c in PAPER_CONFIGURATIONS}
NO_FAULTS = {"seed": 0}


class MemorySampler:
    """Peak summed PSS and RSS of this process and the machine's Ray processes."""

    def __init__(self, every_s: float = 0.5) -> None:
        self.every_s = every_s
        self.peak_pss = self.peak_rss = 0
        self.peaks: dict[int, int] = {}  # peak PSS per process
        self.labels: dict[int, str] = {}  # what each process is (its actor class, at best)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> MemorySampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            pss = rss = 0
            for pid, role in _session_pids():
                p, r = _memory_kb(pid)
                pss, rss = pss + p, rss + r
                self.peaks[pid] = max(self.peaks.get(pid, 0), p)
                if pid not in self.labels or role not in ("IDLE", "python"):
                    self.labels[pid] = role
            self.peak_pss, self.peak_rss = max(self.peak_pss, pss), max(self.peak_rss, rss)


def _session_pids() -> list[tuple[int, str]]:
    own = os.getpid()
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        if int(entry.name) == own or b"ray::" in cmdline or b"/ray/" in cmdline:
            pids.append((int(entry.name), _role(int(entry.name) == own, cmdline)))
    return pids


def _role(driver: bool, cmdline: bytes) -> str:
    if driver:
        return "driver"
    text = cmdline.decode(errors="replace").strip()
    if text.startswith("ray::"):
        # "ray::groundbench-…-backend-kimi:BackendActor.run" or "ray::StoreActor.write_…"
        title = text.split()[0].removeprefix("ray::")
        return title.split(":")[-1].split(".")[0]
    return Path(text.split()[0]).name


def _memory_kb(pid: int) -> tuple[int, int]:
    try:
        text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return 0, 0
    fields = dict(line.split(":", 1) for line in text.splitlines()[1:] if ":" in line)
    return int(fields.get("Pss", "0 kB").split()[0]), int(fields.get("Rss", "0 kB").split()[0])


def _prepare(work: Path) -> None:
    """The synthetic data in the real RefCOCO layout, and the paper's cohort drawn from it."""
    generate_synthetic(work / "data", SynthSpec())
    write_cohort(work / "paper.duckdb", build_cohort(DataRoot.at(work / "data"), CohortSpec()))


def prepare(work: Path) -> None:
    """:func:`_prepare` in a process of its own: the caller is the run's driver, measured as a
    user's `groundbench run` would be (it loads the cohort from the store, nothing more)."""
    maker = multiprocessing.get_context("spawn").Process(target=_prepare, args=(work,))
    maker.start()
    maker.join()
    if maker.exitcode != 0:
        raise SystemExit("preparing the synthetic data and cohort failed")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--keep", type=Path, help="work here and keep it (default: a temp dir)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = args.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        begun = time.perf_counter()
        prepare(work)
        prepared = time.perf_counter() - begun
        path = work / "paper.toml"
        path.write_text(
            experiment_text(
                500, store="paper.duckdb", limits=FLAT_OUT, concurrency=args.concurrency,
                simulator=NO_FAULTS,
            )
        )  # fmt: skip
        with MemorySampler() as memory:
            begun = time.perf_counter()
            report = run_experiment(
                load_experiment(path), RunOptions(progress_every_s=30.0), print, path
            )
            wall = time.perf_counter() - begun
        with read_only(work / "paper.duckdb") as con:
            row = con.execute("SELECT count(*) FROM questions").fetchone()
            questions = row[0] if row is not None else 0
    requests = sum(p.requests for p in report.progress)
    attempts = sum(p.responses for p in report.progress)
    print()
    print(f"cohort: {questions:,} questions (data and cohort made in {prepared:.1f} s)")
    print(f"grid: {requests:,} requests, {attempts:,} attempts stored, "
          f"complete: {report.complete}, unscored at the end: {report.unscored:,}")  # fmt: skip
    print(f"run wall time (Ray start to report): {wall:.1f} s = {wall / 60:.1f} min "
          f"(goal < 20 min); {requests / wall:,.0f} completed requests/s")  # fmt: skip
    print(f"peak memory, driver + Ray processes: PSS {memory.peak_pss / 1024**2:.2f} GB "
          f"(goal < 3 GB), RSS {memory.peak_rss / 1024**2:.2f} GB")  # fmt: skip
    top = sorted(memory.peaks.items(), key=lambda kv: -kv[1])[:12]
    print("peak PSS by process: "
          + ", ".join(f"{memory.labels[pid]} {kb / 1024:.0f} MB" for pid, kb in top))  # fmt: skip
    record(
        wall_s=wall, peak_pss_gb=memory.peak_pss / 1024**2, requests=requests,
        complete=report.complete and report.unscored == 0,
    )  # fmt: skip


if __name__ == "__main__":
    main()
