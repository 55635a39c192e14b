"""Reading the answer text (PROTOCOL §4).

The parser takes **the last explicit or bracketed list** in the answer, and only when that list
holds exactly the expected number of finite values:

- a *bracketed list* is an outermost ``[...]`` group whose content is only numbers, separators
  and nested brackets, with at least one number; ``[[x, y], [x, y], …]`` flattens into one list;
- an *explicit list* is a maximal run of two or more numbers outside brackets, separated only by
  commas, whitespace, semicolons or the parentheses of ``(x, y)`` pairs (decided);
- "last" is the list that ends last; an earlier list of the right length does not rescue a later
  list of the wrong one (decided).

A number is a signed decimal with an optional exponent, or ``nan``/``inf``/``infinity`` (so that
they make a list non-finite instead of splitting it), standing apart from letters and dots: the
``1`` of ``x1`` or ``v1.2`` is no number, while a full stop may end a sentence after one (``6.``,
``2.5.``).

Every step is a regular expression run in C or a numpy pass; the only Python loops are over
chunks and windows, never over groups, runs or numbers, and memory is about one copy of the
answer:

- the text is copied one byte a character, each byte in the same classes as its character, so
  that offsets stay offsets and numpy can read what the patterns read;
- brackets are paired with numpy in chunks (``scoring._brackets``), and every outermost group
  is blotted out of that copy;
- the last explicit run is looked for in that copy, in windows ending at a pair of number-like
  tokens apart (found from the end with numpy, ``scoring._pairs``), widened only while the run
  found could reach further left; it is matched in pieces of at most ``count + 1`` numbers, of
  which the regex engine keeps the last two, so a run of millions of numbers is known to be
  too long without being matched whole;
- the groups after it are taken from the end in widening windows, those whose first and last
  characters could not begin and end a list are passed over, and the tokens of the rest are
  read all at once through an automaton of the number syntax (``scoring._numbers``), from
  the text again, a window or a piece at a time.
"""

from __future__ import annotations

import collections
import functools
import math
import re
from dataclasses import dataclass

import numpy as np

from scoring._brackets import closed_groups, groups_from_end, outermost_groups
from scoring._numbers import (
    BARE_NUMBER,
    CLASS_OF,
    NUMBER_FIRST,
    NUMBER_LAST,
    SEPARATOR,
    SEPARATOR_OR_BRACKET,
    last_list,
    list_numbers,
)
from scoring._pairs import last_pair

# A number standing apart from letters and points (a full stop may follow it).
_NUMBER_PATTERN = rf"(?<![\w.]){BARE_NUMBER}(?!\w|\.[0-9])"
_SPLIT = re.compile(rf"{SEPARATOR_OR_BRACKET}+")
_NOT_INTEGER = re.compile(r"[.eE]")


def _on_bytes(pattern: str) -> re.Pattern[bytes]:
    # The patterns run on text made one byte a character by ``_bytes_alike``.
    return re.compile(pattern.encode("ascii"))


_SEPARATORS = _on_bytes(rf"{SEPARATOR}+")
_SPLIT_BYTES = _on_bytes(rf"{SEPARATOR_OR_BRACKET}+")
# The characters of numbers: digits, signs, points, exponents, nan / inf / infinity.
_NUMBER_CHARACTER = r"[0-9+\-.eEnNaAiIfFtTyY]"
_NUMBER_CHARACTERS = _on_bytes(rf"{_NUMBER_CHARACTER}*")
# What lies between a window's left edge and the run found in it when the run reaches past the
# edge: the end of a number the edge cut, and separators. Anything else, and the run is whole.
_MAY_BE_CUT = _on_bytes(rf"{_NUMBER_CHARACTER}*{SEPARATOR}*")
# Every number holds one of these.
_IN_EVERY_NUMBER = [bytes([char]) for char in b"0123456789nNiI"]
_TAIL = 4096  # characters of the first window a run is looked for in
_ONE_MORE = _on_bytes(rf"{SEPARATOR}+{_NUMBER_PATTERN}")


@dataclass(frozen=True, slots=True)
class ParsedList:
    """The numbers of the list an answer was judged by.

    Attributes
    ----------
    values
        The list's values, in order, all finite.
    integers
        Every token is an integer literal (``[+-]?[0-9]+``; no decimal point or exponent).
    in_range
        Every value lies in ``0..999``.
    """

    values: tuple[float, ...]
    integers: bool
    in_range: bool


