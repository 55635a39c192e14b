"""Attempt rows for store tests, made through the real record type."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import ParamSpec

from runner.backends import AttemptRecord
from runner.store import ResponseRow, response_row

T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
P = ParamSpec("P")


def attempt_record(
    qid: str = "q1",
    attempt: int = 0,
    *,
    outcome: str = "answer",
    parseable: bool = True,
    answer: str = "[1, 2, 3, 4]",
    configuration: str = "cfg",
    condition: str = "base",
    budget: int = 8,
    billed: tuple[int, int, int] | None = None,
    started_at: datetime = T0,
) -> AttemptRecord:
    """An attempt: an answer (10 tokens in, 5 out), or an error of ``outcome`` that billed
    nothing; ``billed``: its tokens in and out and the calls of them counted at their worst
    case, in place of those; ``started_at``: when its call was made (a call read twice has
    one)."""
    answered = outcome == "answer"
    record = AttemptRecord.model_validate(
        {
            "configuration": configuration,
            "condition": condition,
            "qid": qid,
            "budget": budget,
            "replicate": 0,
            "attempt": attempt,
            "protocol": "p" * 64,
            "fingerprint": "f" * 64,
            "provider": "qwen",
            "model": "m",
            "image_sha256": None,
            "outcome": outcome,
            "parseable": parseable and answered,
            "answer": answer if answered else None,
            "error_message": None if answered else f"{outcome} error",
            "http_status": 200 if answered else 503,
            "input_tokens": 10 if answered else None,
            "output_tokens": 5 if answered else None,
            "started_at": started_at,
        }
    )
    if billed is not None:
        tokens = dict(zip(("input_tokens", "output_tokens", "usage_unknown"), billed, strict=True))
        record = record.model_copy(update=tokens)
    return record


def _as_row(make: Callable[P, AttemptRecord]) -> Callable[P, ResponseRow]:
    def row(*args: P.args, **kwargs: P.kwargs) -> ResponseRow:
        return response_row(make(*args, **kwargs))

    return row


attempt_row = _as_row(attempt_record)
"""An :func:`attempt_record`'s row."""
