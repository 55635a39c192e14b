"""API keys: read from the environment, shown nowhere.

An :class:`ApiKey` prints as ``ApiKey(****)``; only :meth:`ApiKey.reveal` gives the value, and
the one caller is the code that writes the request header. Providers sometimes echo a key, or a
masked piece of it, in an error body ("Incorrect API key provided: sk-ab***yz"): every message
taken from a response goes through :func:`redact` before it reaches an error or a record.
"""

from __future__ import annotations

import os
import re

from runner._errors import ConfigError

# Key-shaped tokens: OpenAI-style "sk-…" (masked or not) and Google "AIza…" keys.
_KEY_SHAPED = re.compile(r"\b(?:sk-[A-Za-z0-9_\-*]{3,}|AIza[A-Za-z0-9_\-*]{8,})")
REDACTED = "[redacted]"


class ApiKey:
    """A secret that never appears in a repr, a str, a log line or a pickle."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        if not value.strip():
            raise ConfigError("an API key is empty")
        self._value = value.strip()

    def reveal(self) -> str:
        """The key itself, for the request header and nothing else."""
        return self._value

    def __repr__(self) -> str:
        return "ApiKey(****)"

    __str__ = __repr__

    def __reduce__(self) -> tuple[object, ...]:
        # A key is re-read from the environment where it is needed, never shipped.
        raise TypeError("an ApiKey cannot be pickled; read it from the environment where used")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ApiKey) and other._value == self._value

    def __hash__(self) -> int:
        return hash(("ApiKey", self._value))


def key_from_env(variable: str) -> ApiKey:
    """The key in environment variable ``variable``.

    Raises
    ------
    ConfigError
        The variable is unset or empty (the message names the variable, never a value).
    """
    value = os.environ.get(variable, "")
    if not value.strip():
        raise ConfigError(f"environment variable {variable} is not set: it must hold the API key")
    return ApiKey(value)


def redact(text: str, key: ApiKey | None = None) -> str:
    """``text`` with ``key`` and anything shaped like a key replaced by ``[redacted]``.

    >>> redact("Incorrect API key provided: sk-ab***yz. See docs.")
    'Incorrect API key provided: [redacted]. See docs.'
    """
    if key is not None:
        secret = key.reveal()
        # A key that is part of the marker itself would come back out of the replacement.
        text = text.replace(secret, REDACTED if secret not in REDACTED else "[***]")
    return _KEY_SHAPED.sub(REDACTED, text)
