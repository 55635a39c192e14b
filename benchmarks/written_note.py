"""The cost of the note a store keeps of what it wrote (``<store>.written``, issue 37).

Each committed write rewrites the note in place: one ``pwrite`` of 96 bytes, no sync. Measured
where it weighs most, an online run's small writes (one response a write), with and without the
note, in rounds where either goes first; checkpoints held off so that both sides do the same
work. Run:

    .venv/bin/python -m benchmarks.written_note [--writes 1000] [--batch 1] [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import runner.store._repository as store_module
from benchmarks._figures import record
from benchmarks._store import answer_rows, paper_grid
from runner.store import ResponseRow, Store
from runner.store._written import Note, Written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writes", type=int, default=1000)
    parser.add_argument("--batch", type=int, default=1, help="responses a write")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    rows = answer_rows(paper_grid(cells=args.writes * args.batch * args.rounds * 2))
    store_module.CHECKPOINT_ROWS = len(rows) + 1  # none during the timing, on either side
    store_module.CHECKPOINT_S = float("inf")
    with_note, without, ratios = 0.0, 0.0, []
    chunk = args.writes * args.batch
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            mine = rows[2 * r * chunk : (2 * r + 1) * chunk]
            theirs = rows[(2 * r + 1) * chunk : (2 * r + 2) * chunk]
            sides = [(True, mine), (False, theirs)]
            spent = {}
            for note, part in sides if r % 2 == 0 else sides[::-1]:  # either goes first
                spent[note] = _timed(Path(tmp) / f"{note}-{r}.duckdb", part, args.batch, note=note)
            with_note, without = with_note + spent[True], without + spent[False]
            ratios.append(spent[True] / spent[False])
        alone = _note_alone(Path(tmp) / "alone.duckdb", args.writes)
    writes = args.writes * args.rounds
    ratio = statistics.median(ratios)
    print(f"{writes:,} writes of {args.batch} response(s), {args.rounds} rounds, either first")
    print(f"{'store write':<28}{'µs a write':>12}")
    print(f"{'with the note':<28}{1e6 * with_note / writes:>12,.0f}")
    print(f"{'without':<28}{1e6 * without / writes:>12,.0f}")
    print(f"{'the note alone':<28}{1e6 * alone / args.writes:>12,.1f}")
    print(f"ratio with / without, median of rounds: {ratio:.3f} "
          f"(rounds {min(ratios):.2f}–{max(ratios):.2f}: the machine's noise)")  # fmt: skip
    record(note_ratio=ratio, note_us=1e6 * alone / args.writes)


def _timed(path: Path, rows: list[ResponseRow], batch: int, *, note: bool) -> float:
    """Seconds to write ``rows`` ``batch`` at a time, the note rewritten after each or not."""
    with Store(path) as store:
        if not note:
            store.repository._note.close()  # a closed note writes nothing
        begun = time.perf_counter()
        for i in range(0, len(rows), batch):
            store.write_responses(rows[i : i + batch])
        return time.perf_counter() - begun


def _note_alone(path: Path, writes: int) -> float:
    note = Note(path)
    begun = time.perf_counter()
    for i in range(writes):
        note.write(Written(i, i, 0))
    spent = time.perf_counter() - begun
    note.close()
    return spent


if __name__ == "__main__":
    main()