def parse_list(text: str, count: int) -> ParsedList | None:
    """The last explicit or bracketed list of ``text`` if it has exactly ``count`` finite values.

    >>> parse_list("first [1, 2] then 3 4 5 6", 4).values
    (3.0, 4.0, 5.0, 6.0)
    >>> parse_list("3 4 5 6 then [1, 2]", 4) is None
    True
    """
    found = _last_list(text, count)
    if found is None or found[2] != count:
        return None
    span = text[found[0] : found[1]]
    values = tuple(map(float, _tokens(span)))
    if not all(map(math.isfinite, values)):
        return None
    return ParsedList(
        values=values,
        # The span holds only tokens, separators and brackets, so a decimal point or an
        # exponent anywhere in it belongs to a token that is no integer literal.
        integers=_NOT_INTEGER.search(span) is None,
        in_range=min(values) >= 0.0 and max(values) <= 999.0,
    )


def parse_answer(text: str, n: int) -> list[tuple[float, float]] | None:
    """The ``n`` ``(x, y)`` vertices of a polygon answer in its own 0–999 units, or ``None``.

    >>> parse_answer("Here: 10 20 30 40 50 60", 3)
    [(10.0, 20.0), (30.0, 40.0), (50.0, 60.0)]
    >>> parse_answer("[[10, 20], [30, 40], [50, 60]]", 3)
    [(10.0, 20.0), (30.0, 40.0), (50.0, 60.0)]
    >>> parse_answer("(10, 20), (30, 40), (50, nan)", 3) is None
    True
    >>> parse_answer("I used 3 points.", 3) is None
    True
    """
    parsed = parse_list(text, 2 * n)
    if parsed is None:
        return None
    v = parsed.values
    return list(zip(v[0::2], v[1::2], strict=True))


def parse_box(text: str) -> tuple[float, float, float, float] | None:
    """The ``x1 y1 x2 y2`` of a box answer in its own 0–999 units, or ``None``.

    >>> parse_box("The box is [12, 40, 300, 512].")
    (12.0, 40.0, 300.0, 512.0)
    """
    parsed = parse_list(text, 4)
    if parsed is None:
        return None
    x1, y1, x2, y2 = parsed.values
    return (x1, y1, x2, y2)


def _last_list(text: str, count: int) -> tuple[int, int, int] | None:
    """``(start, end, numbers)`` of the list that ends last in ``text``, if there is one (a
    count above ``count`` may be cut at ``count + 1``)."""
    blotted = _bytes_alike(text)
    groups = closed_groups(blotted)  # and every group written over
    if groups is None:  # a "[" is never closed: written over in part, read again
        del blotted  # first, so that there is one copy at a time
        blotted = _bytes_alike(text)
        groups = outermost_groups(blotted)
    # Explicit runs lie between groups: one search over the text with every group blotted out
    # finds the last, and only the groups that end after it can still be the last list.
    run = _last_run(blotted, count)
    del blotted  # the groups are read from the text again, a window at a time
    after = -1 if run is None else run[1]
    for starts, ends in groups_from_end(groups, len(text)):
        early = int(np.searchsorted(ends, after, side="right"))  # groups ending by the run's end
        found = _last_list_group(text, starts[early:], ends[early:], count)
        if found is not None:
            return found
        if early:  # the rest end before the run
            break
    return run


def _last_list_group(
    text: str, starts: np.ndarray, ends: np.ndarray, count: int
) -> tuple[int, int, int] | None:
    """``(start, end, numbers)`` of the content of the last of these outermost groups (in
    order) that is a bracketed list, its numbers counted up to ``count + 1``. One group is
    read a piece at a time; of several, those whose first and last characters could not begin
    and end a list's content are passed over, and the rest read at once (``last_list``)."""
    if starts.size == 0:
        return None
    if starts.size == 1:  # perhaps of millions of characters
        start, end = int(starts[0]) + 1, int(ends[0]) - 1
        numbers = list_numbers(functools.partial(_classes_between, text), start, end)
        return (start, end, min(numbers, count + 1)) if numbers else None
    low = int(starts[0])
    classes = _classes_between(text, low, int(ends[-1]))
    kinds = np.frombuffer(classes, np.uint8)
    # Each group's first and last characters' classes, as one index (a class is below 16).
    bounds = np.take(kinds, starts + (1 - low)) << 4
    bounds |= np.take(kinds, ends - (2 + low))
    plausible = np.take(_MAY_BOUND_CONTENT, bounds)
    starts, ends = starts[plausible] - low, ends[plausible] - low
    found = last_list(classes, starts, ends) if starts.size else None
    if found is None:
        return None
    k, numbers = found
    return low + int(starts[k]) + 1, low + int(ends[k]) - 1, min(numbers, count + 1)


