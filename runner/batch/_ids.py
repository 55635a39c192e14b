"""The ids a batch provider gives (a batch's, its files'), checked before they are kept or used.

A batch id and its file ids come back from the server, are stored in the ledger (``batches``),
printed (``groundbench batches``, the run's lines) and put in the URLs of later requests. A
broken or hostile server may answer an id of 10 KB, one with a newline or a ``?`` in it, or one
that echoes the key: issue 37 found them stored and printed raw. The rule, one for every id
and both providers: **an id is 1 to** :data:`MAX_ID` **characters of** ``[A-Za-z0-9_./:-]``
**and holds no piece of the key** — every documented id is far inside it (OpenAI's
``batch_…`` and ``file-…``, Gemini's ``batches/…`` and ``files/…``, a few dozen characters).
Anything else is refused with :class:`BadId`, which is never retried: the batch it names is
treated as not made (or, once made, as lost), with one line saying which id and why, the id
itself shown clipped (:func:`~runner.backends._secrets.clip`), never kept or used.
"""

from __future__ import annotations

import re

from runner.backends._errors import Fatal
from runner.backends._secrets import ApiKey, clip, redact

MAX_ID = 256  # characters; the longest documented id is under 100
_ID = re.compile(r"[A-Za-z0-9_./:-]+")
_SHOWN = 48  # characters of a refused id shown in its line


class BadId(Fatal):
    """A server's id broke the rule of :mod:`runner.batch._ids`: code ``bad-id``."""

    def __init__(self, message: str) -> None:
        super().__init__(message, code="bad-id")


def checked_id(value: object, what: str, key: ApiKey | None = None) -> str:
    """``value`` if it is an id by the rule (see the module); else :class:`BadId`, naming
    ``what`` ("batch id", "output_file_id") and showing the value clipped, on one line.

    >>> checked_id("batch_abc123", "batch id")
    'batch_abc123'
    >>> try:
    ...     checked_id("x" * 10_000, "batch id")
    ... except BadId as exc:
    ...     print(exc.message)  # doctest: +NORMALIZE_WHITESPACE
    the server answered a batch id of 10,000 characters (at most 256):
    'xxxxxxxxxxxxxxxxxxxxxxxxxxxxx…[cut 9,971 chars]'; refused, never stored or used
    """
    if not isinstance(value, str):
        raise BadId(f"the server answered a {what} that is a {type(value).__name__}, not text")
    if len(value) > MAX_ID:
        why = f"of {len(value):,} characters (at most {MAX_ID})"
    elif redact(value, key) != value:
        why = "that holds the API key"
    elif not _ID.fullmatch(value):
        why = "with characters outside [A-Za-z0-9_./:-]"
    else:
        return value
    shown = repr(clip(value, key, _SHOWN))  # one line, whatever the id holds
    raise BadId(f"the server answered a {what} {why}: {shown}; refused, never stored or used")


def optional_id(value: object, what: str, key: ApiKey | None = None) -> str | None:
    """:func:`checked_id` of ``value``, or ``None`` where the server gave none (``null``, ``""``,
    absent)."""
    return None if value is None or value == "" else checked_id(value, what, key)


__all__ = ["MAX_ID", "BadId", "checked_id", "optional_id"]
