"""Where the commands write their files: a folder is refused before the work that would fill it,
and every file is written whole or not at all.

``report --out`` into a read-only folder printed every table, then failed on its first file with
a 35-line traceback; ``--html`` into a folder it could not write, a ``PermissionError``
traceback (issue 39). The folder is now tried first, by making a file in it (a permission check
alone says yes to root on a read-only disk); a failure while writing is still one line naming
the path, and each file goes to a temporary name renamed into place, so a failure or a kill
leaves the earlier file or none, never half of one.
"""

from __future__ import annotations

import errno
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from runner._errors import RunnerError

_FULL = (errno.ENOSPC, errno.EDQUOT)


class OutputError(RunnerError):
    """An output folder or file cannot be written: a read-only disk, no permission, no space,
    a file where a folder should be."""


def check_folder(folder: Path, option: str, *, file: bool = False) -> None:
    """Refuse ``folder`` (given by ``option``, e.g. ``--out``; with ``file``, the folder of the
    file it gives) now, before the work that fills it, where nothing could be written into it.
    Nothing is made: a missing folder is tried through the nearest folder above it that
    exists, where it would be made.

    Raises
    ------
    OutputError
        A file stands where a folder is needed, or a file cannot be made there.
    """
    existing = folder
    while not (existing.exists() or existing.is_symlink()) and existing.parent != existing:
        existing = existing.parent
    if not existing.is_dir():
        raise OutputError(
            f"{existing}: not a folder; give {option} {_GIVEN[file]} you can write to"
        )
    try:
        handle, probe = tempfile.mkstemp(prefix=".groundbench-", suffix=".probe", dir=existing)
    except OSError as exc:
        raise cannot_write(folder, exc, option, file=file) from None
    os.close(handle)
    os.unlink(probe)


_GIVEN = {False: "a folder", True: "a file in a folder"}


def cannot_write(path: Path, exc: OSError, option: str, *, file: bool = False) -> OutputError:
    """The one line for ``exc``, met writing into ``path``: what failed and what to do."""
    why = exc.strerror or str(exc)
    if exc.errno in _FULL:
        return OutputError(
            f"{path}: cannot write there ({why}): free some space, or give {option} "
            f"{_GIVEN[file]} on another disk"
        )
    return OutputError(
        f"{path}: cannot write there ({why}): give {option} {_GIVEN[file]} you can write to"
    )


def written_in(exc: OSError, folder: Path) -> bool:
    """Whether ``exc`` was met on a path in ``folder``, or on none named (Arrow's writer names
    none): a failure elsewhere, reading an image say, is not the output folder's."""
    if exc.filename is None:
        return True
    failed = Path(os.fsdecode(exc.filename)).absolute()
    return failed == folder.absolute() or folder.absolute() in failed.parents


@contextmanager
def writing_into(folder: Path, option: str) -> Iterator[None]:
    """Translate an ``OSError`` met writing into ``folder`` into :func:`cannot_write`'s line;
    any other error passes as it is."""
    try:
        yield
    except OSError as exc:
        if not written_in(exc, folder):
            raise
        raise cannot_write(folder, exc, option) from None


@contextmanager
def whole(path: Path) -> Iterator[Path]:
    """A temporary name beside ``path`` to write to, renamed to ``path`` once the block ends
    without error; removed if it raises. It keeps ``path``'s suffix, by which writers such as
    matplotlib choose the format."""
    temporary = path.with_name(f".{path.stem}.{os.getpid()}.tmp{path.suffix}")
    try:
        yield temporary
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def write_whole(path: Path, text: str) -> None:
    """``text`` to ``path`` through :func:`whole`."""
    with whole(path) as temporary:
        temporary.write_text(text)
