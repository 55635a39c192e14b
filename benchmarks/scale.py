"""How cost grows: a grid of 120,000 requests (the paper's) and one of 1,200,000, planned, stored
and resumed, with no call made.

Issue 21's goals at 1.2 M: the resume scan under 2 s, the driver under 1 GB. The grids are the
paper's four configurations on a 1,500-question synthetic cohort, one copy of them for 120,000
requests and ten (each copy's configurations renamed, on the same four backends) for 1,200,000.
Each store holds the grid with every other request answered (an answer and reasoning of
realistic length), so a resume has half the grid to send.

The resume is measured as a run does it, the driver and the store in processes of their own
(the store actor's work in a child process, its arguments and answers pickled across, as Ray
does): the driver reads the experiment and the stored cohort, plans the grid, the store opens
and registers it, then the driver asks it for each backend's pending calls, as the feeder does
before its first chunk. Printed per size: the resume scan (every backend's pending calls, from
the ask to the list in the driver), the store's opening and registration, the file's size, and
the peak resident memory of the driver and of the store. About 4 minutes on the 2-core machine,
most of it making the cohort and the stored answers. Run:

    .venv/bin/python -m benchmarks.scale [--sizes 120000 1200000]
"""

from __future__ import annotations

import argparse
import multiprocessing
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from benchmarks._figures import record
from benchmarks._store import answer_rows
from conditions import SynthSpec, generate_synthetic, write_cohort
from runner.demo import experiment_text
from runner.experiment import Experiment, load_experiment
from runner.plan import ensure_cohort, ensure_questions, grid_of
from runner.store import Repository, ScoreRow, Store, grid_table, pending_rows

PAPER_REQUESTS = 120_000  # the paper's configurations on the 1,500-question cohort
WRITE_BATCH = 20_000


@dataclass(frozen=True)
class Resume:
    """One resume of a stored grid, as the driver and the store see it."""

    requests: int
    pending: int
    questions_s: float  # the experiment read, the stored cohort loaded and checked
    plan_s: float  # the grid planned in the driver
    open_s: float  # the store opened (its keys read)
    register_s: float  # the grid sent to the store and registered
    scan_s: float  # every backend's pending calls, from the ask to the list in the driver
    driver_mb: float  # peak resident memory
    store_mb: float
    file_mb: float


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[120_000, 1_200_000])
    args = parser.parse_args()
    figures: dict[str, float | int] = {}
    begun = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="gb-scale-") as tmp:
        folder = Path(tmp)
        generate_synthetic(folder / "data", SynthSpec())
        cohort = None
        for size in args.sizes:
            path = _experiment(folder, size)
            experiment = load_experiment(path)
            if cohort is None:
                cohort = ensure_cohort(experiment)  # built once, from the data
            else:
                write_cohort(experiment.store, cohort)
            stored = time.perf_counter()
            answered = store_half(experiment)
            stored = time.perf_counter() - stored
            print(f"{size:,}: stored the grid and {answered:,} answers in {stored:.0f} s")
            resume = in_child(resume_of, path)
            _say(resume)
            label = f"{size // 1000}k"
            figures.update({f"{k}_{label}": v for k, v in asdict(resume).items()})
    print(f"benchmark wall time {time.perf_counter() - begun:.0f} s")
    record(**figures)


def store_half(experiment: Experiment) -> int:
    """Register the experiment's grid, as its first run would, and answer every other request."""
    questions = ensure_questions(experiment)
    grid = grid_of(experiment, questions, _configurations(experiment))
    half = list(grid.rows[::2])
    with Store(experiment.store) as store:
        store.register(grid.registrations, grid.rows)
        for i in range(0, len(half), WRITE_BATCH):
            batch = half[i : i + WRITE_BATCH]
            store.write_responses(answer_rows(batch, seed=i))
            # Scored as they landed, as in a run: a resume has no answer left to score.
            store.repository.write_scores(
                [ScoreRow.of(g.request.attempt(0), parseable=True, iou=0.5) for g in batch], []
            )
            store.score_queue.take(len(batch))
    return len(half)


