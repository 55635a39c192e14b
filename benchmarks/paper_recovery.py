"""Parameter recovery: the paper-sized grid on the simulator's ``paper`` profile, at seeds it
was not fitted on, read back by the report: every effect the profile was given must be found
and every number it was calibrated to recovered; with one effect removed (a control), exactly
the verdicts that rest on it must turn to "does not hold".

For each seed (1, 2 and 3 by default: the profile is calibrated on seed 0) it builds the
paper's synthetic cohort (1,500 questions) from data made at that seed, answers the paper's
grid (the four configurations, Qwen's 13 conditions, Gemini's four, box questions: about
120,000 requests) with the profile's pure model at that seed, in process (no HTTP, no Ray: the
answers a run of that seed stores, :mod:`benchmarks._answers`), scores them as a run and
``groundbench rescore`` do, and reads them as ``groundbench report`` reads the store:

- every finding's verdict (``runner.reports.findings``);
- each number of the paper's §4 the profile is calibrated to, beside this seed's estimate
  and 95% bootstrap interval (over questions: `benchmarks.paper_profile.calibrated`);
- each control of :mod:`benchmarks.controls` (a store transformation removing one effect),
  its answers re-scored where it changed them, and the verdicts it changed: the expected
  flips, those missing and the unexpected ones.

Then, over the seeds, each claim's pass rate (holds k/n), each control's expected and
unexpected flips, and one summary line. The grid is no longer run through the runner here
(``benchmarks.batch_grid`` does that; ``python -m benchmarks.controls STORE`` reads a run's
store the same way). About 7 minutes a seed on the 2-core machine (half a minute to build
the data and cohort, 1 to 2 to answer, 1 to 2.5 to score, 3.5 for the thirteen controls), 22
for the default three; ``--questions 300`` (the demo's cohort) about 1.3 minutes a seed. Run:

    .venv/bin/python -m benchmarks.paper_recovery [--seeds 1 2 3] [--questions 1500|300]
        [--control NAME ...] [--work DIR] [--workers 2]
"""

from __future__ import annotations

import argparse
import pickle
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from benchmarks._figures import record
from benchmarks.controls import (
    CLAIM_NAMES,
    CONTROLS,
    Check,
    Control,
    Flip,
    Scorer,
    answers,
    checks,
    claim_name,
    control_named,
    print_check,
)
from benchmarks.paper_profile import Calibrated, calibrated, cohort_for
from conditions import Cohort
from runner.reports import Finding, findings

PROFILE = "paper"
SEEDS = (1, 2, 3)  # the profile is calibrated on seed 0
GEMINI = "gemini-high"


# -- one seed -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Recovered:
    """One seed's verdicts, calibrated numbers and controls."""

    seed: int
    questions: int
    found: list[Finding]
    numbers: list[Calibrated]
    checks: list[Check]
    took_s: float


def recover(
    seed: int, questions: int, work: Path, workers: int, controls: Sequence[Control]
) -> Recovered:
    """The grid answered at ``seed`` on its cohort, read back, and each control's flips."""
    begun = time.perf_counter()
    cohort: Cohort = pickle.loads(cohort_for(questions, work, seed, draw=seed).read_bytes())
    built = time.perf_counter()
    answer_set = answers(cohort, PROFILE, seed, workers)
    answered = time.perf_counter()
    with Scorer(cohort, workers) as scorer:
        data = scorer.report_data(answer_set)
        found = findings(data)
        scored = time.perf_counter()
        done = list(checks(answer_set, scorer, found, controls))
    took = time.perf_counter() - begun
    print(f"\nseed {seed}: {len(cohort.questions):,} questions; data and cohort "
          f"{built - begun:.0f} s, answered in {answered - built:.0f} s, scored in "
          f"{scored - answered:.0f} s, {len(done)} controls in "
          f"{begun + took - scored:.0f} s")  # fmt: skip
    return Recovered(seed, len(cohort.questions), found, list(calibrated(data)), done, took)


# -- printing -------------------------------------------------------------------------------------


