"""The errors of the conditions package.

::

    ConditionsError         anything the experimental design refuses
    └── DataFileError       a data file that is missing, malformed, or inconsistent (names the file)
"""

from __future__ import annotations

from pathlib import Path


class ConditionsError(ValueError):
    """Base class of everything the conditions package raises on bad input."""


class DataFileError(ConditionsError):
    """A data file that cannot be used; the message names the file and where in it."""

    def __init__(self, path: Path | str, reason: str) -> None:
        self.path = Path(path)
        self.reason = reason
        super().__init__(f"{path}: {reason}")