def _classes_between(text: str, low: int, high: int) -> bytes:
    """The classes of ``text[low:high]`` for the number syntax (``scoring._numbers``), one
    byte a character."""
    piece = text[low:high]
    try:
        return piece.encode("latin-1").translate(_LATIN_1_CLASS)
    except UnicodeEncodeError:  # a space stays a space, any other wide character is no class
        return bytes(_bytes_alike(piece)).translate(CLASS_OF)


def _class_set(*patterns: str) -> np.ndarray:
    """For each class, whether one of the character classes ``patterns`` matches its
    characters."""
    matches = [_on_bytes(pattern) for pattern in patterns]
    table = np.zeros(16, np.bool_)  # classes are below 16
    for code in range(256):
        if any(m.fullmatch(bytes([code])) for m in matches):
            table[CLASS_OF[code]] = True
    return table


# A list's content begins with a separator, a bracket or a number's first character, and ends
# with one or a number's last.
_MAY_BOUND_CONTENT = np.logical_and.outer(
    _class_set(SEPARATOR_OR_BRACKET, NUMBER_FIRST),  # first class << 4 | last class
    _class_set(SEPARATOR_OR_BRACKET, NUMBER_LAST),
).ravel()


def _bytes_alike(text: str) -> bytearray:
    """``text`` one byte a character, each byte in the same classes as its character for every
    pattern here (space, word character, digit, the list alphabet): offsets stay offsets, and
    the patterns run on bytes, where numpy can read them too. Made a chunk at a time, so that
    it is the only copy."""
    alike = bytearray(len(text))
    for low in range(0, len(text), _ALIKE_CHUNK):
        piece = text[low : low + _ALIKE_CHUNK]
        try:
            narrow = piece.encode("latin-1")
        except UnicodeEncodeError:
            piece = _WIDE_WORD.sub("_", _WIDE_SPACE.sub(" ", piece))
            narrow = piece.encode("latin-1", "replace")  # what is left is neither: "?"
        if not _is_own_alike(piece, narrow):
            narrow = narrow.translate(_LATIN_1_ALIKE)
        alike[low : low + len(narrow)] = narrow
    return alike


_ALIKE_CHUNK = 1 << 18


def _is_own_alike(piece: str, narrow: bytes) -> bool:
    """Whether ``narrow`` (``piece`` one byte a character) is already its own alike: ASCII (a
    flag CPython keeps) with none of the four separators only str patterns take for spaces
    (each looked for at memchr speed, cheaper than translating)."""
    return piece.isascii() and not any(space in narrow for space in _ASCII_STR_SPACES)


def _latin_1_alike() -> bytes:
    """For each Latin-1 character, an ASCII byte in the same classes for str patterns as the
    character is (a bytes pattern's ``\\s`` and ``\\w`` are ASCII only)."""
    table = bytearray(range(256))
    for code in range(256):
        char = chr(code)
        if re.fullmatch(r"\s", char) and not re.fullmatch(rb"\s", bytes([code])):
            table[code] = ord(" ")
        elif re.fullmatch(r"\w", char) and not re.fullmatch(rb"\w", bytes([code])):
            table[code] = ord("_")
    return bytes(table)


_LATIN_1_ALIKE = _latin_1_alike()
_ASCII_STR_SPACES = [bytes([code]) for code in range(128) if _LATIN_1_ALIKE[code] != code]
_LATIN_1_CLASS = _LATIN_1_ALIKE.translate(CLASS_OF)
_WIDE_SPACE = re.compile(r"[^\S\x00-\xff]")
_WIDE_WORD = re.compile(r"[^\W\x00-\xff]")