def resume_of(path: Path) -> Resume:
    """What a run does before its first chunk, this process the driver (see the docstring)."""
    begun = time.perf_counter()
    experiment = load_experiment(path)
    questions = ensure_questions(experiment)
    questions_s = time.perf_counter() - begun
    begun = time.perf_counter()
    configurations = _configurations(experiment)
    grid = grid_of(experiment, questions, configurations)
    plan_s = time.perf_counter() - begun
    with StoreProcess(experiment.store) as store:
        begun = time.perf_counter()
        store.call("open")
        open_s = time.perf_counter() - begun
        begun = time.perf_counter()
        store.call("register", list(grid.registrations), grid_table(grid.rows))
        register_s = time.perf_counter() - begun
        begun = time.perf_counter()
        pending = []
        for backend in experiment.backends:
            names = [c.name for c in experiment.configurations_of(backend)]
            # As the driver's store port does: the columns cross, the rows are made here.
            pending.append(pending_rows(store.call("pending_table", names)))
        scan_s = time.perf_counter() - begun
        store_mb = store.call("peak_mb")
    return Resume(
        requests=len(grid.rows),
        pending=sum(len(p) for p in pending),
        questions_s=questions_s,
        plan_s=plan_s,
        open_s=open_s,
        register_s=register_s,
        scan_s=scan_s,
        driver_mb=_peak_mb(),
        store_mb=store_mb,
        file_mb=experiment.store.stat().st_size / 2**20,
    )


class StoreProcess:
    """:class:`Repository` in a process of its own, called with pickled arguments and answers as the
    store actor is (Ray pickles them too)."""

    def __init__(self, path: Path) -> None:
        context = multiprocessing.get_context("spawn")  # a fresh process: its own peak memory
        self._conn, theirs = context.Pipe()
        self._process = context.Process(target=_serve, args=(path, theirs))

    def __enter__(self) -> StoreProcess:
        self._process.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._conn.send(None)
        self._process.join(60)

    def call(self, method: str, *args: Any) -> Any:
        self._conn.send((method, args))
        ok, value = self._conn.recv()
        if not ok:
            raise RuntimeError(f"the store process failed: {value}")
        return value


def _serve(path: Path, conn: Connection) -> None:
    store: Repository | None = None
    try:
        while (message := conn.recv()) is not None:
            method, args = message
            try:
                if method == "open":
                    store = Repository(path)
                    value: Any = None
                elif method == "peak_mb":
                    value = _peak_mb()
                else:
                    assert store is not None
                    value = getattr(store, method)(*args)
                conn.send((True, value))
            except Exception as exc:  # handed to the driver, which stops
                conn.send((False, repr(exc)))
    finally:
        if store is not None:
            store.close()


def in_child(work: Callable[[Path], Resume], path: Path) -> Resume:
    """``work(path)`` in a fresh process (the driver's peak memory is its own)."""
    context = multiprocessing.get_context("spawn")
    ours, theirs = context.Pipe()
    process = context.Process(target=_answer, args=(work, path, theirs))
    process.start()
    try:
        resume: Resume = ours.recv()
    finally:
        process.join(60)
    return resume


def _answer(work: Callable[[Path], Resume], path: Path, conn: Connection) -> None:
    conn.send(work(path))


def _peak_mb() -> float:
    """This process's peak resident memory. Not ``getrusage``'s: Linux keeps its maximum across
    ``exec``, so a spawned child would report its parent's."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024  # kB
    raise RuntimeError("no VmHWM in /proc/self/status (Linux only)")


def _configurations(experiment: Experiment) -> list[Any]:
    return [experiment.configuration(c, None) for c in experiment.configurations]


def _experiment(folder: Path, size: int) -> Path:
    """The paper's configurations on simulated backends, as many copies as make ``size``
    requests: each copy's configurations renamed, on the same four backends."""
    copies = max(1, round(size / PAPER_REQUESTS))
    store = f"grid-{size}.duckdb"
    head, *blocks = experiment_text(500, store=store).split("\n[[configurations]]")
    lines = [head]
    for k in range(copies):
        lines += [_renamed(block, k) for block in blocks]
    path = folder / f"grid-{size}.toml"
    path.write_text("\n[[configurations]]".join(lines))
    return path


def _renamed(block: str, k: int) -> str:
    """A configuration block of the demo's text, its name suffixed with its copy's number."""
    name = next(line for line in block.splitlines() if line.startswith("name = "))
    return block.replace(name, f'{name[:-1]}-{k}"')


def _say(r: Resume) -> None:
    print(f"  {r.requests:,} requests, {r.pending:,} pending")
    print(
        f"  resume scan {r.scan_s:.2f} s (goal < 2 s at 1.2 M); store open {r.open_s:.2f} s, "
        f"register {r.register_s:.2f} s; questions {r.questions_s:.2f} s, plan {r.plan_s:.2f} s"
    )
    print(f"  peak memory: driver {r.driver_mb:,.0f} MB (goal < 1 GB at 1.2 M), "
          f"store {r.store_mb:,.0f} MB; store file {r.file_mb:,.0f} MB")  # fmt: skip


if __name__ == "__main__":
    main()
