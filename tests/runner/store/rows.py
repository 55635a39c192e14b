"""Attempt rows for store tests, made through the real record type."""

from __future__ import annotations

from datetime import UTC, datetime

from runner.backends import AttemptRecord
from runner.store import ResponseRow, response_row

T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def attempt_row(
    qid: str = "q1",
    attempt: int = 0,
    *,
    outcome: str = "answer",
    parseable: bool = True,
    answer: str = "[1, 2, 3, 4]",
    configuration: str = "cfg",
    condition: str = "base",
    budget: int = 8,
) -> ResponseRow:
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
            "started_at": T0,
        }
    )
    return response_row(record)
