"""Gemini API (``v1beta``), its own wire.

Reasoning: ``thinkingConfig`` with ``thinkingLevel`` (effort) or ``thinkingBudget`` (tokens, 0
when off), never both, and ``includeThoughts`` so reasoning comes back apart from the answer.
Its errors are ``google.rpc.Status`` objects, read by the wire (``_gemini.py``), not codes.
"""

from __future__ import annotations

from typing import Any

from conditions import Thinking
from runner.backends._providers._base import Provider, refuse


def thinking(t: Thinking) -> dict[str, Any]:
    if t.mode == "off":
        return {"thinkingConfig": {"thinkingBudget": 0}}
    if t.effort is not None and t.budget_tokens is not None:
        raise refuse("gemini", "a reasoning effort and a budget together (one or the other)")
    if t.effort == "max":
        raise refuse("gemini", "reasoning effort 'max' (low, medium, high)")
    config: dict[str, Any] = {"includeThoughts": True}
    if t.effort is not None:
        config["thinkingLevel"] = t.effort
    if t.budget_tokens is not None:
        config["thinkingBudget"] = t.budget_tokens
    return {"thinkingConfig": config}


PROVIDER = Provider(
    "gemini",
    "gemini",
    "https://generativelanguage.googleapis.com/v1beta",
    "GEMINI_API_KEY",
    thinking,
    batch="gemini",
)
