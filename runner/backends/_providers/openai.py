"""OpenAI.

Reasoning: ``reasoning_effort`` (``none`` when off, else the effort level); no token budget.
The output allowance is ``max_completion_tokens``: its reasoning models refuse ``max_tokens``.
"""

from __future__ import annotations

from typing import Any

from conditions import Thinking
from runner.backends._providers._base import ErrorCodes, Provider, codes, refuse


def thinking(t: Thinking) -> dict[str, Any]:
    if t.mode == "off":
        return {"reasoning_effort": "none"}
    if t.budget_tokens is not None:
        raise refuse("openai", "a reasoning token budget")
    if t.effort == "max":
        raise refuse("openai", "reasoning effort 'max' (low, medium, high)")
    return {} if t.effort is None else {"reasoning_effort": t.effort}


PROVIDER = Provider(
    "openai",
    "openai",
    "https://api.openai.com/v1",
    "OPENAI_API_KEY",
    thinking,
    ErrorCodes(
        # Out of credit, or a spend limit reached (error.type stays insufficient_quota).
        quota=codes(
            "insufficient_quota",
            "billing_hard_limit_reached",
            "billing_not_active",
            "credit_balance_exhausted",
            "organization_spend_limit_exceeded",
            "project_spend_limit_exceeded",
            "access_terminated",
        ),
        rate=codes("rate_limit_exceeded", "requests", "tokens"),
        transient=codes("engine_overloaded", "server_error", "timeout"),
    ),
    max_tokens_field="max_completion_tokens",
    batch="openai",
)
