"""What a slow ``groundbench sql`` query costs a run it reads: completions per second before,
during and after a query of about 20 s sent to the run's store.

Issue 19 measured ~90 completions/s falling to ~1–3/s while such a query ran, because the store
actor served it between the run's writes. A run against the simulator (one backend held to
``--rpm``) goes on in this process; once it is going, the query is sent as a user would, with
``groundbench sql STORE QUERY`` in a process of its own. The rates come afterwards from the
``stored_at`` of every response, so measuring takes nothing from the run. The query is sized
first to take about ``--query-s`` seconds alone on this machine. Run (the same script runs on
an older checkout, to compare):

    .venv/bin/python -m benchmarks.query_during_run [--rpm 6000] [--query-s 20]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import duckdb

from benchmarks._figures import record
from benchmarks._sim import small_cohort
from conditions import write_cohort
from runner.distributed import RunOptions, run_experiment
from runner.experiment import load_experiment
from runner.store import read_only

WARM_UP_S = 25.0  # the run's rate is steady by then
WINDOW_S = 15.0  # the rate before and after the query is taken over this long


def _experiment(path: Path, store: Path, images: Path, rpm: int) -> Path:
    path.write_text(
        "\n".join([
            f'store = "{store}"', f'images = "{images}"', "scorers = 1",
            "budgets = [8, 16, 24, 32, 64]",
            "[backends.qwen]", 'provider = "qwen"', 'model = "qwen3-vl-plus"',
            'base_url = "simulator"', f"requests_per_minute = {rpm}", "max_concurrency = 64",
            "[[configurations]]", 'name = "qwen-all"', 'backend = "qwen"', 'conditions = "all"',
        ]) + "\n"
    )  # fmt: skip
    return path


def _slow_query(seconds: float) -> str:
    """A query that takes about ``seconds`` alone here: a filtered cross join of n × n rows."""

    def query(n: int) -> str:
        return f"SELECT count(*) FROM range({n}) a, range({n}) b WHERE a.range + b.range < 0"

    n = 20_000
    with duckdb.connect() as con:
        while True:
            begun = time.perf_counter()
            con.execute(query(n)).fetchall()
            took = time.perf_counter() - begun
            if took > 1.0:
                break
            n *= 2
    return query(int(n * (seconds / took) ** 0.5))


def _rate(stamps: list[float], start: float, end: float) -> float:
    return sum(start <= t < end for t in stamps) / max(end - start, 1e-9)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rpm", type=int, default=6000)
    parser.add_argument("--query-s", type=float, default=20.0)
    parser.add_argument("--images", type=int, default=320)
    args = parser.parse_args()
    sql = _slow_query(args.query_s)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        cohort, images = small_cohort(work / "data", args.images)
        store = work / "exp.duckdb"
        write_cohort(store, cohort)
        path = _experiment(work / "exp.toml", store, images, args.rpm)
        options = RunOptions(progress_every_s=5.0)
        runner = threading.Thread(
            target=run_experiment, args=(load_experiment(path), options, lambda _: None)
        )
        runner.start()
        _wait_for_answers(store, runner)
        time.sleep(WARM_UP_S)
        # This checkout's CLI (run from its root), whichever groundbench is installed.
        cli = [sys.executable, "-c", "from runner.cli import main; main()", "sql"]
        command = [*cli, str(store), sql]
        helped = subprocess.run([*cli, "--help"], capture_output=True, text=True, check=False)
        if "--timeout" in helped.stdout:
            command += ["--timeout", "300"]  # slowed by the run beside it, it must still end
        sent = time.time()
        query = subprocess.run(command, capture_output=True, text=True, check=False)
        answered = time.time()
        runner.join()
        with read_only(store) as con:
            stamps = [
                r[0] for r in con.execute("SELECT epoch(stored_at) FROM responses").fetchall()
            ]
    took = answered - sent
    before = _rate(stamps, sent - WINDOW_S, sent)
    during = _rate(stamps, sent, answered)
    after = _rate(stamps, answered, answered + WINDOW_S)
    outcome = query.stdout.strip().splitlines()[-1:] or query.stderr.strip().splitlines()[-1:]
    print(f"run: one backend at {args.rpm}/min; {len(stamps):,} responses stored")
    print(f"query: about {args.query_s:g} s alone; answered in {took:.1f} s during the run "
          f"(exit {query.returncode}: {' '.join(outcome)[:100]})")  # fmt: skip
    print(f"responses stored per second: {before:.1f} in the {WINDOW_S:.0f} s before the query, "
          f"{during:.1f} while it ran, {after:.1f} in the {WINDOW_S:.0f} s after")  # fmt: skip
    record(before_per_s=before, during_per_s=during, query_s=took)


def _wait_for_answers(store: Path, runner: threading.Thread) -> None:
    """Until the run's store exists and the run is going (the file is locked by then)."""
    while runner.is_alive():
        try:
            read_only(store).close()
        except Exception:  # locked: the run holds it
            return
        time.sleep(0.5)
    raise SystemExit("the run ended before the query could be sent")


if __name__ == "__main__":
    main()
