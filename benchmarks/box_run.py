"""A box benchmark on the runner: import, reading throughput, and a whole run.

A made-up GroundingME file (parquet with the images inside, every fifth image above the
1,024-pixel cap) of ``--questions`` questions is read into a store (check every row, write the
images, hash them, store the set); the box scorer reads simulated answers on one core; then the
paper's four configurations ask
every question without and with reasoning through ``groundbench run`` (local Ray, simulator
flat out), and the run is timed. Run:

    .venv/bin/python -m benchmarks.box_run [--questions 1000]
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

from benchmarks._figures import record
from conditions import (
    BENCHMARK_DIMENSIONS,
    FILE_LOADERS,
    Benchmark,
    BoxSet,
    box_set,
    generate_box_benchmark,
    write_box_set,
)
from runner.demo import box_experiment_text
from runner.distributed import BoxScorer, RunOptions, run_experiment
from runner.experiment import load_experiment
from runner.simulator import BoxBehaviour, box_answer
from runner.store import ScoreJob, read_only

BENCHMARK: Benchmark = "groundingme"


def _import(work: Path, questions: int) -> tuple[BoxSet, float, Path]:
    file, images = generate_box_benchmark(BENCHMARK, work / "data", questions, seed=1)
    begun = time.perf_counter()
    made = box_set(BENCHMARK, FILE_LOADERS[BENCHMARK](file, images), images, file.name)
    write_box_set(work / "import.duckdb", made)
    return made, time.perf_counter() - begun, file


def _reading(questions: BoxSet, repeats: int) -> float:
    rng = random.Random(0)
    behaviour = BoxBehaviour()
    jobs = [
        ScoreJob(configuration="m", condition="direct", budget=0, qid=q.qid, attempt=0,
                 answer=box_answer(q, BENCHMARK, "norm1000", behaviour, rng).text)
        for _ in range(repeats) for q in questions.questions
    ]  # fmt: skip
    scorer = BoxScorer(questions, {"m": "norm1000"})
    begun = time.perf_counter()
    scorer.score(jobs)
    return len(jobs) / (time.perf_counter() - begun)


def _run(work: Path, file: Path) -> tuple[float, float, int, bool]:
    text = box_experiment_text(BENCHMARK, file.relative_to(work))
    text = text.replace("requests_per_minute = 3000", "requests_per_minute = 10000000")
    text = text.replace("max_concurrency = 16", "max_concurrency = 64")
    calm = text.replace("faults = { server_error = 0.01, latency_s = [0.05, 0.3] }", "")
    assert calm != text, "the demo's simulator faults changed: update this benchmark"
    text = calm
    path = work / "box.toml"
    path.write_text(text)
    begun = time.perf_counter()
    report = run_experiment(load_experiment(path), RunOptions(progress_every_s=5.0), print)
    wall = time.perf_counter() - begun
    with read_only(work / f"{BENCHMARK}.duckdb") as con:
        row = con.execute(
            "SELECT (SELECT count(*) FROM scores), epoch(max(stored_at) - min(stored_at)) "
            "FROM responses"
        ).fetchone()
    assert row is not None
    return wall, float(row[1]), int(row[0]), report.complete


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        questions, import_s, file = _import(work, args.questions)
        per_s = _reading(questions, repeats=max(1, 20_000 // args.questions))
        wall, span, scored, complete = _run(work, file)
    requests = 4 * 2 * args.questions
    dimensions = ", ".join(BENCHMARK_DIMENSIONS[BENCHMARK])
    print()
    print(f"{BENCHMARK}: {args.questions:,} questions ({dimensions})")
    print(f"import (read, check, write images, hash, store): {import_s:.2f} s")
    print(f"box answers read and scored, one core: {per_s:,.0f}/s")
    print(f"run: {requests:,} requests (4 configurations × direct, cot), complete {complete}, "
          f"{scored:,} scored; {wall:.1f} s incl. Ray and actor start")  # fmt: skip
    print(f"{requests / span:,.0f} req/s from first to last response stored ({span:.1f} s)")
    record(import_s=import_s, read_per_s=per_s, run_s=wall, requests_per_s=requests / span,
           requests=requests, complete=complete)  # fmt: skip


if __name__ == "__main__":
    main()
