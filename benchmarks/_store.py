"""Synthetic store rows for the store benchmarks: a paper-sized grid and realistic answers."""

from __future__ import annotations

import random
from datetime import UTC, datetime

from conditions import BOX, BOX_CONDITIONS, CONDITION_NAMES
from runner.store import GridRow, ResponseRow
from scoring import BUDGETS

CONFIGURATIONS = ("qwen-max", "doubao", "kimi", "gemini-high")
T0 = datetime(2026, 11, 30, tzinfo=UTC)


def paper_grid(questions: int = 1500, cells: int = 120_000) -> list[GridRow]:
    """About ``cells`` grid rows: configurations × conditions × budgets (+ box) × questions."""
    qids = [f"refcoco-{i:06d}" for i in range(questions)]
    rows: list[GridRow] = []
    for configuration in CONFIGURATIONS:
        for condition in CONDITION_NAMES:
            budgets = (*BUDGETS, BOX) if condition in BOX_CONDITIONS else BUDGETS
            for budget in budgets:
                rows.extend(
                    GridRow(
                        configuration=configuration,
                        condition=condition,
                        budget=budget,
                        qid=q,
                        attempts=3,
                    )
                    for q in qids
                )
                if len(rows) >= cells:
                    return rows[:cells]
    return rows


def answer_rows(grid: list[GridRow], seed: int = 0) -> list[ResponseRow]:
    """One answered attempt per grid row, with an answer and reasoning of realistic length."""
    rng = random.Random(seed)
    rows = []
    for g in grid:
        n = g.budget or 2
        answer = "Here is the outline: " + str([rng.randrange(999) for _ in range(2 * n)])
        record = {
            "configuration": g.configuration,
            "condition": g.condition,
            "budget": g.budget,
            "qid": g.qid,
            "attempt": 0,
            "replicate": 0,
            "protocol": "p" * 64,
            "fingerprint": f"{rng.getrandbits(256):064x}",
            "provider": "qwen",
            "model": "qwen3-vl-plus",
            "image_sha256": "i" * 64,
            "outcome": "answer",
            "parseable": True,
            "answer": answer,
            "reasoning": "The referent is the second object from the left. " * 8,
            "finish_reason": "stop",
            "http_status": 200,
            "error_code": None,
            "error_message": None,
            "input_tokens": 1200,
            "output_tokens": 400,
            "reasoning_tokens": 300,
            "latency_s": 2.5,
            "transport_retries": 0,
            "started_at": T0,
            "response_id": f"chatcmpl-{rng.getrandbits(64):016x}",
            "reported_model": "qwen3-vl-plus",
        }
        rows.append(ResponseRow._make(record[c] for c in ResponseRow._fields))
    return rows
