"""What a command was given: an experiment file (TOML) or a store (DuckDB file), and the other
of the two where it can be known.

Every command that reads an experiment's results takes either: an experiment file names its
store (``store = "…"``); a store names the experiment file its last run was started from
(``run_paths``, written at register) or, while a run holds it, the run's note beside it. A
command that needs the experiment (``run``, ``check``, ``monitor``) takes a store only where
it names an experiment file that is still there. The kind is read from the file, not its name:
a DuckDB file starts with its magic bytes; an experiment file reads as TOML.

Import-light on purpose: the command line imports this for every command.
"""

from __future__ import annotations

import os
import stat
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from runner._errors import ConfigError, RunnerError

if TYPE_CHECKING:
    import duckdb

# A DuckDB file: an 8-byte checksum, then "DUCK" (DuckDB's MainHeader, storage version 1+).
DUCKDB_MAGIC = b"DUCK"
DUCKDB_MAGIC_AT = 8
Kind = Literal["experiment", "store"]
BOTH = "the experiment file (TOML) or its store (DuckDB file)"


@dataclass(frozen=True)
class Target:
    """A command's file, resolved: its kind, the store, and the experiment file where known."""

    given: Path
    kind: Kind
    store: Path
    experiment: Path | None  # the file given, or the one the store names, if it is still there
    named: Path | None = None  # the experiment file a store names, there or not
    held: bool = False  # a store a run holds (what it names comes from the run's note)


def kind_of(path: Path) -> Kind:
    """Whether ``path`` is an experiment file or a store, read from its content: a DuckDB
    file's magic bytes, or TOML that names a store.

    A file that is neither by its content is taken by its name where that says (``.toml``: an
    experiment file whose TOML is broken, which reading it says precisely; ``.duckdb``: a
    damaged store, which opening it says).

    Raises
    ------
    ConfigError
        No such file, or a file that is neither.
    """
    try:
        with path.open("rb") as handle:
            head = handle.read(DUCKDB_MAGIC_AT + len(DUCKDB_MAGIC))
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file; give {BOTH}") from None
    except IsADirectoryError:
        raise ConfigError(f"{path} is a folder; give {BOTH}") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read it: {exc.strerror}") from None
    if head[DUCKDB_MAGIC_AT:] == DUCKDB_MAGIC:
        return "store"
    suffix = path.suffix.lower()
    if suffix == ".toml" or "store" in _toml(path):  # every experiment names its store
        return "experiment"
    if suffix in (".duckdb", ".db"):
        return "store"
    raise ConfigError(f"{path}: neither an experiment file (TOML) nor a store (DuckDB file)")


def resolve(path: Path, kind: Kind | None = None) -> Target:
    """``path`` as a :class:`Target`: an experiment file read for its store; a store read for
    the experiment file it names.

    Raises
    ------
    ConfigError
        See :func:`kind_of`; or an experiment file that is not a valid experiment.
    """
    if (kind or kind_of(path)) == "experiment":  # ``kind``: already read by the caller
        from runner.experiment import load_experiment

        return Target(path, "experiment", load_experiment(path).store, path)
    named, held = named_experiment(path)
    there = named if named is not None and named.is_file() else None
    return Target(path, "store", path, there, named, held)


def named_experiment(store: Path) -> tuple[Path | None, bool]:
    """The experiment file ``store`` names, and whether a run holds the store: the file its
    last run recorded, or, while a run holds it, the one the run's note names. None where
    neither says (a store written before runs recorded it, a cohort built alone)."""
    from runner.store import StoreError, read_only

    try:
        con = read_only(store)
    except StoreError as exc:
        if "a run holds the file" not in str(exc):
            return None, False
        return _noted_experiment(store), True
    with con:
        if not _has_run_paths(con):
            return None, False
        row = con.execute("SELECT path FROM run_paths WHERE name = 'experiment'").fetchone()
    return (Path(row[0]) if row is not None else None), False


def store_for(path: Path) -> tuple[Path, str | None]:
    """The store a command reads, given either file; and the line saying what was resolved
    (None where the store itself was given)."""
    kind = kind_of(path)
    if kind == "store":  # nothing to resolve: the store itself is not opened here
        return path, None
    target = resolve(path, kind)
    return target.store, f"experiment {shown(path)} → store {shown(target.store)}"


def experiment_for(path: Path, command: str) -> tuple[Path, str | None]:
    """The experiment file ``command`` needs, given either file; and the line saying what was
    resolved (None where the experiment file itself was given).

    Raises
    ------
    ConfigError
        A store that names no experiment file that is still there: one line naming the file
        the command takes; or see :func:`kind_of`.
    """
    kind = kind_of(path)
    if kind == "experiment":
        return path, None
    target = resolve(path, kind)
    if target.experiment is not None:
        _names_this_store(target.experiment, path, command)
        experiment = Path(shown(target.experiment))  # as the user would type it, for resume lines
        return experiment, f"store {shown(path)} → experiment {experiment}"
    held = "; a run holds it" if target.held else ""
    gone = (
        f"; it names {shown(target.named)}, which is not there any more"
        if target.named is not None
        else ""
    )
    raise ConfigError(
        f"{path} is a store{held}; {command} takes the experiment file (the TOML that names "
        f"this store){gone}"
    )


def _names_this_store(experiment: Path, store: Path, command: str) -> None:
    """Refuse an experiment file a store names unless it is the user's own, writable by no one
    else, and names that store still: a command taking it sends the user's keys where it says,
    so neither a store from elsewhere nor a file edited since (a new store, a copy) may choose.

    Raises
    ------
    ConfigError
        One line naming both files and the one to give.
    """
    from runner.experiment import load_experiment

    info = experiment.stat()
    if info.st_uid != os.geteuid() or info.st_mode & 0o022:
        why = (
            f"it belongs to uid {info.st_uid}, not to you"
            if info.st_uid != os.geteuid()
            else f"its mode {stat.S_IMODE(info.st_mode):04o} lets others write it"
        )
        raise ConfigError(
            f"{store} names the experiment file {shown(experiment)}, which {command} does not "
            f"take from a store: {why}; give the experiment file itself"
        )
    names = load_experiment(experiment).store
    if not names.exists() or not names.samefile(store):
        raise ConfigError(
            f"{store} names the experiment file {shown(experiment)}, which now names the store "
            f"{shown(names)}; give the experiment file itself ({command} acts on the store it "
            "names)"
        )


def shown(path: Path) -> str:
    """``path`` as a user would type it here: relative to the working folder when inside it."""
    try:
        return str(path.absolute().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _toml(path: Path) -> dict[str, object]:
    """``path`` read as TOML; empty where it is not TOML."""
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except (OSError, ValueError, RecursionError):  # TOMLDecodeError, UnicodeDecodeError too
        return {}


def _has_run_paths(con: duckdb.DuckDBPyConnection) -> bool:
    from conditions import has_table

    return has_table(con, "run_paths")


def _noted_experiment(store: Path) -> Path | None:
    """The experiment file the note of the run holding ``store`` names (a note is read only
    when it is the user's own file; an unreadable one names nothing here)."""
    from runner.distributed._address import read_note

    try:
        note = read_note(store)
    except RunnerError:
        return None
    if note is None or note.experiment is None:
        return None
    return Path(note.experiment)


__all__ = [
    "BOTH",
    "Target",
    "experiment_for",
    "kind_of",
    "named_experiment",
    "resolve",
    "shown",
    "store_for",
]
