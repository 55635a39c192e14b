"""The providers groundbench knows: wire protocol, endpoint, key variable, reasoning fields.

========== ============ ============================================ =====================
provider   protocol     default endpoint                              key variable
========== ============ ============================================ =====================
qwen       openai       DashScope compatible mode (international)     ``DASHSCOPE_API_KEY``
doubao     openai       Volcengine Ark (Beijing)                      ``ARK_API_KEY``
kimi       openai       Moonshot (international)                      ``MOONSHOT_API_KEY``
openai     openai       OpenAI                                        ``OPENAI_API_KEY``
gemini     gemini       Gemini API ``v1beta``                         ``GEMINI_API_KEY``
========== ============ ============================================ =====================

How the provider-neutral :class:`~conditions.Thinking` maps to each API (a setting an API
cannot express is refused when the backend is made, never silently dropped):

- DashScope: ``enable_thinking``; ``budget_tokens`` → ``thinking_budget``; effort ``max`` (or
  none) is the model's full chain; other effort levels have no DashScope field.
- Ark and Kimi: ``thinking: {"type": "enabled" | "disabled"}``; Ark also takes effort
  ``low``/``medium``/``high`` as ``reasoning_effort``; neither takes a token budget.
- OpenAI: ``reasoning_effort`` (``none`` when off, else the effort level).
- Gemini: ``thinkingConfig`` with ``thinkingLevel`` (effort) or ``thinkingBudget`` (tokens, 0
  when off), never both, and ``includeThoughts`` so reasoning comes back apart from the answer.

The output allowance is ``max_tokens`` (DashScope, Ark, Kimi), ``max_completion_tokens``
(OpenAI, whose reasoning models refuse ``max_tokens``) or ``maxOutputTokens`` (Gemini).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from conditions import Thinking
from runner._errors import ConfigError

Protocol = Literal["openai", "gemini"]


@dataclass(frozen=True)
class Provider:
    """Where a provider lives and which wire protocol it speaks."""

    name: str
    protocol: Protocol
    base_url: str
    key_variable: str
    max_tokens_field: str = "max_tokens"


PROVIDERS: dict[str, Provider] = {
    p.name: p
    for p in (
        Provider("qwen", "openai", "https://dashscope-intl.aliyuncs.com/compatible-mode/v1",
                 "DASHSCOPE_API_KEY"),
        Provider("doubao", "openai", "https://ark.cn-beijing.volces.com/api/v3", "ARK_API_KEY"),
        Provider("kimi", "openai", "https://api.moonshot.ai/v1", "MOONSHOT_API_KEY"),
        Provider("openai", "openai", "https://api.openai.com/v1", "OPENAI_API_KEY",
                 max_tokens_field="max_completion_tokens"),
        Provider("gemini", "gemini", "https://generativelanguage.googleapis.com/v1beta",
                 "GEMINI_API_KEY"),
    )
}  # fmt: skip


def provider_named(name: str) -> Provider:
    """The :class:`Provider` called ``name``.

    Raises
    ------
    ConfigError
        No such provider.
    """
    try:
        return PROVIDERS[name]
    except KeyError:
        raise ConfigError(
            f"unknown provider {name!r}; known: {', '.join(sorted(PROVIDERS))}"
        ) from None


def thinking_fields(provider: str, thinking: Thinking) -> dict[str, Any]:
    """The request fields that set reasoning for ``provider``, or ConfigError if it can't."""
    mapper = _MAPPERS.get(provider)
    if mapper is None:
        raise ConfigError(f"unknown provider {provider!r}")
    return mapper(thinking)


def _refuse(provider: str, what: str) -> ConfigError:
    return ConfigError(f"provider {provider} has no API field for {what}")


def _dashscope(t: Thinking) -> dict[str, Any]:
    if t.mode == "off":
        return {"enable_thinking": False}
    if t.effort not in (None, "max"):
        raise _refuse("qwen", f"reasoning effort {t.effort!r} (use budget_tokens, or 'max')")
    fields: dict[str, Any] = {"enable_thinking": True}
    if t.budget_tokens is not None:
        fields["thinking_budget"] = t.budget_tokens
    return fields


def _ark(t: Thinking) -> dict[str, Any]:
    if t.mode == "off":
        return {"thinking": {"type": "disabled"}}
    if t.budget_tokens is not None:
        raise _refuse("doubao", "a reasoning token budget")
    fields: dict[str, Any] = {"thinking": {"type": "enabled"}}
    if t.effort == "max":
        raise _refuse("doubao", "reasoning effort 'max' (low, medium, high)")
    if t.effort is not None:
        fields["reasoning_effort"] = t.effort
    return fields


def _kimi(t: Thinking) -> dict[str, Any]:
    if t.mode == "on" and (t.effort is not None or t.budget_tokens is not None):
        raise _refuse("kimi", "a reasoning effort or budget (thinking is on or off)")
    return {"thinking": {"type": "enabled" if t.mode == "on" else "disabled"}}


def _openai(t: Thinking) -> dict[str, Any]:
    if t.mode == "off":
        return {"reasoning_effort": "none"}
    if t.budget_tokens is not None:
        raise _refuse("openai", "a reasoning token budget")
    if t.effort == "max":
        raise _refuse("openai", "reasoning effort 'max' (low, medium, high)")
    return {} if t.effort is None else {"reasoning_effort": t.effort}


def _gemini(t: Thinking) -> dict[str, Any]:
    if t.mode == "off":
        return {"thinkingConfig": {"thinkingBudget": 0}}
    if t.effort is not None and t.budget_tokens is not None:
        raise _refuse("gemini", "a reasoning effort and a budget together (one or the other)")
    if t.effort == "max":
        raise _refuse("gemini", "reasoning effort 'max' (low, medium, high)")
    config: dict[str, Any] = {"includeThoughts": True}
    if t.effort is not None:
        config["thinkingLevel"] = t.effort
    if t.budget_tokens is not None:
        config["thinkingBudget"] = t.budget_tokens
    return {"thinkingConfig": config}


_MAPPERS = {
    "qwen": _dashscope,
    "doubao": _ark,
    "kimi": _kimi,
    "openai": _openai,
    "gemini": _gemini,
}
