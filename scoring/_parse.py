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
chunks, windows and the few candidates met from the end, and memory is a few copies of the
answer:

- the text is read one byte a character, each byte in the same classes as its character, so
  that offsets stay offsets and numpy can read what the patterns read;
- brackets are paired with numpy in chunks (``scoring._brackets``), and every outermost group
  is blotted out of a copy of the text;
- the last explicit run is looked for in that copy, only up to the last pair of number-like
  tokens (a cheap pattern, searched backwards), in a window at the end widened only while the
  run found could reach further left; it is matched in pieces of at most ``count + 1``
  numbers, so a run of millions of numbers is known to be too long without being matched
  whole;
- the groups after it are taken from the end in widening windows, sifted with numpy (nothing
  outside the list alphabet, something a number starts with), and checked by deleting their
  numbers (one ``subn``) and looking at what is left.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass

import numpy as np

from scoring._brackets import CHUNK, groups_from_end, outermost_groups

_NUMBER_PATTERN = (
    r"(?<![\w.])[+-]?(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
    r"|(?:[nN][aA][nN]|[iI][nN][fF](?:[iI][nN][iI][tT][yY])?))(?!\w|\.[0-9])"
)
_SEPARATOR = r"[\s,;()]"
_SEPARATOR_OR_BRACKET = r"[\s,;()\[\]]"
_SPLIT = re.compile(rf"{_SEPARATOR_OR_BRACKET}+")
_NOT_INTEGER = re.compile(r"[.eE]")
# A number standing between separators or brackets, for a bracketed list's content: there its
# look-arounds hold by construction.
_BARE_NUMBER = (
    r"[+-]?(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
    r"|(?:[nN][aA][nN]|[iI][nN][fF](?:[iI][nN][iI][tT][yY])?))"
)


def _on_bytes(pattern: str) -> re.Pattern[bytes]:
    # The patterns run on text made one byte a character by ``_bytes_alike``.
    return re.compile(pattern.encode("ascii"))


_DELIMITED_NUMBER = _on_bytes(rf"(?<![^\s,;()\[\]]){_BARE_NUMBER}(?![^\s,;()\[\]])")
_SEPARATORS_OR_BRACKETS = _on_bytes(rf"{_SEPARATOR_OR_BRACKET}*")
_SEPARATORS = _on_bytes(rf"{_SEPARATOR}+")
_SPLIT_BYTES = _on_bytes(rf"{_SEPARATOR_OR_BRACKET}+")
# A character no explicit run can hold (runs are digits, signs, points, exponents, nan / inf /
# infinity and separators): a run found after one is whole.
_LIST_ALPHABET = r"\s,;()0-9+\-.eEnNaAiIfFtTyY"
_STOPPER = _on_bytes(rf"[^{_LIST_ALPHABET}]")
_NUMBER_CHARACTERS = _on_bytes(r"[0-9+\-.eEnNaAiIfFtTyY]*")
# Two number-like tokens apart, read backwards: the first character of the later one
# (a sign, digit, point, n or i), separators, the last character of the earlier one (a digit,
# point, or the n, f or y of nan, inf, infinity). Every run holds one; a cheap pattern finds it.
_PAIR_BACKWARDS = _on_bytes(rf"[+\-0-9.nNiI]{_SEPARATOR}+[0-9.nNfFyY]")
_TAIL = 4096  # characters of the first window a run is looked for in
_ONE_MORE = _on_bytes(rf"{_SEPARATOR}+{_NUMBER_PATTERN}")


def _byte_table(pattern: str) -> np.ndarray:
    """1 for each byte the character class ``pattern`` matches, as a numpy lookup table."""
    matches = re.compile(pattern.encode("ascii"))
    return np.array([matches.fullmatch(bytes([b])) is not None for b in range(256)], np.uint8)


_FOREIGN = _byte_table(rf"[^{_LIST_ALPHABET}\[\]]")  # can be in no bracketed list
_STARTS_NUMBER = _byte_table(r"[0-9nNiI]")  # every number holds one


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
    alike = _bytes_alike(text)
    codes = np.frombuffer(alike, np.uint8)
    groups = outermost_groups(alike)
    # Explicit runs lie between groups: one search over the text with every group blotted out
    # finds the last, and only the groups that end after it can still be the last list.
    run = _last_run(groups.blotted, count)
    after = -1 if run is None else run[1]
    for starts, ends in groups_from_end(groups, codes.size):
        late = ends > after
        opens, closes = starts[late], ends[late]
        for k in _maybe_lists(codes, opens, closes):
            start, end = int(opens[k]) + 1, int(closes[k]) - 1
            numbers = _list_numbers(alike[start:end])
            # A group with no number (a Markdown "[ ]", a "[sic]") is no list (decided).
            if numbers:
                return start, end, numbers
        if opens.size < starts.size:  # the rest end before the run
            break
    return run


