"""Which groups of an answer are bracketed lists, and of how many numbers, read with numpy.

A bracketed list's content is numbers apart, separators and brackets (PROTOCOL §4). Its tokens,
the stretches between separators and brackets, are read all at once through an automaton of
the number syntax, four characters a step: the four characters' classes read as one 32-bit
word at each token's start make an index into a table of where the automaton goes from each
state (a separator ends the token, and the state stays). That is as many numpy steps as the
longest token has fours of characters, up to ``_STEPS``; longer tokens are then followed a
character or a whole run of digits a step, a few steps however long. Thousands of groups, or
a list of millions of numbers, are then read in a few numpy steps, not group by group or
number by number.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

import numpy as np

CHUNK = 1 << 18  # characters read at once, cut after a separator so that no token is split
_STEPS = 4  # steps of four characters taken together; a longer token is followed run by run

# A number: a signed decimal with an optional exponent, or nan / inf / infinity. The automaton
# below follows it; the parser adds where a number may stand.
BARE_NUMBER = (
    r"[+-]?(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
    r"|(?:[nN][aA][nN]|[iI][nN][fF](?:[iI][nN][iI][tT][yY])?))"
)
# What stands between numbers: in an explicit run, separators; in a bracketed list, brackets too.
SEPARATOR = r"[\s,;()]"
SEPARATOR_OR_BRACKET = r"[\s,;()\[\]]"
# The characters a number may begin with (a sign, digit, point, or the n or i of nan, inf,
# infinity) and end with (a digit, point, or the n, f or y).
NUMBER_FIRST = r"[+\-0-9.nNiI]"
NUMBER_LAST = r"[0-9.nNfFyY]"

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


# The functions here read text as classes, one byte a character (``text.translate(CLASS_OF)``
# for ASCII text): the number syntax is one of classes, so a class is all they need to know.
CLASS_OF = _class_table()
_APART_BYTE = bytes([_APART_CLASS])

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

# A step reads four characters; in the table, a state of _ENDED or more is a token that ended
# within the step, in the state less _ENDED.
_STEP = 4
_ENDED = _DEAD + 1


def _step_table() -> np.ndarray:
    """For each state before a step and each four classes (four bits each, the first lowest),
    the state after them, a separator ending the token."""
    index = np.arange(1 << (4 * _STEP))
    table = np.empty((_ENDED, index.size), np.uint8)
    for state in range(_ENDED):
        now = np.full(index.size, state, np.uint8)
        ended = np.zeros(index.size, np.bool_)
        for at in range(_STEP):
            kind = np.minimum((index >> (4 * at)) & 0xF, _OTHER)  # 12..15: no class, never read
            ended |= kind == _APART_CLASS
            now = np.where(ended, now, _MOVE[now, kind])
        table[state] = now + _ENDED * ended
    return table.ravel()


_STEP_MOVE = _step_table()  # flat: state << 16 | four classes
_STEP_ACCEPTS = np.concatenate((_ACCEPTS, _ACCEPTS))  # a state after a step: a number?


def last_list(classes: bytes, starts: np.ndarray, ends: np.ndarray) -> tuple[int, int] | None:
    """Of the outermost groups whose brackets are at ``starts`` and ``ends - 1`` (in order),
    the index of the last that is a bracketed list, and how many numbers it holds. The groups
    are a window's, read at once; one group of any length is read by ``list_numbers``.

    >>> classes = b"[1, 2] [3 x] [4]".translate(CLASS_OF)
    >>> last_list(classes, np.array([0, 7, 13]), np.array([6, 12, 16]))
    (2, 1)
    """
    low = int(starts[0])
    begins, numbers = _tokens(classes[low : int(ends[-1])])
    # How many tokens begin before each offset, and how many of the first k are no number:
    # a group's tokens are those begun between its brackets.
    begun = np.zeros(begins.size + 1, np.int32)
    np.cumsum(begins, out=begun[1:])
    others = np.zeros(numbers.size + 1, np.int32)
    np.cumsum(~numbers, out=others[1:])
    opened, closed = np.take(begun, starts - low), np.take(begun, ends - 1 - low)
    tokens = closed - opened
    no_other = np.take(others, closed) == np.take(others, opened)
    # A group with no number (a Markdown "[ ]", a "[sic]") is no list (decided).
    lists = np.flatnonzero((tokens > 0) & no_other)
    return (int(lists[-1]), int(tokens[lists[-1]])) if lists.size else None


Reader = Callable[[int, int], bytes]  # the classes of the text from one offset to another


def list_numbers(read: Reader, start: int, end: int) -> int:
    """How many numbers the text from ``start`` to ``end`` holds if it is a bracketed list's
    content (only numbers apart, separators and brackets, at least one number), else 0; it is
    read a piece at a time, so that a long list costs a piece's memory, not its own.

    >>> classes = b"[1, 2.5], [nan, -3e2]".translate(CLASS_OF)
    >>> list_numbers(lambda low, high: classes[low:high], 0, len(classes))
    4
    >>> list_numbers(lambda low, high: b"1, 2, 3.4.5".translate(CLASS_OF)[low:high], 0, 11)
    0
    """
    numbers = 0
    for piece in _pieces(read, start, end):
        _, are_numbers = _tokens(piece)
        if not are_numbers.all():
            return 0
        numbers += are_numbers.size
    return numbers


def _pieces(read: Reader, start: int, end: int) -> Iterator[bytes]:
    """The text from ``start`` to ``end`` in pieces of about a chunk, each cut after a
    separator or bracket (or, where a token is longer than a chunk, after the token)."""
    low = start
    while low < end:
        high = min(low + CHUNK, end)
        piece = read(low, high)
        cut = piece.rfind(_APART_BYTE)
        if high < end and cut >= 0:
            piece = piece[: cut + 1]
        parts = [piece]
        while high < end and cut < 0:  # all one token so far: read on to its end
            more = read(high, min(high + CHUNK, end))
            cut = more.find(_APART_BYTE)
            parts.append(more if cut < 0 else more[:cut])
            high += len(more)
        piece = b"".join(parts)
        yield piece
        low += len(piece)


def _tokens(classes: bytes) -> tuple[np.ndarray, np.ndarray]:
    """The tokens of a text (its ``classes``): for each offset whether a token begins there,
    and for each token whether it is a number."""
    # Framed by separators: one before, so that a token at 0 begins like any other, and a
    # step's worth after, so that every step reads inside the frame.
    framed = _APART_BYTE + classes + _APART_BYTE * _STEP
    kinds = np.frombuffer(framed, np.uint8)
    token = kinds[: len(classes) + 1] != _APART_CLASS
    begins = token[1:] > token[:-1]
    firsts = np.flatnonzero(begins)
    # Each offset's four classes as one little-endian word (unaligned views are allowed).
    fours = np.ndarray((kinds.size - _STEP + 1,), np.dtype("<u4"), framed, 0, (1,))
    state = np.take(_STEP_MOVE[_START << 16 :], _four_classes(np.take(fours, firsts + 1)))
    going = np.flatnonzero(state < _DEAD)  # neither ended nor already no number
    for step in range(1, _STEPS):
        if going.size == 0:
            break
        at = np.take(firsts, going) + (1 + _STEP * step)
        moved = np.take(state, going).astype(np.intp) << 16
        moved |= _four_classes(np.take(fours, at))
        moved = np.take(_STEP_MOVE, moved)
        state[going] = moved
        going = going[moved < _DEAD]
    if going.size:
        _follow_long_tokens(kinds, np.take(firsts, going) + (1 + _STEP * _STEPS), going, state)
    return begins, np.take(_STEP_ACCEPTS, state)


def _follow_long_tokens(
    kinds: np.ndarray, at: np.ndarray, going: np.ndarray, state: np.ndarray
) -> None:
    """The tokens ``going`` (longer than the steps, numbers so far, read up to ``at``) followed
    to their ends, their states written in ``state``: a character or a whole run of digits a
    step, since a digit leads to a state that takes any number of digits. The syntax allows
    three runs of digits and four other characters, so that is a few steps however long the
    tokens (a pattern matched token by token would be a Python step per number)."""
    others = np.flatnonzero(kinds != _DIGIT)  # where each run of digits has ended
    now = np.take(state, going)
    while going.size:
        kind = np.take(kinds, at)
        ended = kind == _APART_CLASS
        moved = np.where(ended, now, _MOVE[now, kind])
        at = np.where(kind == _DIGIT, np.take(others, np.searchsorted(others, at)), at + 1)
        done = ended | (moved == _DEAD)
        state[going[done]] = moved[done]
        going, now, at = going[~done], moved[~done], at[~done]


def _four_classes(words: np.ndarray) -> np.ndarray:
    """Four classes a byte apart (each below 16) packed four bits apart, as table indices."""
    words = words | (words >> 4)  # bytes 0 and 2 now hold two classes each
    return ((words & 0xFF) | ((words >> 8) & 0xFF00)).astype(np.intp)
