"""Every answer reader on hostile answers of growing size: time per read, capped.

Issue 37: a hosted model (or a hostile server) can send any text up to the response cap, and
some readers took time that grew with the square of the answer (a 40 KB run of ``[`` took
13 s in RefBench-PRO's finder, a 1 MB one 61 s in Ref-Adv's). Each reader reads each shape at
each size in a child process, killed at ``--cap`` seconds; a shape whose read was cut is not
tried at larger sizes. Figures, not a test: the machine decides them. Run:

    .venv/bin/python -m benchmarks.hostile_answers [--cap 20] [--sizes 10000,40000,160000,1000000]
        [--readers ref-adv,groundingme] [--shapes '[|{']

To measure another revision's readers, run this file from a folder holding that revision's
``scoring/`` (``git archive REV scoring benchmarks | tar -x -C DIR``).
"""

from __future__ import annotations

import argparse
import multiprocessing
import time
from collections.abc import Callable

from benchmarks._figures import record
from scoring import find_box, parse_answer, parse_box, parse_list

Reader = Callable[[str], object]

READERS: dict[str, Reader] = {
    "parse_answer(4)": lambda text: parse_answer(text, 4),
    "parse_list(8)": lambda text: parse_list(text, 8),
    "parse_box": parse_box,
    "ref-adv": lambda text: find_box(text, "ref-adv"),
    "groundingme": lambda text: find_box(text, "groundingme"),
    "refbench-pro": lambda text: find_box(text, "refbench-pro"),
}

# Each shape repeats a unit to the size asked, between a head and a tail.
SHAPES: dict[str, tuple[str, str, str]] = {
    "[": ("", "[", ""),
    "[1,": ("", "[1,", ""),
    '{"a":': ("", '{"a":', ""),
    "{": ("", "{", ""),
    "(": ("", "(", ""),
    "digits": ("", "1", ""),
    "1,2,3,4 ": ("", "1,2,3,4 ", ""),
    "[1,2,3,x]": ("", "[1,2,3,x]", ""),
    "[] ": ("", "[] ", ""),
    "``` then spaces": ("```", " ", ""),
    '[[[" then a string': ("[" * 900 + '"', "a", ""),
    "[ then 1000 numbers": ("", "[" + "1," * 1000, ""),
    "[ then ]": ("", "[", "]"),
    '{"a": then }': ("", '{"a":', "}"),
    '"[] then ]': ("", '"[]', "]"),
}


def shape(name: str, size: int) -> str:
    head, unit, tail = SHAPES[name]
    room = max(0, size - len(head) - len(tail))
    return head + (unit * (room // len(unit) + 1))[:room] + tail


def _read(reader: str, text: str, took: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    begun = time.perf_counter()
    READERS[reader](text)
    took.put(time.perf_counter() - begun)


def timed(reader: str, text: str, cap: float) -> float | None:
    """Seconds one read took, in a child process; None where it ran past ``cap``."""
    took: multiprocessing.Queue = multiprocessing.Queue()  # type: ignore[type-arg]
    child = multiprocessing.Process(target=_read, args=(reader, text, took))
    child.start()
    child.join(cap)
    if child.is_alive():
        child.kill()
        child.join()
        return None
    return float(took.get(timeout=5))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cap", type=float, default=20.0)
    parser.add_argument("--sizes", default="10000,40000,160000,1000000")
    parser.add_argument("--readers", default=",".join(READERS))
    parser.add_argument("--shapes", default="|".join(SHAPES), help="names apart with '|'")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"seconds per read; '>{args.cap:g}' was cut at the cap, '-' not tried after it")
    print(f"{'reader':<17}{'shape':<22}" + "".join(f"{s:>10,}" for s in sizes))
    worst = 0.0
    for reader in args.readers.split(","):
        for name in args.shapes.split("|"):
            cells, cut = [], False
            for size in sizes:
                if cut:
                    cells.append("-")
                    continue
                took = timed(reader, shape(name, size), args.cap)
                cut = took is None
                worst = args.cap if took is None else max(worst, took)
                cells.append(f">{args.cap:g}" if took is None else f"{took:.3f}")
            print(f"{reader:<17}{name:<22}" + "".join(f"{c:>10}" for c in cells), flush=True)
    record(worst_read_s=worst)


if __name__ == "__main__":
    main()
