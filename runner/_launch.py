"""The ``groundbench`` console script: the command line, and for ``groundbench run`` on a Ray
of its own, Ray started while the command's modules import.

Ray takes 2-3 s to start, most of it waiting on its own processes, and the run command's imports
about one more; one after the other, they were most of the time to a run's first call (issue
38). Where the run will start a local Ray (``run`` or ``demo``, no ``--address``, no
``RAY_ADDRESS``), Ray starts here, on a thread, while the command imports, reads its questions
and makes its pre-flight's calls; the run then waits for it, claims it
(:func:`runner.distributed._local_ray.claim_early`) and shuts it down at its end. Any other
command starts nothing here.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tomllib
from pathlib import Path

RUNS = ("run", "demo")  # the commands that run an experiment, on a Ray of their own unless told


def main() -> None:
    """Entry point of the ``groundbench`` console script."""
    if not _starts_its_own_ray(sys.argv[1:]):
        from runner.cli import main as command

        command()
        return
    from runner.distributed._local_ray import start_early, stop_unclaimed

    start_early()
    try:
        from runner.cli import main as command

        command()
    finally:
        # A run that ended before it needed Ray (an error, a failed pre-flight, Ctrl-C): the
        # Ray started for it is shut down once up. Ctrl-C again leaves that to Ray's own exit.
        with contextlib.suppress(KeyboardInterrupt):
            stop_unclaimed()


def _starts_its_own_ray(args: list[str]) -> bool:
    """Whether these arguments run an experiment on a local Ray (help asked for: no). A run
    whose experiment file is missing or no TOML starts none: the command says so at once,
    not after Ray's start and shut-down. Nor does one whose experiment file was edited since
    its store was last written: an edit may change a configuration's protocol, which the run
    refuses before Ray starts (issue 39), and an early Ray would have started first."""
    if not args or args[0] not in RUNS or os.environ.get("RAY_ADDRESS"):
        return False
    if any(a in ("--help", "-h") or a.startswith("--address") for a in args[1:]):
        return False
    if args[0] == "demo":
        return True
    files = [a for a in args[1:] if a.endswith(".toml")]
    if len(files) != 1:
        return False
    read = _read_toml(Path(files[0]))
    return read is not None and not _edited_since_its_store(Path(files[0]), read)


def _read_toml(path: Path) -> dict[str, object] | None:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except (OSError, ValueError):  # tomllib.TOMLDecodeError and UnicodeDecodeError included
        return None


def _edited_since_its_store(path: Path, read: dict[str, object]) -> bool:
    """Whether the experiment file at ``path`` is newer than every write to its store (the
    file and its log); a store not yet there (a first run) has nothing to refuse."""
    store = read.get("store")
    if not isinstance(store, str):
        return False
    where = path.parent / store
    written = [p.stat().st_mtime for p in (where, Path(f"{where}.wal")) if p.exists()]
    return bool(written) and path.stat().st_mtime > max(written)
