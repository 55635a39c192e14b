"""The errors of the conditions package, under ``scoring``'s :class:`GroundbenchError`; the
whole tree, every package's, is drawn in one place: the docstring of ``runner/_errors.py``."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from scoring import GroundbenchError


class ConditionsError(GroundbenchError, ValueError):
    """Base class of everything the conditions package raises on bad input."""


class DataFileError(ConditionsError):
    """A data file that cannot be used; the message names the file and where in it."""

    def __init__(self, path: Path | str, reason: str) -> None:
        self.path = Path(path)
        self.reason = reason
        super().__init__(f"{path}: {reason}")


def one_line(exc: Exception) -> str:
    """An error's gist on one line: a pydantic error's first field and message, else the
    first line of its text."""
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        message = str(first["msg"]).removeprefix("Value error, ")  # a validator's own words
        return f"{where}: {message}" if where else message
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]
