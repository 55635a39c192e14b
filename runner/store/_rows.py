"""Rows as the store takes them."""

from __future__ import annotations

from runner.backends import AttemptRecord
from runner.store._schema import RESPONSE_COLUMNS
from runner.store._store import ResponseRow


def response_row(record: AttemptRecord) -> ResponseRow:
    """``record`` as a tuple in the store's column order: cheap to ship between processes."""
    return tuple(getattr(record, column) for column in RESPONSE_COLUMNS)
