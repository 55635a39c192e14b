"""Anthropic's Messages API (``POST /v1/messages``), its own wire (``_anthropic.py``).

Reasoning is extended thinking: ``thinking: {type: "enabled", budget_tokens: N}``, and
``{type: "disabled"}`` when off, said outright since what a model does when ``thinking`` is
omitted depends on the model (the SDK's ``ThinkingConfigParam``). The budget is at least 1,024
tokens and below ``max_tokens``; an effort level, or thinking on with no budget, is refused
rather than given a budget the configuration never named. The temperature runs from 0 to 1, and
with thinking on the API takes none but 1 (it answers 400 otherwise): any other is refused when
the backend is made.
Its errors are typed (``error.type``), read by the wire, not codes. Its batch mode is the
Message Batches API, the requests inline in the create (:mod:`runner.batch._anthropic`).
"""

from __future__ import annotations

from typing import Any

from conditions import Decoding, Thinking
from runner._errors import ConfigError
from runner.backends._providers._base import Provider, refuse

MIN_THINKING_BUDGET = 1024  # the API's documented minimum budget_tokens


def thinking(t: Thinking) -> dict[str, Any]:
    if t.mode == "off":
        return {"thinking": {"type": "disabled"}}
    if t.effort is not None:
        raise refuse("anthropic", "a reasoning effort (extended thinking takes budget_tokens)")
    if t.budget_tokens is None:
        raise refuse("anthropic", "thinking on without budget_tokens (it has no default)")
    if t.budget_tokens < MIN_THINKING_BUDGET:
        raise ConfigError(
            f"provider anthropic: thinking budget_tokens {t.budget_tokens} is below the API's "
            f"minimum of {MIN_THINKING_BUDGET}"
        )
    return {"thinking": {"type": "enabled", "budget_tokens": t.budget_tokens}}


def check(decoding: Decoding) -> None:
    """The API's rules between thinking, the output allowance and the temperature."""
    if decoding.temperature is not None and decoding.temperature > 1.0:
        raise ConfigError(
            f"provider anthropic: temperature {decoding.temperature} (the API takes 0 to 1)"
        )
    t = decoding.thinking
    if t.mode == "off":
        return
    if t.budget_tokens is not None and t.budget_tokens >= decoding.max_output_tokens:
        raise ConfigError(
            f"provider anthropic: thinking budget_tokens {t.budget_tokens} must be below "
            f"max_output_tokens {decoding.max_output_tokens}"
        )
    if decoding.temperature is not None and decoding.temperature != 1.0:
        raise ConfigError(
            f"provider anthropic: temperature {decoding.temperature} with thinking on (the API "
            "takes only 1, or none, while thinking)"
        )


PROVIDER = Provider(
    "anthropic",
    "anthropic",
    "https://api.anthropic.com",
    "ANTHROPIC_API_KEY",
    thinking,
    batch="anthropic",  # the Message Batches API (runner.batch._anthropic)
    check=check,
)
