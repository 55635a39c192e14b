"""API keys: read from the environment, shown nowhere.

An :class:`ApiKey` prints as ``ApiKey(****)``; only :meth:`ApiKey.reveal` gives the value, and
the one caller is the code that writes the request header. Providers sometimes echo a key, or a
masked piece of it, in an error body ("Incorrect API key provided: sk-ab***yz"), and a hostile or
broken server may put it anywhere: every text taken from a response (answer, reasoning, ids,
codes, messages) goes through :func:`redact` before it reaches an error, a log or a record, and
every short one (an id, a code, a finish reason, a message) through :func:`clip`, which caps it
too: a server may write 200 KB where a word is expected, and every record, page and line that
shows the text would carry it (348 answers with a 200 KB finish reason made a 126 MB report).
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
MAX_FIELD = 256  # characters of a short text a server gives: an id, a code, a finish reason
MAX_MESSAGE = 1024  # characters of a server's message (an error's, a batch's, a line's problem)


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


def clip(text: str, key: ApiKey | None = None, limit: int = MAX_FIELD) -> str:
    """``text`` redacted (:func:`redact`) and, past ``limit`` characters, cut and marked: the
    result is never longer than ``limit``, and a clipped text is its own clip.

    >>> clip("STOP")
    'STOP'
    >>> clip("x" * 300, limit=40)
    'xxxxxxxxxxxxxxxxxxxxxxxx…[cut 276 chars]'
    >>> clip("sk-abcdefgh " + "y" * 300, limit=40)
    '[redacted] yyyyyyyyyyyyy…[cut 287 chars]'
    """
    # Redacted whole, then cut: a cut first could leave a key-shaped token no longer matched.
    # Linear in the text, which the response's size bounds.
    text = redact(text, key)
    if len(text) <= limit:
        return text
    kept = max(0, limit - len(_cut_marker(len(text))))  # the longest the marker can be
    return text[:kept] + _cut_marker(len(text) - kept)


def one_line(text: str, key: ApiKey | None = None, limit: int = MAX_FIELD) -> str:
    """:func:`clip` of ``text`` with each run of whitespace (a newline too) made one space:
    a server's text as one line of a table or a message, however it was stored (an older
    version stored it uncut).

    >>> one_line("batch\\n_1  x")
    'batch _1 x'
    """
    return clip(" ".join(text.split()), key, limit)


def _cut_marker(count: int) -> str:
    return f"…[cut {count:,} chars]"


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
