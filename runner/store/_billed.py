"""What a response row must keep whatever it holds: the money its attempt was billed.

An attempt key has one row. An error gives way to whatever comes after it, but an error may
have been billed (a 2xx whose answer could not be read): the row that replaces it carries its
tokens on, so the store's sum of tokens is what was billed, however often an attempt went
(:func:`carried`). A row the store cannot write (a text Arrow cannot encode, a number past its
column) is stored as that attempt's problem instead, with its bill, never raised
(:func:`writable`): the answer is lost and the attempt is sent again by the next run.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import NamedTuple

import pyarrow as pa

from conditions import AttemptKey
from runner.backends import MAX_COUNT
from runner.store._rows import ResponseRow


class Billed(NamedTuple):
    """What a stored row's attempt was billed, and the call that made it."""

    input_tokens: int
    output_tokens: int
    unknown: int  # of its calls, those counted at their worst case
    started_at: datetime  # the call's (a batch's line: its batch's): a call read twice is one


# The errors Arrow raises for a value its column cannot hold.
UNWRITABLE = (pa.ArrowException, OverflowError, ValueError, TypeError)


def bill(row: ResponseRow) -> Billed | None:
    """The tokens ``row``'s attempt was billed (None: nothing was billed)."""
    if row.input_tokens is None and row.output_tokens is None:
        return None
    return Billed(
        row.input_tokens or 0, row.output_tokens or 0, row.usage_unknown or 0, row.started_at
    )


def carried(row: ResponseRow, earlier: Billed | None) -> ResponseRow:
    """``row`` with the bill of the row it replaces added to its own, unless that row is the
    same call read again (a batch's results read once more after a run stopped reading)."""
    if earlier is None or earlier.started_at == row.started_at:
        return row
    return row._replace(
        input_tokens=(row.input_tokens or 0) + earlier.input_tokens,
        output_tokens=(row.output_tokens or 0) + earlier.output_tokens,
        usage_unknown=(row.usage_unknown or 0) + earlier.unknown,
    )


def settle(rows: Sequence[ResponseRow]) -> list[ResponseRow]:
    """One row per key: the first answer, else the last error (arrival order kept), each
    carrying the bills of the rows of its key it replaced."""
    chosen: dict[AttemptKey, ResponseRow] = {}
    for row in rows:
        held = chosen.get(row.key)
        if held is None:
            chosen[row.key] = row
        elif held.outcome != "answer":
            chosen[row.key] = carried(row, bill(held))
        else:  # an answer is kept; what came after it was billed all the same
            chosen[row.key] = carried(held, bill(row))
    return list(chosen.values())


def writable(row: ResponseRow, schema: pa.Schema) -> ResponseRow:
    """``row`` if Arrow can hold it, else the attempt's problem: no answer, the reason, and
    its bill where that can be held."""
    try:
        pa.Table.from_pylist([row._asdict()], schema=schema)
    except UNWRITABLE as exc:
        return _problem(row, exc)
    return row


def _problem(row: ResponseRow, exc: Exception) -> ResponseRow:
    counts = bill(row)
    fits = counts is not None and all(0 <= c < 2**63 for c in counts[:3])
    return row._replace(
        outcome="transient",
        parseable=False,
        answer=None,
        reasoning=None,
        finish_reason=None,
        error_code="not-stored",
        error_message=(
            f"the store could not write this attempt's row ({type(exc).__name__}); its "
            "answer is lost and the next run sends it again"
        ),
        input_tokens=counts[0] if fits and counts else None,
        output_tokens=counts[1] if fits and counts else None,
        reasoning_tokens=None,
        usage_unknown=min(counts[2], MAX_COUNT - 1) if fits and counts else None,
        http_status=row.http_status if _fits32(row.http_status) else None,
        latency_s=None,
        transport_retries=row.transport_retries if _fits32(row.transport_retries) else 0,
        response_id=None,
        reported_model=None,
    )


def _fits32(value: object) -> bool:
    return isinstance(value, int) and 0 <= value < MAX_COUNT
