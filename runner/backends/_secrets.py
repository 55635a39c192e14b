"""API keys: read from the environment, shown nowhere.

An :class:`ApiKey` prints as ``ApiKey(****)``; only :meth:`ApiKey.reveal` gives the value, and
the one caller is the code that writes the request header. Providers sometimes echo a key, or a
masked piece of it, in an error body ("Incorrect API key provided: sk-ab***yz"), and a hostile or
broken server may put it anywhere: every text taken from a response (answer, reasoning, ids,
codes, messages) goes through :func:`redact` before it reaches an error, a log or a record.
"""

from __future__ import annotations

import os
import re

from runner._errors import ConfigError

# Key-shaped tokens: OpenAI-style "sk-…" (masked or not) and Google "AIza…" keys.
KEY_SHAPED = re.compile(r"\b(?:sk-[A-Za-z0-9_\-*]{3,}|AIza[A-Za-z0-9_\-*]{8,})")
REDACTED = "[redacted]"
# Any piece of the key this long is redacted wherever it appears: a snippet cut mid-key, or a
# key split across two fields, still leaks most of it.
FRAGMENT = 8


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
    """``text`` with ``key``, every piece of it of :data:`FRAGMENT` or more characters, and
    anything shaped like a key replaced by ``[redacted]``.

    >>> redact("Incorrect API key provided: sk-ab***yz. See docs.")
    'Incorrect API key provided: [redacted]. See docs.'
    >>> key = ApiKey("0f3c9e2a-7b41-4d8e-9a6f-2c5d1e8b7a90")
    >>> redact("key 0f3c9e2a-7b41-4d8e-9a6f (cut)", key)
    'key [redacted] (cut)'
    """
    if key is not None:
        text = _without_pieces_of(key.reveal(), text)
    return KEY_SHAPED.sub(REDACTED, text)


def holds_key(text: str, key: ApiKey) -> bool:
    """Whether ``text`` holds the key or a piece of it of :data:`FRAGMENT` or more characters."""
    return bool(_spans_of_pieces(key.reveal(), text))


def _without_pieces_of(secret: str, text: str) -> str:
    # A key spelt like the marker would come back out of the replacement: use another.
    marker = "[***]" if _spans_of_pieces(secret, REDACTED) else REDACTED
    kept: list[str] = []
    last = 0
    for start, end in _spans_of_pieces(secret, text):
        kept += [text[last:start], marker]
        last = end
    return "".join(kept) + text[last:] if kept else text


def _spans_of_pieces(secret: str, text: str) -> list[tuple[int, int]]:
    """The stretches of ``text`` covered by pieces of ``secret`` at least FRAGMENT long, merged.

    Every such piece is a union of the secret's FRAGMENT-long windows, so finding each window
    (with ``str.find``, in C) finds every piece, however the text was cut.
    """
    size = min(FRAGMENT, len(secret))
    found: list[tuple[int, int]] = []
    for window in {secret[i : i + size] for i in range(len(secret) - size + 1)}:
        at = text.find(window)
        while at != -1:
            found.append((at, at + size))
            at = text.find(window, at + 1)
    merged: list[tuple[int, int]] = []
    for start, end in sorted(found):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged
