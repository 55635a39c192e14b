"""Doubao on Volcengine Ark (Beijing).

Reasoning: ``thinking: {"type": "enabled" | "disabled"}``; effort ``low``/``medium``/``high``
as ``reasoning_effort``; no token budget.
"""

from __future__ import annotations

from typing import Any

from conditions import Thinking
from runner.backends._providers._base import ErrorCodes, Provider, codes, refuse


# Shaped as qwen.py's: both switch thinking in one field and refuse what Thinking asks that
# their API cannot say. What differs is the point of each unit: Ark takes an effort (low,
# medium, high) and no budget; DashScope a token budget and no effort but the full 'max'.
def thinking(t: Thinking) -> dict[str, Any]:
    if t.mode == "off":
        return {"thinking": {"type": "disabled"}}
    if t.budget_tokens is not None:
        raise refuse("doubao", "a reasoning token budget")
    fields: dict[str, Any] = {"thinking": {"type": "enabled"}}
    if t.effort == "max":
        raise refuse("doubao", "reasoning effort 'max' (low, medium, high)")
    if t.effort is not None:
        fields["reasoning_effort"] = t.effort
    return fields


PROVIDER = Provider(
    "doubao",
    "openai",
    "https://ark.cn-beijing.volces.com/api/v3",
    "ARK_API_KEY",
    thinking,
    ErrorCodes(
        quota=codes("AccountOverdueError"),  # the account is overdue
        rate=codes(
            "RateLimitExceeded",
            "RateLimitExceeded.EndpointRPMExceeded",
            "RateLimitExceeded.EndpointTPMExceeded",
            "QuotaExceeded",
        ),
        transient=codes("ServerOverloaded", "InternalError", "ServiceUnavailable"),
    ),
)