def _bytes_alike(text: str) -> bytes:
    """``text`` one byte a character, each byte in the same classes as its character for every
    pattern here (space, word character, digit, the list alphabet): offsets stay offsets, and
    the patterns run on bytes, where numpy can read them too."""
    try:
        narrow = text.encode("latin-1")
    except UnicodeEncodeError:
        text = _WIDE_SPACE.sub(" ", text)
        text = _WIDE_WORD.sub("_", text)
        narrow = text.encode("latin-1", "replace")  # what is left is neither: "?"
    return narrow.translate(_LATIN_1_ALIKE)


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
_WIDE_SPACE = re.compile(r"[^\S\x00-\xff]")
_WIDE_WORD = re.compile(r"[^\W\x00-\xff]")


def _list_numbers(content: bytes) -> int:
    """How many numbers a bracketed list's content holds; 0 if it is no list (anything but
    numbers, separators and brackets, or numbers not apart)."""
    rest, numbers = _DELIMITED_NUMBER.subn(b" ", content)
    return numbers if numbers and _SEPARATORS_OR_BRACKETS.fullmatch(rest) else 0


def _maybe_lists(codes: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> list[int]:
    """Indices of the groups that may be lists, the last first: their content holds nothing
    outside the list alphabet and a character a number can start with. The others need no
    look; these are checked exactly."""
    if starts.size == 0:
        return []
    if starts.size == 1:  # one group, perhaps of millions of characters: in chunks
        pieces = range(int(starts[0]) + 1, int(ends[0]) - 1, CHUNK)
        inner = [codes[p : min(p + CHUNK, int(ends[0]) - 1)] for p in pieces]
        clean = not any(_FOREIGN[piece].any() for piece in inner)
        return [0] if clean and any(_STARTS_NUMBER[piece].any() for piece in inner) else []
    # Several groups within one window: counts up to each offset, read at each "[" and "]".
    region = codes[starts[0] : ends[-1]]
    if not _STARTS_NUMBER[region].any():  # the usual window of a text of no lists: no digit
        return []
    first, last = starts - starts[0], ends - 1 - starts[0]
    foreign = np.cumsum(_FOREIGN[region], dtype=np.int32)
    clean = foreign[last] == foreign[first]
    del foreign
    begins = np.cumsum(_STARTS_NUMBER[region], dtype=np.int32)
    maybe: list[int] = np.flatnonzero(clean & (begins[last] > begins[first]))[::-1].tolist()
    return maybe


def _last_run(text: bytes | bytearray, count: int) -> tuple[int, int, int] | None:
    """``(start, end, numbers)`` of the last explicit run in ``text``, numbers cut at
    ``count + 1``. Only what ends by the last pair of number-like tokens apart is searched
    (found by a cheap pattern, backwards); within that, a window at the end, widened while the
    run found could reach further left (no character before it in the window stops a run,
    and it is not yet known to be too long)."""
    pair = _PAIR_BACKWARDS.search(text[::-1])
    if pair is None:
        return None
    later = len(text) - pair.start() - 1  # where the later token starts
    later += len(_NUMBER_CHARACTERS.match(text, later)[0])  # type: ignore[index]  # matches empty
    # Two characters more, so that the number's look-ahead (no word character, no point and
    # digit after it) sees what follows it; they cannot hold another pair.
    end = min(len(text), later + 2)
    width = _TAIL
    while True:
        low = max(0, end - width)
        found = _last_run_between(text, low, end, count)
        if low == 0:
            return found
        if found is not None and (found[2] > count or _STOPPER.search(text, low, found[0])):
            return found
        width *= 4


def _last_run_between(
    text: bytes | bytearray, low: int, end: int, count: int
) -> tuple[int, int, int] | None:
    """The last run of two or more numbers in ``text[low:end]``, matched piece by piece (a
    lone number is skipped by the regex engine, not by a Python loop)."""
    chain: tuple[int, int, int] | None = None  # the run being followed
    for piece in _pieces(count).finditer(text, low, end):
        numbers = _count_tokens(piece.group())
        if chain is not None and _SEPARATORS.fullmatch(text, chain[1], piece.start()):
            chain = (chain[0], piece.end(), min(chain[2] + numbers, count + 1))
        else:
            chain = (piece.start(), piece.end(), numbers)
    if chain is None:
        return None
    # Pieces hold two numbers or more: a run's one number left over after its last full
    # piece is matched here.
    leftover = _ONE_MORE.match(text, chain[1], end)
    if leftover is not None:
        chain = (chain[0], leftover.end(), min(chain[2] + 1, count + 1))
    return chain


@functools.lru_cache(maxsize=64)
def _pieces(count: int) -> re.Pattern[bytes]:
    """Two to ``count + 1`` numbers apart: a longer run is several pieces with only separators
    between them, so no match (and no memory of the regex engine) grows with the run."""
    return _on_bytes(rf"{_NUMBER_PATTERN}(?:{_SEPARATOR}+{_NUMBER_PATTERN}){{1,{count}}}")


def _tokens(span: str) -> list[str]:
    # A matched list holds only numbers and separators: splitting is tokenising, and much
    # cheaper than matching numbers again with their look-arounds.
    return [t for t in _SPLIT.split(span) if t]


def _count_tokens(span: bytes) -> int:
    return sum(1 for t in _SPLIT_BYTES.split(span) if t)
