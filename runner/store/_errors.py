"""The store's errors: one readable line each."""

from __future__ import annotations

import re

from runner._errors import RunnerError


class StoreError(RunnerError):
    """The experiment file cannot be used as a store, or a query on it cannot run."""


DAMAGED_FILE = "the file is damaged: restore it from a copy"


def first_line(exc: Exception) -> str:
    """The first line of a (DuckDB) error's message, for a one-line error of ours; a block that
    fails its checksum also says what to do (a damaged log is repaired on opening, a damaged
    store file cannot be)."""
    text = str(exc).strip()
    line = text.splitlines()[0] if text else type(exc).__name__
    return f"{line}; {DAMAGED_FILE}" if "Corrupt database file" in line else line


# Where DuckDB starts quoting the query ("LINE 1: select …") with a caret drawing under it: the
# user has the query, and the drawing means nothing once on one line.
_QUOTED_QUERY = re.compile(r"^LINE \d+:")


def joined_lines(exc: Exception) -> str:
    """A (DuckDB) error's message on one line, its hints kept: ``Catalog Error: Table with name
    cell_sumary does not exist! Did you mean "cell_summary"?``, where :func:`first_line` stops
    before the hint. Its quote of the query and the caret drawing under it are dropped (the
    user has the query); an indented list (candidate functions) reads as items split by "; "."""
    text, listed = "", False
    for raw in str(exc).splitlines():
        line = raw.strip()
        if _QUOTED_QUERY.match(line):
            break  # the quote and its caret drawing end the message
        if not line:
            continue
        item = raw[:1].isspace()
        after_item = item and listed and not text.endswith(":")  # not after a list's heading
        text += ("; " if after_item else " " if text else "") + line
        listed = item
    return f"{text}; {DAMAGED_FILE}" if "Corrupt database file" in text else text or first_line(exc)
