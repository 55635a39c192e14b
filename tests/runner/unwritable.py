"""A folder nothing can be written into, for the tests of output folders refused in one line.

The tests run as root here, and root writes into a folder whatever its mode: where the mode is
not enough, the folder is also made immutable (``chattr +i``, which stops root too). Where
neither holds, the test is skipped, saying why.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import pytest


@contextmanager
def unwritable(folder: Path) -> Iterator[Path]:
    """``folder``, made, that no file can be written into while the block runs."""
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o555)
    immutable = False
    try:
        if _writable(folder) and shutil.which("chattr"):
            immutable = _chattr(folder, "+i")
        if _writable(folder):
            pytest.skip(f"{folder} stays writable (root, and no chattr +i here)")
        yield folder
    finally:
        if immutable:
            _chattr(folder, "-i")
        folder.chmod(0o755)


def _writable(folder: Path) -> bool:
    try:
        with tempfile.TemporaryFile(dir=folder):
            return True
    except OSError:
        return False


def _chattr(folder: Path, flag: str) -> bool:
    with suppress(OSError):
        done = subprocess.run(["chattr", flag, str(folder)], capture_output=True, timeout=30)
        return done.returncode == 0
    return False
