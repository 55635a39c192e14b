"""JSON from a server, read bounded in depth as well as in size.

``json.loads`` recurses once per array or object: a body of 1 MB of ``[`` (or ``{"choices":``
nested 500,000 deep) raises ``RecursionError``, which no reader of a bad body expected, and
which ended the whole run (issue 37). Every body or result line a server sends is read by
:func:`read_json`, which measures the nesting first and refuses anything deeper than
:data:`MAX_JSON_DEPTH` with a ``ValueError``, as it refuses any other text that is no JSON.

The measure runs in C (numpy), a megabyte at a time: a body a reader may take (up to its
size cap) costs a few passes over its bytes, whatever it holds.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

# The deepest a provider's answer nests is about 12 (a Gemini batch Operation with inlined
# responses: operation, response, inlinedResponses ×2, the list, an item, response,
# candidates, a candidate, content, parts, a part); an error body's google.rpc details about 6.
# 64 is far past any of them and far below the interpreter's recursion limit (~1,000).
MAX_JSON_DEPTH = 64
_CHUNK = 1 << 20
_QUOTE, _BACKSLASH = ord('"'), ord("\\")
_OPEN, _CLOSE = (ord("["), ord("{")), (ord("]"), ord("}"))


class TooDeep(ValueError):
    """JSON nested deeper than :data:`MAX_JSON_DEPTH`: refused unread."""


def read_json(body: bytes) -> Any:
    """``json.loads(body)``, refused when nested deeper than :data:`MAX_JSON_DEPTH`.

    Raises
    ------
    ValueError
        The body is no JSON (``json.JSONDecodeError``), nests too deep (:class:`TooDeep`),
        or is not in the encoding it seems to be (``UnicodeDecodeError``).
    """
    encoding = json.detect_encoding(body)
    text = body.decode(encoding, "surrogatepass")
    # The scan reads bytes where no character but ASCII has ASCII bytes: UTF-8.
    utf8 = body if encoding == "utf-8" else text.encode("utf-8", "surrogatepass")
    openers = utf8.count(b"[") + utf8.count(b"{")  # no more than the limit: no deeper
    if openers > MAX_JSON_DEPTH and nesting(utf8, stop_above=MAX_JSON_DEPTH) > MAX_JSON_DEPTH:
        raise TooDeep(f"nested deeper than {MAX_JSON_DEPTH} arrays and objects")
    return json.loads(text)


def nesting(data: bytes, stop_above: int | None = None) -> int:
    """How deep the arrays and objects of the JSON text ``data`` (UTF-8) nest, brackets inside
    strings not counted; exact over any stretch that is JSON, which is as far as a decoder
    reads. ``stop_above``: stop counting once the depth passes it.

    >>> nesting(b'{"a": [1, "]]]", {"b": "\\\\"[["}]}')
    3
    >>> nesting(b"[" * 3_000_000, stop_above=64) > 64
    True
    """
    deepest = depth = 0
    in_string = False
    slashes = 0  # backslashes in a row just before the chunk
    for low in range(0, len(data), _CHUNK):
        chunk = np.frombuffer(data, np.uint8, min(_CHUNK, len(data) - low), low)
        quotes, slashes = _string_quotes(chunk, slashes)
        steps = _bracket_steps(chunk, quotes, in_string)
        in_string ^= quotes.size % 2 == 1
        if steps.size:
            levels = np.cumsum(steps) + depth
            deepest = max(deepest, int(levels.max()))
            depth = int(levels[-1])
        if stop_above is not None and deepest > stop_above:
            break
    return deepest


def _string_quotes(chunk: np.ndarray, slashes: int) -> tuple[np.ndarray, int]:
    """Where the quotes that open or close a string are (those after an even run of
    backslashes, ``slashes`` of them before the chunk), and the backslashes it ends with.

    Outside a string a backslash is no JSON at all: a decoder stops there, so counting it as
    an escape only ever changes what comes after the point where reading ends.
    """
    quotes = np.flatnonzero(chunk == _QUOTE)
    backslash = chunk == _BACKSLASH
    if not backslash.any():
        run_before = np.full(quotes.size, slashes if quotes.size else 0)
        run_before[quotes > 0] = 0
        trailing = 0
    else:
        index = np.arange(chunk.size)
        last_other = np.maximum.accumulate(np.where(backslash, -1, index))
        before = np.maximum(quotes - 1, 0)
        run_before = np.where(quotes > 0, before - last_other[before], 0)
        run_before += np.where((quotes == 0) | (last_other[before] == -1), slashes, 0)
        trailing = chunk.size - 1 - int(last_other[-1])
        if last_other[-1] == -1:
            trailing += slashes
    return quotes[run_before % 2 == 0], trailing


def _bracket_steps(chunk: np.ndarray, quotes: np.ndarray, started_in_string: bool) -> np.ndarray:
    """+1 for each opening and -1 for each closing bracket outside strings, in order."""
    opens = np.flatnonzero((chunk == _OPEN[0]) | (chunk == _OPEN[1]))
    closes = np.flatnonzero((chunk == _CLOSE[0]) | (chunk == _CLOSE[1]))
    where = np.concatenate([opens, closes])
    steps = np.concatenate([np.ones(opens.size, np.int64), -np.ones(closes.size, np.int64)])
    # Inside a string when an odd number of string quotes came before (plus the start's state).
    inside = (np.searchsorted(quotes, where) % 2 == 1) ^ started_in_string
    order = np.argsort(where[~inside], kind="stable")
    kept: np.ndarray = steps[~inside][order]
    return kept
