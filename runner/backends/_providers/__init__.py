"""The providers groundbench knows, one unit each (``qwen.py``, ``doubao.py``, ``kimi.py``,
``openai.py``, ``gemini.py``, ``anthropic.py``, ``openai_compatible.py``): endpoint, wire
format, key variable, reasoning fields and error codes side by side, so a change to one
provider touches one file.

================= ========= ============================================= =====================
provider          wire      default endpoint                              key variable
================= ========= ============================================= =====================
qwen              openai    DashScope compatible mode (international)     ``DASHSCOPE_API_KEY``
doubao            openai    Volcengine Ark (Beijing)                      ``ARK_API_KEY``
kimi              openai    Moonshot (international)                      ``MOONSHOT_API_KEY``
openai            openai    OpenAI                                        ``OPENAI_API_KEY``
gemini            gemini    Gemini API ``v1beta``                         ``GEMINI_API_KEY``
anthropic         anthropic Anthropic Messages API                        ``ANTHROPIC_API_KEY``
openai-compatible openai    none: ``base_url`` is required (vLLM, Ollama) none unless set
================= ========= ============================================= =====================

A setting of the provider-neutral :class:`~conditions.Thinking` that an API cannot express is
refused when the backend is made, never silently dropped. The output allowance is
``max_tokens`` (DashScope, Ark, Kimi, Anthropic, local servers), ``max_completion_tokens``
(OpenAI, whose reasoning models refuse ``max_tokens``) or ``maxOutputTokens`` (Gemini); a
backend's ``max_tokens_field`` chooses between the first two for its server.
"""

from __future__ import annotations

from typing import Any

from conditions import Thinking
from runner._errors import ConfigError
from runner.backends._providers import (
    anthropic,
    doubao,
    gemini,
    kimi,
    openai,
    openai_compatible,
    qwen,
)
from runner.backends._providers._base import ErrorCodes, Provider, Wire

PROVIDERS: dict[str, Provider] = {
    m.PROVIDER.name: m.PROVIDER
    for m in (qwen, doubao, kimi, openai, gemini, anthropic, openai_compatible)
}


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
    return provider_named(provider).thinking(thinking)


def wire_codes(wire: Wire) -> ErrorCodes:
    """Every code the providers of one wire document, by meaning: an OpenAI-compatible
    endpoint may front another provider's service, so a code is read whoever sent it."""
    members = [p.errors for p in PROVIDERS.values() if p.wire == wire]
    return ErrorCodes(
        quota=frozenset().union(*(e.quota for e in members)),
        rate=frozenset().union(*(e.rate for e in members)),
        transient=frozenset().union(*(e.transient for e in members)),
    )


__all__ = ["PROVIDERS", "ErrorCodes", "Provider", "provider_named", "thinking_fields", "wire_codes"]
