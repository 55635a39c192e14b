"""Headline figures of a benchmark, handed to ``benchmarks.suite`` when it is the caller.

Each benchmark prints its own report; it also calls :func:`record` with the few figures the
suite's table shows. Run alone, :func:`record` does nothing.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

OUT_VARIABLE = "GROUNDBENCH_BENCH_FIGURES"


def record(**figures: float | int | bool) -> None:
    """Write ``figures`` as JSON to the file the suite named, if it named one."""
    target = os.environ.get(OUT_VARIABLE)
    if target:
        Path(target).write_text(json.dumps(figures))
