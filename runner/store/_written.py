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
import stat
import subprocess
import sys
from dataclasses import dataclass, replace
from pathlib import Path

import duckdb

from runner.store._errors import StoreError

_NOTE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
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
    """What the note beside ``store`` says was written; None without a readable note (or
    with one that is no plain file of this user's: a link, a pipe, another's)."""
    try:
        fd = os.open(note_path(store), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        seen = os.fstat(fd)
        if not stat.S_ISREG(seen.st_mode) or seen.st_uid != os.getuid():
            return None
        text = os.pread(fd, _RECORD, 0).decode("ascii").rstrip()
    except (OSError, UnicodeDecodeError):
        return None
    finally:
        os.close(fd)
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
            fd = os.open(note_path(store), _NOTE_FLAGS, 0o644)
            # A plain file of this user's only: a link there is refused by O_NOFOLLOW, and a
            # note of another's (or a device, a pipe) is left alone, never written.
            seen = os.fstat(fd)
            if stat.S_ISREG(seen.st_mode) and seen.st_uid == os.getuid():
                self._fd = fd
            else:
                os.close(fd)

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
    try:
        kept = keep_as_found(store)
    except OSError as exc:  # nothing written yet: the run stops rather than lose the evidence
        raise StoreError(
            f"{_fewer(store, claimed, lost)} are lost, and the store as found could not be kept "
            f"({exc}); free space beside it, or copy {store.name} and its .wal aside, then rerun"
        ) from None
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
    it as DuckDB names one, so the copy opens as the store was).

    The copy is made by a child process: this one holds DuckDB's lock on the file, and closing
    any descriptor of a file drops every POSIX lock the process holds on it — a copy made here
    would leave the store open to a second writer for the rest of the run. Each copy is created
    anew (``O_EXCL``), so a link planted at its name is never written through.
    """
    base, n = store.with_name(f"{store.name}.damaged"), 0
    while True:
        copy = base if n == 0 else base.with_name(f"{base.name}.{n}")
        pairs = [(store, copy)] + ([(_log(store), _log(copy))] if _log(store).exists() else [])
        done = subprocess.run(
            [sys.executable, "-c", _COPY, *(str(p) for pair in pairs for p in pair)],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        if done.returncode == 0:
            return copy
        if done.returncode != _TAKEN:
            why = done.stderr.strip().splitlines()[-1:] or ["no reason given"]
            raise OSError(f"cannot copy {store} to {copy.name}: {why[0]}")
        n += 1


_TAKEN = 3  # the child's exit status when a copy's name (or its log's) is taken
# (source, copy) pairs from argv; every copy's name is checked free first, then each is made
# with O_EXCL (a name taken since, or a link there, fails rather than being written through).
_COPY = """
import os, shutil, sys
pairs = list(zip(sys.argv[1::2], sys.argv[2::2]))
if any(os.path.lexists(c) for _, c in pairs):
    sys.exit(3)
for source, copy in pairs:
    with open(source, "rb") as read, open(copy, "xb") as write:
        shutil.copyfileobj(read, write)
"""


def _log(path: Path) -> Path:
    return path.with_name(f"{path.name}.wal")
