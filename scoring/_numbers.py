"""Which groups of an answer are bracketed lists, and of how many numbers, read with numpy.

A bracketed list's content is numbers apart, separators and brackets (PROTOCOL §4). Its tokens,
the stretches between separators and brackets, are read all at once through an automaton of
the number syntax, one character position at a time: as many numpy steps as the longest
token has characters, up to ``_LOCKSTEP``, and the few longer tokens are matched by a pattern
one by one. Thousands of groups, or a list of millions of numbers, are then read in a few
numpy steps, not group by group or number by number.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

import numpy as np

CHUNK = 1 << 18  # characters read at once, cut after a separator so that no token is split
_LOCKSTEP = 64  # steps taken together; a token longer than this is matched on its own

# A number: a signed decimal with an optional exponent, or nan / inf / infinity. The automaton
# below follows it; the parser adds where a number may stand.
BARE_NUMBER = (
    r"[+-]?(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
    r"|(?:[nN][aA][nN]|[iI][nN][fF](?:[iI][nN][iI][tT][yY])?))"
)
_NUMBER = re.compile(BARE_NUMBER.encode("ascii"))
# What stands between numbers: in an explicit run, separators; in a bracketed list, brackets too.
SEPARATOR = r"[\s,;()]"
SEPARATOR_OR_BRACKET = r"[\s,;()\[\]]"
_APART = re.compile(SEPARATOR_OR_BRACKET.encode("ascii"))  # what separates tokens

# Character classes, the automaton's alphabet.
_CLASSES = (
    SEPARATOR_OR_BRACKET.encode("ascii"), rb"[+-]", rb"[0-9]", rb"[.]", rb"[eE]", rb"[nN]",
    rb"[aA]", rb"[iI]", rb"[fF]", rb"[tT]", rb"[yY]",
)  # fmt: skip
_APART_CLASS, _SIGN, _DIGIT, _POINT, _E, _N, _A, _I, _F, _T, _Y = range(len(_CLASSES))
_OTHER = len(_CLASSES)


def _class_table() -> bytes:
    table = bytearray([_OTHER]) * 256
    for code in range(256):
        for kind, pattern in enumerate(_CLASSES):
            if re.fullmatch(pattern, bytes([code])):
                table[code] = kind
                break
    return bytes(table)


_CLASS_OF = _class_table()

# States: where a token has got to in the number syntax. _DEAD is no number whatever follows.
(_START, _SIGNED, _WHOLE, _WHOLE_POINT, _FRACTION, _POINT_FIRST, _EXPONENT, _EXPONENT_SIGN,
 _EXPONENT_DIGITS, _NA1, _NA2, _NA3, _IN1, _IN2, _IN3, _IN4, _IN5, _IN6, _IN7, _IN8,
 _DEAD) = range(21)  # fmt: skip
_MOVES = {
    _START: {_SIGN: _SIGNED, _DIGIT: _WHOLE, _POINT: _POINT_FIRST, _N: _NA1, _I: _IN1},
    _SIGNED: {_DIGIT: _WHOLE, _POINT: _POINT_FIRST, _N: _NA1, _I: _IN1},
    _WHOLE: {_DIGIT: _WHOLE, _POINT: _WHOLE_POINT, _E: _EXPONENT},
    _WHOLE_POINT: {_DIGIT: _FRACTION, _E: _EXPONENT},
    _FRACTION: {_DIGIT: _FRACTION, _E: _EXPONENT},
    _POINT_FIRST: {_DIGIT: _FRACTION},
    _EXPONENT: {_SIGN: _EXPONENT_SIGN, _DIGIT: _EXPONENT_DIGITS},
    _EXPONENT_SIGN: {_DIGIT: _EXPONENT_DIGITS},
    _EXPONENT_DIGITS: {_DIGIT: _EXPONENT_DIGITS},
    _NA1: {_A: _NA2},
    _NA2: {_N: _NA3},
    _IN1: {_N: _IN2},
    _IN2: {_F: _IN3},
    _IN3: {_I: _IN4},
    _IN4: {_N: _IN5},
    _IN5: {_I: _IN6},
    _IN6: {_T: _IN7},
    _IN7: {_Y: _IN8},
}
_ACCEPTING = (_WHOLE, _WHOLE_POINT, _FRACTION, _EXPONENT_DIGITS, _NA3, _IN3, _IN8)


def _tables() -> tuple[np.ndarray, np.ndarray]:
    moves = np.full((_DEAD + 1, _OTHER + 1), _DEAD, np.uint8)
    for state, out in _MOVES.items():
        for kind, then in out.items():
            moves[state, kind] = then
    accepts = np.zeros(_DEAD + 1, np.bool_)
    accepts[list(_ACCEPTING)] = True
    return moves, accepts


_MOVE, _ACCEPTS = _tables()


def last_list(text: bytes, starts: np.ndarray, ends: np.ndarray) -> tuple[int, int] | None:
    """Of the outermost groups whose brackets are at ``starts`` and ``ends - 1`` (in order),
    the index of the last that is a bracketed list, and how many numbers it holds.

    >>> last_list(b"[1, 2] [3 x] [4]", np.array([0, 7, 13]), np.array([6, 12, 16]))
    (2, 1)
    """
    if starts.size == 1:  # perhaps of millions of characters: read in pieces
        count = list_numbers(lambda low, high: text[low:high], int(starts[0]) + 1, int(ends[0]) - 1)
        return (0, count) if count else None
    low = int(starts[0])
    firsts, _, numbers = _tokens(text[low : int(ends[-1])])
    group = np.searchsorted(starts - low, firsts, side="right") - 1
    inside = firsts < ends[group] - 1 - low  # not between two groups
    group, numbers = group[inside], numbers[inside]
    tokens = np.bincount(group, minlength=starts.size)
    others = np.bincount(group[~numbers], minlength=starts.size)  # tokens that are no number
    # A group with no number (a Markdown "[ ]", a "[sic]") is no list (decided).
    lists = np.flatnonzero((tokens > 0) & (others == 0))
    return (int(lists[-1]), int(tokens[lists[-1]])) if lists.size else None


Reader = Callable[[int, int], bytes]  # the text from one offset to another, one byte a character


def list_numbers(read: Reader, start: int, end: int) -> int:
    """How many numbers the text from ``start`` to ``end`` holds if it is a bracketed list's
    content (only numbers apart, separators and brackets, at least one number), else 0; it is
    read a piece at a time, so that a long list costs a piece's memory, not its own.

    >>> text = b"[1, 2.5], [nan, -3e2]"
    >>> list_numbers(lambda low, high: text[low:high], 0, len(text))
    4
    >>> list_numbers(lambda low, high: b"1, 2, 3.4.5"[low:high], 0, 11)
    0
    """
    numbers = 0
    for piece in _pieces(read, start, end):
        firsts, _, are_numbers = _tokens(piece)
        if not are_numbers.all():
            return 0
        numbers += firsts.size
    return numbers


def _pieces(read: Reader, start: int, end: int) -> Iterator[bytes]:
    """The text from ``start`` to ``end`` in pieces of about a chunk, each cut after a
    separator or bracket (or, where a token is longer than a chunk, after the token)."""
    low = start
    while low < end:
        high = min(low + CHUNK, end)
        piece = read(low, high)
        cut = max(piece.rfind(bytes([c])) for c in _APART_BYTES)
        if high < end and cut >= 0:
            piece = piece[: cut + 1]
        parts = [piece]
        while high < end and cut < 0:  # all one token so far: read on to its end
            more = read(high, min(high + CHUNK, end))
            apart = _APART.search(more)
            cut = -1 if apart is None else apart.start()
            parts.append(more if apart is None else more[:cut])
            high += len(more)
        piece = b"".join(parts)
        yield piece
        low += len(piece)


_APART_BYTES = bytes(c for c in range(256) if _CLASS_OF[c] == _APART_CLASS)


def _tokens(text: bytes) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The tokens of ``text``: where each begins, its length, and whether it is a number."""
    kinds = np.frombuffer(text.translate(_CLASS_OF), np.uint8)
    token = kinds != _APART_CLASS
    before = np.concatenate(([False], token[:-1]))
    after = np.concatenate((token[1:], [False]))
    firsts = np.flatnonzero(token & ~before)
    lengths = np.flatnonzero(token & ~after) - firsts + 1
    del token, before, after
    state = _MOVE[_START][kinds[firsts]]  # every token's first character at once
    going = np.flatnonzero(lengths > 1)
    for step in range(1, _LOCKSTEP):
        if going.size == 0:
            break
        state[going] = _MOVE[state[going], kinds[firsts[going] + step]]
        going = going[lengths[going] > step + 1]
    numbers = _ACCEPTS[state]
    for k in going:  # the few tokens longer than the lockstep
        first = int(firsts[k])
        numbers[k] = _NUMBER.fullmatch(text, first, first + int(lengths[k])) is not None
    return firsts, lengths, numbers
