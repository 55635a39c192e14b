"""What a store has written, noted beside it, so that a store which lost rows says how many.

DuckDB replays a write-ahead log that ends mid-entry (a log cut short: a copy taken while the run
wrote, a full disk, a file system that lost a tail) up to its last whole entry and drops the rest
without a word, and it cuts the file there at its next write, so the evidence is gone a moment
later. Only something kept outside the log can say what was lost. The store rewrites a few bytes,
``<store>.written``, after each write it commits: the highest ``seq`` of the responses it wrote
(``seq`` counts every response row ever written, in order) and how many scores and batches it
holds. On opening, a store that holds less than its note says lost the difference; the store as
found, file and log, is copied aside before anything is written to it.

The note claims a lower bound: written after a commit (after DuckDB synced its log), lowered
before a transaction that deletes (scores dropped by a new reading), and a note that cannot be
read claims nothing. So a killed run, whose intact log replays whole, never reads as a loss.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
from dataclasses import dataclass, replace
from pathlib import Path

import duckdb

_RECORD = 96  # bytes, rewritten in place: one short write the kernel copies whole
_FORMAT = "groundbench written 1 responses={} scores={} batches={}"
_PARSE = re.compile(r"groundbench written 1 responses=(\d+) scores=(\d+) batches=(\d+)")


@dataclass(frozen=True)
class Written:
    """Rows of a store: the highest response ``seq``, the scores and batches held."""

    responses: int
    scores: int
    batches: int

    def lowered(self, **fields: int) -> Written:
        return replace(self, **fields)


def note_path(store: Path) -> Path:
    return store.with_name(f"{store.name}.written")


def noted(store: Path) -> Written | None:
    """What the note beside ``store`` says was written; None without a readable note."""
    try:
        text = note_path(store).read_bytes()[:_RECORD].decode("ascii").rstrip()
    except (OSError, UnicodeDecodeError):
        return None
    match = _PARSE.fullmatch(text)
    return Written(*(int(g) for g in match.groups())) if match else None


def held(con: duckdb.DuckDBPyConnection) -> Written | None:
    """What the store open on ``con`` holds; None for a store without the run tables."""
    try:
        (row,) = con.execute(
            "SELECT (SELECT coalesce(max(seq), 0) FROM responses), "
            "(SELECT count(*) FROM scores), (SELECT count(*) FROM batches)"
        ).fetchall()
    except duckdb.Error:
        return None
    return Written(*(int(v) for v in row))


class Note:
    """The note beside a store, open for rewriting as the store commits."""

    def __init__(self, store: Path) -> None:
        self._fd: int | None = None
        if store.name.startswith(":memory:"):  # DuckDB's in-memory store: no file, no log
            return
        with contextlib.suppress(OSError):  # no note (a read-only folder?): nothing claimed
            self._fd = os.open(note_path(store), os.O_WRONLY | os.O_CREAT, 0o644)

    def write(self, written: Written) -> None:
        """Rewrite the note in place (no sync: a killed process's writes reach the file; a
        write a crash of the machine loses only makes the claim lower)."""
        if self._fd is None:
            return
        text = _FORMAT.format(written.responses, written.scores, written.batches)
        record = text.ljust(_RECORD - 1).encode("ascii") + b"\n"
        try:
            os.pwrite(self._fd, record, 0)
        except OSError:  # a note that cannot be written claims less; the store goes on
            self.close()

    def close(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None


def loss(store: Path, claimed: Written, found: Written) -> str | None:
    """If ``found`` holds less than ``claimed``: copy the store as found aside and say what was
    lost, in one line; else None. Call it before anything is written to the store."""
    lost = _lost(claimed, found)
    if lost is None:
        return None
    kept = keep_as_found(store)
    return (
        f"{_fewer(store, claimed, lost)} are lost; their requests are pending again: a rerun "
        f"sends them again, and they are paid twice; the store as it opened is copied to "
        f"{kept.name} (with its log)"
    )


def loss_read(store: Path, claimed: Written, found: Written) -> str | None:
    """As :func:`loss` for a store opened read-only (``sql``, ``report``): nothing is copied,
    since a reading writes nothing and the log stays as found; else None."""
    lost = _lost(claimed, found)
    if lost is None:
        return None
    return (
        f"{_fewer(store, claimed, lost)} are missing from what this reads; the file is left as "
        f"it is (the next run of its experiment copies it aside as found, then sends the lost "
        f"requests again)"
    )


def _lost(claimed: Written, found: Written) -> Written | None:
    lost = Written(
        max(0, claimed.responses - found.responses),
        max(0, claimed.scores - found.scores),
        max(0, claimed.batches - found.batches),
    )
    return None if lost == Written(0, 0, 0) else lost


def _fewer(store: Path, claimed: Written, lost: Written) -> str:
    parts = [f"{lost.responses:,} of {claimed.responses:,} responses written"]
    if lost.scores:
        parts.append(f"{lost.scores:,} of {claimed.scores:,} scores (made again, no call)")
    if lost.batches:
        parts.append(
            f"{lost.batches:,} of {claimed.batches:,} batches recorded (one sent still runs "
            "at its provider: cancel it there)"
        )
    return (
        f"{store}: the store holds fewer rows than were written to it (its write-ahead log "
        f"was cut short or lost: a copy taken mid-write, a full disk?): {', '.join(parts)}"
    )


def keep_as_found(store: Path) -> Path:
    """Copy ``store`` and its log to the first free ``<store>.damaged[.N]`` (its log beside
    it as DuckDB names one, so the copy opens as the store was)."""
    base, n = store.with_name(f"{store.name}.damaged"), 0
    copy = base
    while copy.exists() or _log(copy).exists():
        n += 1
        copy = base.with_name(f"{base.name}.{n}")
    shutil.copyfile(store, copy)
    if _log(store).exists():
        shutil.copyfile(_log(store), _log(copy))
    return copy


def _log(path: Path) -> Path:
    return path.with_name(f"{path.name}.wal")
