"""Kimi on Moonshot (international endpoint).

Reasoning: ``thinking: {"type": "enabled" | "disabled"}``; thinking is on or off, with no
effort or budget.
"""

from __future__ import annotations

from typing import Any

from conditions import Thinking
from runner.backends._providers._base import ErrorCodes, Provider, codes, refuse


def thinking(t: Thinking) -> dict[str, Any]:
    if t.mode == "on" and (t.effort is not None or t.budget_tokens is not None):
        raise refuse("kimi", "a reasoning effort or budget (thinking is on or off)")
    return {"thinking": {"type": "enabled" if t.mode == "on" else "disabled"}}


PROVIDER = Provider(
    "kimi",
    "openai",
    "https://api.moonshot.ai/v1",
    "MOONSHOT_API_KEY",
    thinking,
    ErrorCodes(
        quota=codes("exceeded_current_quota_error"),  # balance spent
        rate=codes("rate_limit_reached_error"),
        transient=codes("engine_overloaded_error", "server_error"),
    ),
)
