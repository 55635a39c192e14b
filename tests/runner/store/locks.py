"""Whether a store's file is locked, seen from another process (as a second run sees it)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

# DuckDB takes a POSIX record lock (fcntl F_SETLK, a write lock) on a file it opens read-write,
# and a second read-write open fails on that lock: a child asks for the same lock, without
# waiting. (A lock this process holds never conflicts with its own request, hence the child;
# `python -S` and no duckdb import keep it a few milliseconds.)
_TRY_LOCK = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
try:
    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
except OSError:
    sys.exit(7)
"""


def lock_held(path: Path) -> bool:
    """Whether another process is refused the file's write lock (as a second run's store is)."""
    tried = subprocess.run(
        [sys.executable, "-S", "-c", _TRY_LOCK, str(path)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    if tried.returncode not in (0, 7):
        raise RuntimeError(f"the lock check failed: {tried.stderr.strip()[-500:]}")
    return tried.returncode == 7
