"""Start-up: the time from ``groundbench run`` to the first call reaching a provider.

Issue 21's goal: at most 5 s on an idle machine when the cohort is already stored. The
experiment is the demo's (the paper's four configurations over the 13-condition grid on a
120-image synthetic cohort), its backends pointed at a simulator this process serves on
loopback, so the first call's arrival is seen where it lands. The cohort is built and stored
first, as a first run would leave it; each measured run is the real command in a process of
its own (``groundbench run EXPERIMENT --no-check``), interrupted with Ctrl-C once the first call
has arrived, so later runs still find the grid nearly all pending.

Beside the total: the command's imports alone (``python -c "import runner.cli,
runner.distributed"``, less a bare interpreter), and when the run says where to attach (its
store actor is open: experiment and cohort read, Ray started). Run:

    .venv/bin/python -m benchmarks.startup [--runs 3]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from benchmarks._figures import record
from conditions import SynthSpec, VariantCache, generate_synthetic
from runner.demo import experiment_text
from runner.experiment import load_experiment
from runner.plan import ensure_questions
from runner.simulator import Simulator, serving

KEY_VARIABLE = "GROUNDBENCH_STARTUP_KEY"
ATTACH_LINE = "attach from another terminal"
FIRST_CALL_WAIT_S = 120.0


@dataclass(frozen=True)
class Start:
    """One run's start-up, in seconds from the command's launch."""

    attach_s: float | None  # the run said where to attach: its store actor is open
    first_call_s: float  # the first call arrived at the simulator


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    imports = import_time()
    print(f"imports of the run command: {imports:.2f} s (less a bare interpreter)")
    with tempfile.TemporaryDirectory(prefix="gb-startup-") as tmp:
        folder = Path(tmp)
        generate_synthetic(folder / "data", SynthSpec(seed=0, images=120))
        questions = ensure_questions(load_experiment(_experiment(folder, "http://127.0.0.1:9")))
        sim = Simulator(questions, folder / "data/images/train2014", VariantCache(folder / "sim"))
        with serving_in_thread(sim) as url:
            path = _experiment(folder, url)
            starts = []
            for k in range(args.runs):
                start = measure(path, sim)
                starts.append(start)
                seen = f"{start.attach_s:.2f} s" if start.attach_s is not None else "not seen"
                print(f"run {k + 1}: first call at {start.first_call_s:.2f} s (attach {seen})")
    first = statistics.median(s.first_call_s for s in starts)
    attach_times = [s.attach_s for s in starts if s.attach_s is not None]
    attach = statistics.median(attach_times) if attach_times else float("nan")
    print(f"median of {args.runs}: first call {first:.2f} s after the command (goal ≤ 5 s); "
          f"attach line {attach:.2f} s; imports {imports:.2f} s")  # fmt: skip
    record(first_call_s=first, attach_s=attach, import_s=imports, runs=args.runs)


def measure(path: Path, sim: Simulator) -> Start:
    """Launch the run, wait for the first call to arrive, interrupt it and wait for its end."""
    seen = len(sim.stats.admitted_at)
    attach: list[float] = []
    begun = time.monotonic()
    process = subprocess.Popen(
        [*_command(), "run", str(path), "--no-check"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
        env={**os.environ, KEY_VARIABLE: "sk-startup-benchmark-0123456789"},
    )  # fmt: skip
    reader = threading.Thread(target=_watch, args=(process, attach), daemon=True)
    reader.start()
    try:
        while len(sim.stats.admitted_at) == seen:
            if process.poll() is not None or time.monotonic() - begun > FIRST_CALL_WAIT_S:
                raise RuntimeError(f"the run ended or stalled before its first call ({path})")
            time.sleep(0.005)
        # The simulator's clock is this process's monotonic one.
        first = sim.stats.admitted_at[seen] - begun
    finally:
        _stop(process)
        reader.join(10)
    return Start(attach[0] - begun if attach else None, first)


def import_time() -> float:
    """Seconds the run command's imports take, less a bare interpreter's start (best of 3)."""

    def best(code: str) -> float:
        times = []
        for _ in range(3):
            begun = time.perf_counter()
            subprocess.run([sys.executable, "-c", code], check=True)
            times.append(time.perf_counter() - begun)
        return min(times)

    return best("import runner.cli, runner.distributed") - best("pass")


@contextlib.contextmanager
def serving_in_thread(sim: Simulator) -> Iterator[str]:
    """``sim`` on loopback (port 0) in a thread of this process; yields its address."""
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    url: list[str] = []
    stop = asyncio.Event()

    async def serve() -> None:
        async with serving(sim) as address:
            url.append(address)
            ready.set()
            await stop.wait()

    thread = threading.Thread(target=loop.run_until_complete, args=(serve(),), daemon=True)
    thread.start()
    if not ready.wait(30):
        raise RuntimeError("the simulator did not start")
    try:
        yield url[0]
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(30)
        loop.close()


def _experiment(folder: Path, url: str) -> Path:
    """The demo's experiment, its backends at ``url`` with the key from the environment."""
    text = experiment_text(20).replace(
        'base_url = "simulator"', f'base_url = "{url}"\napi_key_env = "{KEY_VARIABLE}"'
    )
    path = folder / "demo.toml"
    path.write_text(text)
    return path


def _command() -> list[str]:
    """``groundbench`` as installed beside this interpreter, else the module behind it."""
    script = Path(sys.executable).with_name("groundbench")
    return [str(script)] if script.exists() else [sys.executable, "-m", "runner.cli"]


def _watch(process: subprocess.Popen[str], attach: list[float]) -> None:
    assert process.stdout is not None
    for line in process.stdout:
        if ATTACH_LINE in line and not attach:
            attach.append(time.monotonic())


def _stop(process: subprocess.Popen[str]) -> None:
    """Ctrl-C, as a user would; the whole process group killed if it lingers."""
    with contextlib.suppress(ProcessLookupError):
        process.send_signal(signal.SIGINT)
    try:
        process.wait(60)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(10)


if __name__ == "__main__":
    main()
