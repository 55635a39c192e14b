"""A killed driver: the calls that reach the server after ``kill -9``, and those paid twice.

Issue 36's check, from outside as the issue measured it: one OpenAI-compatible backend (the
simulator, served by this process on loopback, 0.05-0.15 s a call) at 240 and at 6,000 calls a
minute, 8 at a time; ``groundbench run EXPERIMENT --no-check`` in a process of its own, with a
local Ray of its own; once 6 answers are made the driver alone is SIGKILLed, and the calls the
server admits over the next ``--settle`` seconds are counted. A rerun (at full speed) then
completes the grid, and the simulator counts the answers it made twice. The goal: after the
kill, no more calls than were in flight (the backend's ``max_concurrency``, 8), and paid twice
no more than that.

``--checkout`` runs another checkout's ``groundbench`` (its ``runner`` first on the path), the
simulator staying this one's: for the baseline,

    git worktree add /tmp/gb-base 193822e
    .venv/bin/python -m benchmarks.driver_kill --checkout /tmp/gb-base
    .venv/bin/python -m benchmarks.driver_kill            # this checkout
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from benchmarks.startup import serving_in_thread
from conditions import (
    CohortSpec,
    DataRoot,
    SynthSpec,
    VariantCache,
    build_cohort,
    generate_synthetic,
    write_cohort,
)
from runner.simulator import Behaviour, Faults, SimSpec, Simulator

KEY_VARIABLE = "GROUNDBENCH_KILL_KEY"
CONCURRENCY = 8
ANSWERED_AT_KILL = 6
WAIT_S = 180.0  # for the run's first answers, or a rerun's end: a stalled run is an error


@dataclass(frozen=True)
class Kill:
    per_minute: int
    late: int  # calls admitted after the kill
    paid_twice: int  # answers made twice, once the rerun completed
    rerun_ok: bool


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkout", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument("--rates", type=int, nargs="+", default=[240, 6000])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--settle", type=float, default=15.0, help="seconds counted after a kill")
    args = parser.parse_args()
    print(f"groundbench from {args.checkout}; {CONCURRENCY} calls in flight at most")
    kills = [
        kill(args.checkout, rate, args.settle) for rate in args.rates for _ in range(args.runs)
    ]
    for rate in args.rates:
        mine = [k for k in kills if k.per_minute == rate]
        late = ", ".join(str(k.late) for k in mine)
        twice = ", ".join(str(k.paid_twice) for k in mine)
        print(f"{rate:>6,}/min: calls after the kill {late} (max {max(k.late for k in mine)}); "
              f"paid twice on the rerun {twice}; reruns complete: "
              f"{sum(k.rerun_ok for k in mine)}/{len(mine)}")  # fmt: skip


def kill(checkout: Path, per_minute: int, settle_s: float) -> Kill:
    with tempfile.TemporaryDirectory(prefix="gb-kill-") as tmp:
        folder = Path(tmp)
        generate_synthetic(folder / "data", SynthSpec(seed=3, images=80))
        root = DataRoot.at(folder / "data")
        cohort = build_cohort(root, CohortSpec(seed=0, per_source=15, matched=15))
        write_cohort(folder / "exp.duckdb", cohort)
        spec = SimSpec(
            seed=11,
            behaviour=Behaviour(refusal=0.0, wrong_count=0.0, decimals=0.0),
            faults=Faults(latency_s=(0.05, 0.15)),
        )
        sim = Simulator(cohort, root.images, VariantCache(folder / "sim"), spec)
        with serving_in_thread(sim) as url:
            driver = _run(checkout, _experiment(folder, root, url, per_minute))
            try:
                _until(lambda: sim.stats.answered >= ANSWERED_AT_KILL, driver)
                driver.send_signal(signal.SIGKILL)  # the driver alone, as `kill -9 PID`
                reached = len(sim.stats.admitted_at)
                time.sleep(settle_s)
                late = len(sim.stats.admitted_at) - reached
            finally:
                _end(driver)
            rerun = _run(checkout, _experiment(folder, root, url, 60_000))
            try:
                rerun.wait(WAIT_S)
            finally:
                _end(rerun)
            print(f"  {per_minute:,}/min: {late} calls after the kill, "
                  f"{sim.stats.paid_twice} paid twice, rerun exit {rerun.returncode}")  # fmt: skip
            return Kill(per_minute, late, sim.stats.paid_twice, rerun.returncode == 0)


def _experiment(folder: Path, root: DataRoot, url: str, per_minute: int) -> Path:
    path = folder / "exp.toml"
    path.write_text(
        f'store = "{folder / "exp.duckdb"}"\nimages = "{root.images}"\nbudgets = [8, 16]\n'
        f'scorers = 1\n[backends.a]\nprovider = "qwen"\nmodel = "qwen3-vl-plus"\n'
        f'base_url = "{url}"\napi_key_env = "{KEY_VARIABLE}"\n'
        f"requests_per_minute = {per_minute}\nmax_concurrency = {CONCURRENCY}\n"
        '[[configurations]]\nname = "qa"\nbackend = "a"\nconditions = ["base"]\n'
    )
    return path


def _run(checkout: Path, path: Path) -> subprocess.Popen[bytes]:
    """``groundbench run PATH --no-check`` from ``checkout``, with a local Ray of its own."""
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    return subprocess.Popen(
        [sys.executable, "-c", "from runner.cli import main; main()", "run", str(path),
         "--no-check", "--progress-every", "1"],
        env={**env, "PYTHONPATH": str(checkout), KEY_VARIABLE: "sk-kill-benchmark-0123456789"},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        cwd=path.parent,
    )  # fmt: skip


def _until(condition: Callable[[], bool], process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError("the run ended or stalled before the kill")
        time.sleep(0.005)


def _end(process: subprocess.Popen[bytes]) -> None:
    """The process's whole session (its local Ray with it), whatever is left of it."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(30)


if __name__ == "__main__":
    main()
