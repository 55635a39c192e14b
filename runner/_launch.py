"""The ``groundbench`` console script: the command line, and for ``groundbench run`` on a Ray
of its own, Ray started while the command's modules import.

Ray takes 2-3 s to start, most of it waiting on its own processes, and the run command's imports
about one more; one after the other, they were most of the time to a run's first call (issue
38). Where the run will start a local Ray (``run`` or ``demo``, no ``--address``, no
``RAY_ADDRESS``), Ray starts here, on the main thread, while a thread imports the command; the
run then claims it (:func:`runner.distributed._local_ray.claim_early`) and shuts it down at its
end. Any other command starts nothing here.
"""

from __future__ import annotations

import os
import sys
import threading
import tomllib
from pathlib import Path

RUNS = ("run", "demo")  # the commands that run an experiment, on a Ray of their own unless told


def main() -> None:
    """Entry point of the ``groundbench`` console script."""
    if _starts_its_own_ray(sys.argv[1:]):
        importing = threading.Thread(target=_import_command, name="groundbench-import")
        importing.start()
        try:
            from runner.distributed._local_ray import start_early

            start_early()
        except KeyboardInterrupt:
            print("groundbench: stopped before the run began; nothing was sent", file=sys.stderr)
            raise SystemExit(130) from None
        finally:
            importing.join()
    from runner.cli import main as command

    command()


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


def _import_command() -> None:
    # What the run command imports before it needs Ray: an import error here is met again,
    # and reported, when the command imports it on the main thread.
    try:
        import runner.cli
        import runner.distributed._driver  # noqa: F401
    except Exception:
        return