def _short(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def print_seed(r: Recovered) -> None:
    print(f"\nfindings at seed {r.seed}:")
    for f in r.found:
        print(f"  {f.verdict:>25}  {_short(f.claim, 96)}")
        print(f"  {'':>25}    {_short(f.here, 150)}")
    print(f"\ncalibrated numbers at seed {r.seed} (paper | here [95% CI]):")
    for n in r.numbers:
        e = n.estimate
        print(f"  {n.label:36} {n.paper:6.1f} | {e.delta:6.1f} [{e.low:6.1f}, {e.high:6.1f}] "
              f"{'in' if n.inside else 'OUT OF'} its interval")  # fmt: skip
    print(f"\ncontrols at seed {r.seed}:")
    for c in r.checks:
        print_check(c)
    print(f"\ncontrols at seed {r.seed}, in short:")
    for c in r.checks:
        print(f"  {c.summary()}")


_ABBREVIATED = {
    "holds": "holds",
    "does not hold": "NOT",
    "not testable at this size": "open",
    "not testable": "n/t",
}


def print_over_seeds(runs: Sequence[Recovered]) -> None:
    seeds = " ".join(f"{r.seed:>5}" for r in runs)
    print(f"\npass rates over seeds {', '.join(str(r.seed) for r in runs)} (NOT: does not "
          "hold, open: not testable at this size, n/t: not testable):\n")  # fmt: skip
    print(f"  {'claim':26} {'holds':>6}  {seeds}")
    for i, name in enumerate(CLAIM_NAMES):
        verdicts = [r.found[i].verdict for r in runs]
        held = sum(v == "holds" for v in verdicts)
        row = " ".join(f"{_ABBREVIATED[v]:>5}" for v in verdicts)
        print(f"  {name:26} {held:>2}/{len(runs):<3}  {row}")
    if not runs[0].checks:
        return
    print("\ncontrols over the seeds (expected flips to does not hold; missing; unexpected):\n")
    for j, control in enumerate(c.control for c in runs[0].checks):
        per_seed = [r.checks[j] for r in runs]
        flipped = sum(len(c.flipped) for c in per_seed)
        expected = len(control.claims) * len(runs)
        missing = _by_claim((r.seed, f) for r, c in zip(runs, per_seed, strict=True)
                            for f in c.missing)  # fmt: skip
        unexpected = _by_claim((r.seed, f) for r, c in zip(runs, per_seed, strict=True)
                               for f in c.unexpected)  # fmt: skip
        already = _by_claim((r.seed, f) for r, c in zip(runs, per_seed, strict=True)
                            for f in c.already)  # fmt: skip
        print(f"  {control.name:14} {flipped:>3}/{expected:<3} expected"
              f"{'; did not hold before: ' + already if already else ''}"
              f"{'; missing: ' + missing if missing else ''}"
              f"{'; unexpected: ' + unexpected if unexpected else ''}")  # fmt: skip


def _by_claim(flips: Iterator[tuple[int, Flip]]) -> str:
    """``claim (seeds)`` for each claim among ``flips``."""
    seeds: dict[str, list[str]] = {}
    for seed, f in flips:
        seeds.setdefault(claim_name(f.claim), []).append(str(seed))
    return ", ".join(f"{claim} (seed {', '.join(s)})" for claim, s in seeds.items())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=list(SEEDS),
                        help="simulator and synthetic-data seeds (default: 1 2 3)")  # fmt: skip
    parser.add_argument("--questions", type=int, default=1500, choices=(300, 1500))
    parser.add_argument("--control", action="append", choices=[c.name for c in CONTROLS],
                        help="this control only (repeatable; default: all)")  # fmt: skip
    parser.add_argument("--work", type=Path, help="keep the data and cohorts here")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    chosen = [control_named(n) for n in args.control] if args.control else list(CONTROLS)
    begun = time.perf_counter()
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        work = args.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        for seed in args.seeds:
            runs.append(recover(seed, args.questions, work, args.workers, chosen))
            print_seed(runs[-1])
    wall = time.perf_counter() - begun
    print_over_seeds(runs)
    holding = [sum(r.found[i].verdict == "holds" for r in runs) for i in range(len(CLAIM_NAMES))]
    every = sum(h == len(runs) for h in holding)
    inside = sum(c.inside for r in runs for c in r.numbers)
    numbers = sum(len(r.numbers) for r in runs)
    done = [c for r in runs for c in r.checks]
    expected = sum(len(c.control.claims) for c in done)
    flipped = sum(len(c.flipped) for c in done)
    missing = sum(len(c.missing) for c in done)
    already = sum(len(c.already) for c in done)
    unexpected = sum(len(c.unexpected) for c in done)
    exact = sum(c.exact for c in done)
    print(f"\n{every} of {len(CLAIM_NAMES)} claims hold at every seed ({sum(holding)} of "
          f"{len(CLAIM_NAMES) * len(runs)} verdicts hold); {inside} of {numbers} calibrated "
          f"numbers lie in their intervals; the controls flip {flipped} of the {expected} "
          f"expected verdicts to does not hold ({missing} missing, {already} not holding before) "
          f"with {unexpected} unexpected "
          f"change{'' if unexpected == 1 else 's'}, {exact} of {len(done)} exactly; "
          f"{len(runs)} seed{'' if len(runs) == 1 else 's'} of {runs[0].questions:,} questions "
          f"in {wall / 60:.1f} min")  # fmt: skip
    record(
        wall_s=wall, seeds=len(runs), findings=len(CLAIM_NAMES), holding_every_seed=every,
        holding=sum(holding), calibrated_inside=inside, expected_flips=expected,
        flipped=flipped, missing_flips=missing, not_holding_before=already,
        unexpected_flips=unexpected,
        exact_controls=exact,
    )  # fmt: skip


if __name__ == "__main__":
    main()