def _last_run(text: bytes | bytearray, count: int) -> tuple[int, int, int] | None:
    """``(start, end, numbers)`` of the last explicit run in ``text``, numbers cut at
    ``count + 1``.

    Every run ends with a pair of number-like tokens apart, which a cheap search finds from
    the end (``last_pair``); the run is looked for in a window ending at such a pair, four
    times wider at each look. While the run found there could reach past the window's left
    edge (and is not yet too long), the window widens; where it holds no run, the next look
    ends at the last pair that could still belong to one (one that reaches back past the
    edge, or one before it), so that a stretch of no pairs is crossed by the cheap search."""
    if not _holds_a_number(text):
        return None
    before, width = len(text), _TAIL
    while (later := last_pair(text, before)) is not None:  # where the later token starts
        end = _pair_end(text, later)
        while True:
            low = max(0, end - width)
            found = _last_run_between(text, low, end, count)
            width *= 4
            if found is None:
                break
            if low == 0 or found[2] > count or not _may_be_cut(text, low, found[0]):
                return found
        if low == 0:
            return None
        # A run with a pair in the window would have been found: the last one left has its
        # earlier token before the edge, and its later one no further than the end of a
        # number the edge cut, and separators. This pair may be that one, with a wider look.
        reach = _MAY_BE_CUT.match(text, low)
        before = min(later + 1, low + len(reach[0]) + 1)  # type: ignore[index]  # matches empty
    return None


def _holds_a_number(text: bytes | bytearray) -> bool:
    """Whether ``text`` holds a character every number holds: known at memchr speed, a chunk at
    a time, so that one found early ends the search."""
    pieces = (text[low : low + _ALIKE_CHUNK] for low in range(0, len(text), _ALIKE_CHUNK))
    return any(char in piece for piece in pieces for char in _IN_EVERY_NUMBER)


def _pair_end(text: bytes | bytearray, later: int) -> int:
    """Where a run looked for up to the pair whose later token starts at ``later`` ends."""
    later += len(_NUMBER_CHARACTERS.match(text, later)[0])  # type: ignore[index]  # matches empty
    # One character more, so that the look-ahead of a number ending there (no word character,
    # no point and digit after it) sees it. It is no character of a number, so no number is
    # cut: a wider end could cut one, which the look-ahead would then take for whole.
    return min(len(text), later + 1)


def _may_be_cut(text: bytes | bytearray, low: int, start: int) -> bool:
    """Whether a run found at ``start`` in a window from ``low`` may reach past the window."""
    return _MAY_BE_CUT.fullmatch(text, low, start) is not None


def _last_run_between(
    text: bytes | bytearray, low: int, end: int, count: int
) -> tuple[int, int, int] | None:
    """The last run of two or more numbers in ``text[low:end]``, matched in pieces of up to
    ``count + 1`` numbers by the regex engine, which keeps only the last two: a piece is
    followed by more of its run only when it is full, so a run of two pieces is too long
    already (and is then known by its end, its start being of no use)."""
    last = collections.deque(_pieces(count).finditer(text, low, end), maxlen=2)
    if not last:
        return None
    piece = last[-1]
    run = (piece.start(), piece.end(), _count_tokens(piece.group()))
    if len(last) == 2 and _SEPARATORS.fullmatch(text, last[0].end(), piece.start()):
        run = (last[0].start(), piece.end(), count + 1)
    # Pieces hold two numbers or more: a run's one number left over after its last full
    # piece is matched here.
    leftover = _ONE_MORE.match(text, run[1], end)
    if leftover is not None:
        run = (run[0], leftover.end(), min(run[2] + 1, count + 1))
    return run


@functools.lru_cache(maxsize=64)
def _pieces(count: int) -> re.Pattern[bytes]:
    """Two to ``count + 1`` numbers apart: a longer run is several pieces with only separators
    between them, so no match (and no memory of the regex engine) grows with the run."""
    return _on_bytes(rf"{_NUMBER_PATTERN}(?:{SEPARATOR}+{_NUMBER_PATTERN}){{1,{count}}}")


def _tokens(span: str) -> list[str]:
    # A matched list holds only numbers and separators: splitting is tokenising, and much
    # cheaper than matching numbers again with their look-arounds.
    return [t for t in _SPLIT.split(span) if t]


def _count_tokens(span: bytes) -> int:
    return sum(1 for t in _SPLIT_BYTES.split(span) if t)
