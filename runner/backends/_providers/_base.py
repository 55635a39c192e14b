"""What every provider unit declares."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from conditions import Decoding, Thinking
from runner._errors import ConfigError

Wire = Literal["openai", "gemini", "anthropic"]


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
    # None: no endpoint of its own (a server of one's own): the backend must name base_url.
    base_url: str | None
    # None: no key unless the backend names a variable (api_key_env); then no key is sent.
    key_variable: str | None
    # The provider-neutral Thinking as this API's request fields; ConfigError if inexpressible.
    thinking: Callable[[Thinking], dict[str, Any]]
    errors: ErrorCodes = ErrorCodes()
    max_tokens_field: str = "max_tokens"
    # Its batch API (files + batches, or Gemini's batchGenerateContent), where it has one that
    # groundbench speaks; None: the provider runs online only.
    batch: Wire | None = None
    # The request rate a backend of this provider has when its file sets none (None: the
    # Transport default); a local server is bounded by concurrency, not by a quota.
    default_requests_per_minute: float | None = None
    # Whether ``GET {base_url}/models`` lists the models it serves, which the check compares
    # the configured model with (the hosted providers' lists are not what they bill by).
    lists_models: bool = False
    # A rule between decoding fields the API enforces (Anthropic's thinking budget below the
    # output allowance, no temperature but 1 with thinking): ConfigError if broken. Checked
    # when the backend is made, like ``thinking``.
    check: Callable[[Decoding], None] = lambda decoding: None


def refuse(provider: str, what: str) -> ConfigError:
    """The error for a setting ``provider``'s API has no field for."""
    return ConfigError(f"provider {provider} has no API field for {what}")


def codes(*names: str) -> frozenset[str]:
    return frozenset(names)
