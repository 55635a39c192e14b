"""Whether a store's file is locked, seen from another process (as a second run sees it)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def lock_held(path: Path) -> bool:
    """Whether another process is refused the file read-write (as a second run's store is)."""
    opening = "import duckdb, sys; duckdb.connect(sys.argv[1]).close()"
    opened = subprocess.run(
        [sys.executable, "-c", opening, str(path)], capture_output=True, text=True, timeout=120
    )
    return opened.returncode != 0 and "lock" in opened.stderr.lower()
