"""A store whose write-ahead log ends in damage (a torn write) opens with the damage cut off.

DuckDB refuses a file whose ``.wal`` fails its checksum anywhere, so a few bad bytes at the end
of the log would make the whole store unreadable. What the log held before the damaged entry is
sound: the log is cut there (the whole damaged log is first copied aside, never lost) and the
store opens with every row logged before it. Stores checkpoint as they run (see ``Store``), so
little is ever only in the log.
"""

from __future__ import annotations

import logging
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import duckdb

log = logging.getLogger("groundbench.store")

T = TypeVar("T")

_REPLAY_FAILED = "Failure while replaying WAL file"
_DAMAGED_AT = re.compile(r"entry at byte position (\d+)")


def opening_repaired(path: Path, connect: Callable[[], T]) -> T:
    """``connect()``; if the store's log is damaged, cut it where the damage starts (saving a
    copy of it) and connect again, warning in one line."""
    try:
        return connect()
    except duckdb.Error as exc:
        if _REPLAY_FAILED not in str(exc):
            raise
        damaged_at = _DAMAGED_AT.search(str(exc))
        note = cut_log(path, int(damaged_at.group(1)) if damaged_at else 0)
    log.warning("groundbench: %s", note)
    return connect()


def cut_log(path: Path, at: int) -> str:
    """Cut ``path``'s log at byte ``at`` after copying it aside; returns what was done."""
    wal = Path(f"{path}.wal")
    size = wal.stat().st_size
    kept = _free(wal.with_name(f"{wal.name}.damaged"))
    shutil.copyfile(wal, kept)
    with wal.open("r+b") as f:
        f.truncate(at)
    return (
        f"{path}: its write-ahead log was damaged at byte {at:,} of {size:,} (a torn write?); "
        f"what it logged before that is kept, the rest is lost; the damaged log is saved as "
        f"{kept.name}"
    )


def _free(path: Path) -> Path:
    """``path``, or ``path.1``, ``path.2``, … : the first name not taken."""
    candidate, n = path, 0
    while candidate.exists():
        n += 1
        candidate = path.with_name(f"{path.name}.{n}")
    return candidate
