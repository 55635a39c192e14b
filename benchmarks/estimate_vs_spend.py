"""The estimate before a run against the spend measured after it (issue 39: within ±25%).

The demo's grid (the paper's four configurations over the 13-condition grid, every budget and
the box questions) on a small synthetic cohort, its backends pointed at a simulator this
process serves on loopback, each with prices of its own (per million tokens, in the range the
providers charge). As a user would: ``groundbench check EXPERIMENT --limit N`` (the estimate it
prints, its calls' tokens noted beside the store), then ``groundbench run EXPERIMENT --limit N``
(the estimate its pre-flight prints, from its own calls and the check's), then the spend of
what the run stored (every attempt's tokens at the configured prices, the pre-flight's calls
included). The estimate is of exactly what the run then sends: ``--limit``'s requests.

A second, optional step (``--rest``) estimates the rest of the grid from the stored answers
(``check`` without ``--limit``) and runs it, for the estimate once the store has measured.
Small enough for a 2-core machine: 8 questions per source, ``--limit 2`` (about 230 requests);
about a minute, most of it Ray's start. Run:

    .venv/bin/python -m benchmarks.estimate_vs_spend [--per-source 8] [--limit 2] [--rest]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from benchmarks._figures import record
from benchmarks.startup import serving_in_thread
from conditions import SynthSpec, VariantCache, generate_synthetic
from runner.demo import experiment_text
from runner.experiment import load_experiment
from runner.plan import ensure_questions
from runner.simulator import Simulator
from runner.store import Repository

KEY_VARIABLE = "GROUNDBENCH_ESTIMATE_KEY"
GOAL = 0.25  # the spend within ±25% of the estimate
# Dollars per million tokens, input and output: each backend priced differently, so a
# configuration's share of the grid weighs in the total as it would.
PRICES = {
    "doubao": (0.8, 2.0),
    "kimi": (0.6, 2.5),
    "qwen-max": (0.8, 3.2),
    "gemini-high": (2.0, 12.0),
}
COMMAND = "from runner._launch import main; main()"
VERBOSE = False
SPEND = re.compile(r"estimated spend: \$([\d,.]+) for ([\d,]+) requests")


@dataclass(frozen=True)
class Said:
    """An estimate as a command printed it."""

    dollars: float
    requests: int


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-source", type=int, default=8)
    parser.add_argument("--images", type=int, default=60)
    parser.add_argument("--limit", type=int, default=2)
    parser.add_argument("--rest", action="store_true", help="then estimate and run the rest")
    parser.add_argument(
        "--keep", type=Path, help="work in this folder, kept (else a temporary one)"
    )
    parser.add_argument("--verbose", action="store_true", help="print what the commands print")
    args = parser.parse_args()
    global VERBOSE
    VERBOSE = args.verbose
    with contextlib.ExitStack() as stack:
        folder = args.keep or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="gb-")))
        generate_synthetic(folder / "data", SynthSpec(seed=0, images=args.images))
        path = _experiment(folder, "http://127.0.0.1:9", args.per_source)
        questions = ensure_questions(load_experiment(path))
        sim = Simulator(questions, folder / "data/images/train2014", VariantCache(folder / "sim"))
        with serving_in_thread(sim) as url:
            path = _experiment(folder, url, args.per_source)
            limit = ["--limit", str(args.limit)]
            checked = _said(_command("check", path, *limit), "check")
            before = _spent(path)
            ran = _command("run", path, *limit)
            preflight = _said(ran, "run's pre-flight")
            spent, requests = _spent(path)
            spent -= before[0]
            print(f"--limit {args.limit} on the demo grid ({len(questions.questions)} questions):")
            _compare("check", checked, spent, requests - before[1])
            _compare("run's pre-flight", preflight, spent, requests - before[1])
            figures = {
                "check_estimate": checked.dollars,
                "preflight_estimate": preflight.dollars,
                "spent": spent,
                "check_ratio": spent / checked.dollars,
                "preflight_ratio": spent / preflight.dollars,
            }
            if args.rest:
                rest = _said(_command("check", path), "check after the limited run")
                _command("run", path)
                total, done = _spent(path)
                print("the rest of the grid, estimated from the stored answers:")
                _compare("check", rest, total - spent, done - requests)
                figures["rest_ratio"] = (total - spent) / rest.dollars
    within = all(abs(figures[k] - 1) <= GOAL for k in ("check_ratio", "preflight_ratio"))
    print(f"goal: spend within ±{GOAL:.0%} of the estimate: {'met' if within else 'NOT met'}")
    record(**figures, within=within)


def _compare(who: str, said: Said, spent: float, requests: int) -> None:
    print(
        f"  {who}: estimated ${said.dollars:,.4f} for {said.requests:,} requests; spent "
        f"${spent:,.4f} on {requests:,} requests stored; spend / estimate = "
        f"{spent / said.dollars:.2f}"
    )


def _command(*args: str | Path) -> str:
    """``groundbench ARGS`` as a user runs it, piped: what it printed."""
    done = subprocess.run(
        [sys.executable, "-c", COMMAND, *map(str, args)],
        capture_output=True, text=True, timeout=900,
        env={**os.environ, KEY_VARIABLE: "sk-estimate-benchmark-0123456789"},
    )  # fmt: skip
    if done.returncode not in (0, 3):
        raise RuntimeError(f"groundbench {args[0]} failed:\n{done.stdout}\n{done.stderr}")
    if VERBOSE:
        print(done.stdout)
    return done.stdout


def _said(output: str, who: str) -> Said:
    found = SPEND.search(output)
    if found is None:
        raise RuntimeError(f"the {who} printed no estimate:\n{output}")
    print(f"{who} said: {found.group(0)}")
    return Said(float(found.group(1).replace(",", "")), int(found.group(2).replace(",", "")))


def _spent(path: Path) -> tuple[float, int]:
    """The store's spend (every stored attempt's tokens at the prices) and requests tried."""
    experiment = load_experiment(path)
    if not experiment.store.exists():
        return 0.0, 0
    with Repository(experiment.store) as store:
        progress = store.progress()
    tried = sum(p.complete + p.errored for p in progress)
    return experiment.spent_on(progress), tried


def _experiment(folder: Path, url: str, per_source: int) -> Path:
    """The demo's experiment, its backends at ``url`` (the key from the environment), priced."""
    text = experiment_text(per_source).replace(
        'base_url = "simulator"', f'base_url = "{url}"\napi_key_env = "{KEY_VARIABLE}"'
    )
    for name, (inp, out) in PRICES.items():
        text = text.replace(
            f"[backends.{name}]\n",
            f"[backends.{name}]\nprices = {{ input_per_mtok = {inp}, output_per_mtok = {out} }}\n",
        )
    path = folder / "demo.toml"
    path.write_text(text)
    return path


if __name__ == "__main__":
    main()
