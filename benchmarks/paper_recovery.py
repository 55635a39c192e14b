"""Parameter recovery: the paper-sized grid on the simulator's ``paper`` profile, read back by
the report, must find every effect the profile was given and recover every number it was
calibrated to; with one effect removed, exactly the verdicts that rest on it must change.

The paper's grid (1,500 synthetic questions; the four configurations, Qwen's 13 conditions and
Qwen-off, box questions: about 120,000 calls) on the ``paper`` profile, run as
``benchmarks.batch_grid`` runs it (Qwen's and Gemini's backends in batch mode, the simulator
flat out), re-scored against the audits' references (``groundbench rescore``) and read as
``groundbench report`` reads its store: every finding's verdict (``runner.reports.findings``),
and each number of the paper's §4 the profile is calibrated to beside the store's estimate and
95% bootstrap interval (over the keys the report's contrasts resample).

Then the same grid on ``paper-no-reversal``, the profile answering N = 64 as it answers N = 16
(no collapse at the densest budget), and which verdicts flipped: those that rest on the
collapse should, the others not. The control is answered in process by the same pure model
(``benchmarks.paper_profile``, whose answers are the run's: the same luck, scored by the same
functions), which keeps the whole within about 14 minutes on the 2-core machine;
``--control-run`` runs it through the runner too (about 8 minutes more). Run:

    .venv/bin/python -m benchmarks.paper_recovery [--keep DIR] [--control-run]
"""

from __future__ import annotations

import argparse
import multiprocessing
import pickle
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from benchmarks._figures import record
from benchmarks.batch_grid import experiment
from benchmarks.paper_profile import simulate
from conditions import (
    BOX,
    CohortSpec,
    DataRoot,
    SynthSpec,
    build_cohort,
    generate_synthetic,
    write_cohort,
)
from runner.distributed import RunOptions, run_experiment
from runner.experiment import load_experiment
from runner.reports import Finding, ReportData, findings, load_report_data
from runner.reports._data import Cell
from runner.rescore import rescore
from runner.store import read_only
from scoring import BUDGETS, BoxScore, Contrast, PolygonScore, paired_contrast

PROFILE = "paper"
COHORT = "cohort.pkl"
# The claims that rest on the collapse at N = 64, which the control profile removes: they
# should flip there, and no other (F1's control is calibrated on the curve with its collapse).
# Not F2's legal collapse: legality also falls with density alone (the same jitter on the
# 0–999 lattice makes a 64-gon's neighbouring vertices cross more often than a 32-gon's).
RESTS_ON_COLLAPSE = (
    "F1 control",
    "F1 thresholds",
    "F2 non-monotone",
    "F2 subdivision",
    "F2 phases",
    "Rank stability (IoU)",
    "Table 4",
)
GEMINI = "gemini-high"
TURNAROUND_S, POLL_S = 5.0, 2.0  # as benchmarks.batch_grid runs it


def _prepare(work: Path, stores: Sequence[str]) -> None:
    """The synthetic data and the paper's cohort, written into each run's store (and pickled
    for the control answered in process)."""
    generate_synthetic(work / "data", SynthSpec())
    cohort = build_cohort(DataRoot.at(work / "data"), CohortSpec())
    for store in stores:
        write_cohort(work / store, cohort)
    (work / COHORT).write_bytes(pickle.dumps(cohort))


def prepare(work: Path, stores: Sequence[str]) -> None:
    """:func:`_prepare` in a process of its own, as ``benchmarks.paper_grid`` does: the runs'
    driver then loads the cohort from its store, as a user's ``groundbench run`` would."""
    maker = multiprocessing.get_context("spawn").Process(target=_prepare, args=(work, stores))
    maker.start()
    maker.join()
    if maker.exitcode != 0:
        raise SystemExit("preparing the synthetic data and cohort failed")


def run_profile(work: Path, profile: str) -> ReportData:
    """The grid on ``profile``, re-scored, as the report reads it."""
    path = work / f"{profile}.toml"
    path.write_text(experiment(TURNAROUND_S, POLL_S, store=f"{profile}.duckdb", profile=profile))
    begun = time.perf_counter()
    report = run_experiment(load_experiment(path), RunOptions(progress_every_s=60.0), print, path)
    ran = time.perf_counter() - begun
    done = rescore(work / f"{profile}.duckdb")
    took = (time.perf_counter() - begun - ran) / 60
    print(f"{profile}: complete {report.complete}, {ran / 60:.1f} min; re-scored "
          f"{done.rescored:,} answers in {took:.1f} min")  # fmt: skip
    with read_only(work / f"{profile}.duckdb") as con:
        return load_report_data(con, work / f"{profile}.duckdb")


# -- the calibrated numbers ---------------------------------------------------------------------


@dataclass(frozen=True)
class Calibrated:
    """A number of the paper the profile was calibrated to, and this store's estimate."""

    label: str
    paper: float
    estimate: Contrast  # the mean and its 95% bootstrap interval

    @property
    def inside(self) -> bool:
        return self.estimate.low <= self.paper <= self.estimate.high


