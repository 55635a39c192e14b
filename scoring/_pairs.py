"""Where the last two number-like tokens stand apart in an answer, found from the end a chunk
at a time.

Every explicit run of numbers holds such a pair: one token's last character (a digit, a point,
or the n, f or y of nan, inf, infinity), separators only, and the next token's first (a sign,
digit, point, n or i). The parser searches for runs only up to the last pair, so finding it
must cost little however long the answer: one translation of each chunk to character kinds
(in C), and a few numpy operations on the chunks that hold a candidate, from the last chunk
back to the first that holds a pair.
"""

from __future__ import annotations

import re

import numpy as np

from scoring._numbers import NUMBER_FIRST, NUMBER_LAST, SEPARATOR

CHUNK = 1 << 16  # offsets looked at at once

_SEPARATES, _ENDS, _STARTS = 1, 2, 4  # bits of a byte's kind


def _kinds_table() -> bytes:
    classes = (
        (_SEPARATES, SEPARATOR.encode("ascii")),
        (_ENDS, NUMBER_LAST.encode("ascii")),
        (_STARTS, NUMBER_FIRST.encode("ascii")),
    )
    kinds = bytearray(256)
    for code in range(256):
        for bit, pattern in classes:
            if re.fullmatch(pattern, bytes([code])):
                kinds[code] |= bit
    return bytes(kinds)


_KINDS = _kinds_table()


def last_pair(text: bytes | bytearray, before: int | None = None) -> int | None:
    """The offset where the later token of the last pair starts, if there is a pair; only
    pairs whose later token starts before ``before`` (if given) are looked at.

    >>> last_pair(b"x 1, 2 a 3")
    5
    >>> last_pair(b"x 1, 2 a 3", 5) is None
    True
    >>> last_pair(b"1 a 2") is None
    True
    """
    end = len(text) if before is None else min(before, len(text))
    while end > 1:
        low = max(0, end - CHUNK)
        kinds = np.frombuffer(text[low:end].translate(_KINDS), np.uint8)
        found = _last_in_piece(text, low, kinds)
        if found is not None:
            return found
        end = low + 1  # the next piece ends with this one's first offset, which it can start
    return None


def _last_in_piece(text: bytes | bytearray, low: int, kinds: np.ndarray) -> int | None:
    """The last pair whose later token starts in ``kinds[1:]`` (the piece at ``low``)."""
    separates = (kinds & _SEPARATES).view(np.bool_)
    if not (((kinds[1:] & _STARTS) != 0) & separates[:-1]).any():
        return None  # no token that could be a later one starts after a separator
    # The stretches of separators, the k-th start with the k-th end; a later token starts
    # right after the end of one, and the earlier token ends right before its start.
    ends = np.flatnonzero(separates[:-1] > separates[1:])  # of those the piece does not end in
    later = (np.take(kinds, ends + 1) & _STARTS) != 0
    starts = np.flatnonzero(separates[1:] > separates[:-1]) + 1
    reaching = bool(separates[0])  # the first stretch reaches back to the piece's start
    if reaching:
        first_end, first_later = int(ends[0]), bool(later[0])
        ends, later = ends[1:], later[1:]
    starts = starts[: ends.size]
    pairs = later & ((np.take(kinds, starts - 1) & _ENDS) != 0)
    if pairs.any():
        return low + int(ends[np.flatnonzero(pairs)[-1]]) + 1
    if not (reaching and first_later):
        return None
    # The first stretch may reach back past the piece's start: its earlier token is before.
    before = _last_non_separator(text, low)
    if before is None or not _KINDS[text[before]] & _ENDS:
        return None
    return low + first_end + 1


def _last_non_separator(text: bytes | bytearray, end: int) -> int | None:
    """The last offset before ``end`` of a character that is no separator."""
    while end > 0:
        low = max(0, end - CHUNK)
        kinds = np.frombuffer(text[low:end].translate(_KINDS), np.uint8)
        others = np.flatnonzero((kinds & _SEPARATES) == 0)
        if others.size:
            return low + int(others[-1])
        end = low
    return None
