"""Qwen on DashScope's OpenAI-compatible mode (international endpoint).

Reasoning: ``enable_thinking``; ``budget_tokens`` → ``thinking_budget``; effort ``max`` (or
none) is the model's full chain; other effort levels have no DashScope field.
"""

from __future__ import annotations

from typing import Any

from conditions import Thinking
from runner.backends._providers._base import ErrorCodes, Provider, codes, refuse


def thinking(t: Thinking) -> dict[str, Any]:
    if t.mode == "off":
        return {"enable_thinking": False}
    if t.effort not in (None, "max"):
        raise refuse("qwen", f"reasoning effort {t.effort!r} (use budget_tokens, or 'max')")
    fields: dict[str, Any] = {"enable_thinking": True}
    if t.budget_tokens is not None:
        fields["thinking_budget"] = t.budget_tokens
    return fields


PROVIDER = Provider(
    "qwen",
    "openai",
    "https://dashscope-intl.aliyuncs.com/compatible-mode/v1",
    "DASHSCOPE_API_KEY",
    thinking,
    ErrorCodes(
        # Arrears; the free tier used up in "free tier only" mode.
        quota=codes("Arrearage", "AllocationQuota.FreeTierOnly"),
        # Throttling.AllocationQuota is per minute unless its message says a plan is spent
        # (the OpenAI-wire classifier reads the message).
        rate=codes(
            "Throttling",
            "Throttling.RateQuota",
            "Throttling.BurstRate",
            "Throttling.AllocationQuota",
        ),
        transient=codes("InternalError", "InternalError.Algo", "ServiceUnavailable"),
    ),
    batch="openai",
)