def _mean(values: dict[tuple[int, str], float]) -> Contrast:
    """The mean of per-key values with its paired-bootstrap interval (against 0)."""
    return paired_contrast(values, dict.fromkeys(values, 0.0))


def _points(s: PolygonScore | None, metric: str = "iou") -> float:
    return 100.0 * float(getattr(s, metric)) if s is not None and s.parseable else 0.0


def _control(s: BoxScore | None, n: int) -> float:
    return _points(s.control[n]) if s is not None and s.parseable else 0.0


def calibrated(data: ReportData) -> Iterator[Calibrated]:
    """Gemini's numbers in the paper's §4 (the profile's calibration targets)."""
    view = data.headline
    direct = {
        (n, q): _points(s)
        for n in BUDGETS
        for q, s in view.polygons.get(Cell(GEMINI, "base", n), {}).items()
    }
    yield Calibrated("Gemini pooled fixed IoU (base)", 57.7, _mean(direct))
    top = view.polygons.get(Cell(GEMINI, "base", 64), {})
    for label, paper, metric in (
        ("Gemini N=64 filled IoU", 37.7, "iou"),
        ("Gemini N=64 legal coverage %", 7.5, "legal"),
        ("Gemini N=64 legal IoU", 4.2, "legal_iou"),
    ):
        yield Calibrated(label, paper, _mean({(64, q): _points(s, metric) for q, s in top.items()}))
    boxes = view.boxes.get(Cell(GEMINI, "base", BOX), {})
    control = {(n, q): _control(boxes.get(q), n) for n, q in direct}
    yield Calibrated("Gemini pooled box-derived control", 57.3, _mean(control))
    yield Calibrated("Gemini direct − control", 57.7 - 57.3, paired_contrast(direct, control))


# -- printing -------------------------------------------------------------------------------------


def _short(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _rests_on_collapse(f: Finding) -> bool:
    return f.claim.startswith(RESTS_ON_COLLAPSE)


_MARKS = {
    (True, True): "flipped",
    (True, False): "FLIPPED, unexpected",
    (False, True): "KEPT, should flip",
    (False, False): "",
}


def print_findings(found: Sequence[Finding], control: Sequence[Finding]) -> None:
    """Each claim's verdict, its verdict on the control, and whether it should have flipped."""
    for f, g in zip(found, control, strict=True):
        flipped = g.verdict != f.verdict
        should = _rests_on_collapse(f)
        mark = _MARKS[(flipped, should)]
        print(f"{_short(f.claim, 76):76}  {f.verdict:26}  {g.verdict:26}  {mark}")
        print(f"    {_short(f.here, 150)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="work here and keep it (default: a temp dir)")
    parser.add_argument("--removed", default="paper-no-reversal",
                        help="the profile with one effect removed")  # fmt: skip
    parser.add_argument("--control-run", action="store_true",
                        help="run the control through the runner too, not in process")  # fmt: skip
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = args.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        begun = time.perf_counter()
        prepare(work, [f"{p}.duckdb" for p in (PROFILE, args.removed)])
        data = run_profile(work, PROFILE)
        if args.control_run:
            flat = run_profile(work, args.removed)
        else:
            _, flat = simulate(work / COHORT, args.removed)
        wall = time.perf_counter() - begun
    found, control = findings(data), findings(flat)
    print(f"\nfindings: '{PROFILE}' (run), '{args.removed}' "
          f"({'run' if args.control_run else 'in process'}):\n")  # fmt: skip
    print_findings(found, control)
    numbers = list(calibrated(data))
    print(f"\ncalibrated numbers on '{PROFILE}' (paper | this store [95% CI]):\n")
    for c in numbers:
        e = c.estimate
        print(f"{c.label:36} {c.paper:6.1f} | {e.delta:6.1f} [{e.low:6.1f}, {e.high:6.1f}] "
              f"{'in' if c.inside else 'OUT OF'} its interval")  # fmt: skip
    holding = sum(f.verdict == "holds" for f in found)
    flips = [(f, g) for f, g in zip(found, control, strict=True) if f.verdict != g.verdict]
    expected = sum(_rests_on_collapse(f) for f in found)
    unexpected = [f.claim for f, _ in flips if not _rests_on_collapse(f)]
    print(f"\n{holding} of {len(found)} findings hold; {sum(c.inside for c in numbers)} of "
          f"{len(numbers)} calibrated numbers lie in their intervals; '{args.removed}' flips "
          f"{len(flips) - len(unexpected)} of the {expected} claims resting on the collapse, "
          f"and {len(unexpected)} other{'' if len(unexpected) == 1 else 's'}"
          + (f": {'; '.join(unexpected)}" if unexpected else ""))  # fmt: skip
    print(f"wall time {wall / 60:.1f} min")
    record(
        wall_s=wall, findings=len(found), holding=holding, flipped=len(flips),
        unexpected_flips=len(unexpected), calibrated_inside=sum(c.inside for c in numbers),
    )  # fmt: skip


if __name__ == "__main__":
    main()
