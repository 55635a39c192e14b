"""The answer parser on 4 MB answers: time and peak memory, bounded parser beside the old one.

Issue 19: a 39 MB answer took 13 s and 6.1 GB inside the old parser's regex. The old parser is
kept as the test oracle (``tests/scoring/reference_parse.py``); both read the same texts here,
in one run. Times are taken without tracing, memory with ``tracemalloc``. Run:

    .venv/bin/python -m benchmarks.parse_bounds [--mb 4]
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
        "prose, then a list": "word 12, " * (size // 9) + "[1, 2, 3, 4]",
    }


def _measure(parse: Parser, text: str) -> tuple[float, float]:
    begun = time.perf_counter()
    parse(text, 4)
    took = time.perf_counter() - begun
    tracemalloc.start()
    try:
        parse(text, 4)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return took, peak / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=4.0)
    args = parser.parse_args()
    size = int(args.mb * (1 << 20))
    print(f"{'answer':<24}{'bounded':>20}{'old parser':>22}")
    worst = 0.0
    for name, text in _texts(size).items():
        ours = _measure(parse_list, text)
        old = _measure(reference_parse.parse_list, text)
        worst = max(worst, ours[1])
        print(f"{name:<24}{ours[0]:>8.2f} s {ours[1]:>7.0f} MB {old[0]:>9.2f} s {old[1]:>7.0f} MB")
    record(worst_peak_mb=worst)


if __name__ == "__main__":
    main()
