"""The answer parser on long answers: time and peak memory, bounded parser beside the old one.

Issue 19: a 39 MB answer took 13 s and 6.1 GB inside the old parser's regex. The old parser is
kept as the test oracle (``tests/scoring/reference_parse.py``); both read the same texts here,
in one run, at the size given (4 MiB, a response's default cap, unless told). Each text is
one way an answer can go wrong at length. Times are the best of ``--repeat`` runs without
tracing; memory is the peak under ``tracemalloc``. The old parser is skipped above 4 MiB
(``--old`` to run it anyway: it needs gigabytes). Run:

    .venv/bin/python -m benchmarks.parse_bounds [--mb 4] [--repeat 3] [--old]
"""

from __future__ import annotations

import argparse
import time
import tracemalloc
from collections.abc import Callable

from benchmarks._figures import record
from scoring import parse_list
from tests.scoring import reference_parse

Parser = Callable[[str, int], object]


def _texts(size: int) -> dict[str, str]:
    return {
        "one run of numbers": "1 " * (size // 2),
        "nested brackets": "[" * (size // 2) + "]" * (size // 2),
        "brackets never closed": "[1 " * (size // 3),
        "brackets never opened": "]" * size,
        "prose, then a list": "word 12, " * (size // 9) + "[1, 2, 3, 4]",
        "lists, the last at the end": "[1, 2] " * (size // 7),
        "one list, runaway": "[" + "[123, 456], " * (size // 12) + "[1, 2]]",
        "a list of long numbers": "[" + ("0." + "3" * 70 + ", ") * (size // 74) + "2]",
        "groups that are no lists": "[x] " * (size // 4),
        "groups of numbers and words": "[1 x] " * (size // 6),
        "groups like lists, no lists": "[n] [1-2] [1.2.3] [e 1] " * (size // 24),
        "ranges": "10-20, 30-40, " * (size // 14),
        "lone numbers": "1 a " * (size // 4),
        "words": "a " * (size // 2),
        "runs, no pair, a false one": "1 2 x " * (size // 12) + "z" * (size // 2) + " a1 2b",
    }


def _measure(parse: Parser, text: str, repeat: int) -> tuple[float, float]:
    took = []
    for _ in range(repeat):
        begun = time.perf_counter()
        parse(text, 4)
        took.append(time.perf_counter() - begun)
    tracemalloc.start()
    try:
        parse(text, 4)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return min(took), peak / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=4.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--old", action="store_true", help="run the old parser above 4 MiB too")
    args = parser.parse_args()
    size = int(args.mb * (1 << 20))
    with_old = args.old or args.mb <= 4.0
    print(f"{args.mb:g} MiB answers; best of {args.repeat} runs; peak memory traced")
    print(f"{'answer':<28}{'bounded':>20}{'old parser' if with_old else '':>22}")
    worst_s = worst_mb = 0.0
    for name, text in _texts(size).items():
        ours = _measure(parse_list, text, args.repeat)
        worst_s, worst_mb = max(worst_s, ours[0]), max(worst_mb, ours[1])
        line = f"{name:<28}{ours[0]:>8.2f} s {ours[1]:>7.0f} MB"
        if with_old:
            old = _measure(reference_parse.parse_list, text, 1)
            line += f" {old[0]:>9.2f} s {old[1]:>7.0f} MB"
        print(line, flush=True)
    record(worst_parse_s=worst_s, worst_peak_mb=worst_mb)


if __name__ == "__main__":
    main()
