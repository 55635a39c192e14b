"""What every provider unit declares."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from conditions import Thinking
from runner._errors import ConfigError

Wire = Literal["openai", "gemini"]


@dataclass(frozen=True)
class ErrorCodes:
    """The ``error.code`` / ``error.type`` values a provider documents, by what they mean."""

    quota: frozenset[str] = field(default_factory=frozenset)  # terminal: top up or raise a limit
    rate: frozenset[str] = field(default_factory=frozenset)  # a throttle: wait and try again
    transient: frozenset[str] = field(default_factory=frozenset)  # overload sent as a 4xx/429


@dataclass(frozen=True)
class Provider:
    """One provider: where it lives, the wire it speaks, its key, how it sets reasoning, and
    its error codes — everything a change to one provider touches."""

    name: str
    wire: Wire
    base_url: str
    key_variable: str
    # The provider-neutral Thinking as this API's request fields; ConfigError if inexpressible.
    thinking: Callable[[Thinking], dict[str, Any]]
    errors: ErrorCodes = ErrorCodes()
    max_tokens_field: str = "max_tokens"
    # Its batch API (files + batches, or Gemini's batchGenerateContent), where it has one that
    # groundbench speaks; None: the provider runs online only.
    batch: Wire | None = None


def refuse(provider: str, what: str) -> ConfigError:
    """The error for a setting ``provider``'s API has no field for."""
    return ConfigError(f"provider {provider} has no API field for {what}")


def codes(*names: str) -> frozenset[str]:
    return frozenset(names)
