"""Where a JSON array or object that ends a text can begin: one place, found in numpy passes.

Ref-Adv's ``_load_last_json_candidate`` decodes from every ``[`` and ``{`` of the answer in
turn until a value ends the answer. Decoding from each is a scan of up to the rest of the
answer, so an answer of ``[`` cost time with the square of its length (61 s for 1 MB, issue
37). Yet at most one of those places can succeed, and it is known without decoding:

- Inside a string, ``\\`` escapes the next character, and outside one it is no JSON, so in a
  text the decoder reads without error a ``"`` opens or closes a string exactly where the run
  of ``\\`` before it is of even length (none included). Call those quotes *toggling*; whether
  a character lies in a string, for a decoding begun outside one at ``s``, is then whether the
  count of toggling quotes from ``s`` to it is odd: the parity of that count from the text's
  start is the same at it as at ``s``.
- A value decoded from ``s`` that ends the text ends with the bracket that closes the one at
  ``s``: counting the brackets of the same parity as ``s`` (the others lie in its strings),
  ``[`` and ``{`` as +1, ``]`` and ``}`` as -1, the sum from ``s`` to the end is 0 and every
  sum from a later bracket to the end is negative.

So ``s`` is the last bracket of the last character's parity, counting back from the end, where
that sum from it to the end comes to 0; two such places would each be the other's. The decoder
then reads from there once, and judges the rest (whether the brackets pair by kind, the
commas, the tokens).
"""

from __future__ import annotations

import numpy as np

CHUNK = 1 << 16  # offsets looked at at once, from the end
_QUOTE, _BACKSLASH = ord('"'), ord("\\")
# Each bracket's step: +1 opens, -1 closes, 0 none.
_STEP = np.zeros(256, np.int8)
_STEP[[ord("["), ord("{")]] = 1
_STEP[[ord("]"), ord("}")]] = -1


def only_start(text: str) -> int | None:
    """The one offset of ``text`` from which a JSON array or object could be decoded that ends
    exactly where ``text`` ends; None if there is none.

    >>> only_start('[1, [2]] and {"a": "]", "b": [3]}')
    13
    >>> only_start("[[[[1]")
    3
    >>> only_start('"[1]')  # the decoder never begins at the quote: no string is open
    1
    >>> only_start("x]") is None
    True
    """
    if not text or text[-1] not in "]}":
        return None
    # One byte a character (a character Latin-1 lacks is "?"): offsets stay offsets.
    codes = np.frombuffer(text.encode("latin-1", "replace"), np.uint8)
    parity = _parity(codes)
    last = parity[-1]
    total, high = 0, codes.size
    while high > 0:  # a chunk at a time from the end, so that memory is a chunk's
        low = max(0, high - CHUNK)
        steps = _STEP[codes[low:high]]
        at = np.flatnonzero((steps != 0) & (parity[low:high] == last))[::-1]
        sums = np.cumsum(steps[at], dtype=np.int64)
        sums += total
        zero = np.flatnonzero(sums == 0)
        if zero.size:
            return low + int(at[zero[0]])
        total = int(sums[-1]) if sums.size else total
        high = low
    return None


def _parity(codes: np.ndarray) -> np.ndarray:
    """For each offset, the parity of the toggling quotes up to it."""
    quotes = np.flatnonzero(codes == _QUOTE)
    toggles = np.zeros(codes.size, np.uint8)
    toggles[quotes[_escaped(codes, quotes) == 0]] = 1
    return np.bitwise_xor.accumulate(toggles)


def _escaped(codes: np.ndarray, quotes: np.ndarray) -> np.ndarray:
    """For each quote, the parity of the run of backslashes just before it."""
    backslash = codes == _BACKSLASH
    # Where each run of backslashes begins, and where the character after it is.
    edges = np.flatnonzero(np.diff(backslash, prepend=False, append=False))
    begins, ends = edges[0::2], edges[1::2]
    if ends.size == 0:
        return np.zeros(quotes.size, np.int64)
    run = np.minimum(np.searchsorted(ends, quotes), ends.size - 1)  # the first ending there on
    length = np.where(ends[run] == quotes, ends[run] - begins[run], 0)
    return length % 2
