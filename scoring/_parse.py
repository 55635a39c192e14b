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
``2.5.``). Every step is a regular expression run in C or a numpy pass; there is no
per-character Python loop, and no step holds more than a few copies of the answer:

- the last explicit run is looked for in a window at the end of the text, widened only while
  the run found could reach further left; it is matched in pieces of at most ``count + 1``
  numbers, so a run of millions of numbers is known to be too long without being matched whole;
- a bracketed list is checked by deleting its numbers (one ``subn``) and looking at what is left;
- brackets are paired with numpy (a depth that never falls below zero), not a Python stack.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass

import numpy as np

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
_DELIMITED_NUMBER = re.compile(rf"(?<![^\s,;()\[\]]){_BARE_NUMBER}(?![^\s,;()\[\]])")
_SEPARATORS_OR_BRACKETS = re.compile(rf"{_SEPARATOR_OR_BRACKET}*")
_SEPARATORS = re.compile(rf"{_SEPARATOR}+")
# A character no explicit run can hold (runs are digits, signs, points, exponents, nan / inf /
# infinity and separators): a run found after one is whole.
_STOPPER = re.compile(r"[^\s,;()0-9+\-.eEnNaAiIfFtTyY]")
_TAIL = 4096  # characters of the first window a run is looked for in
_ONE_MORE = re.compile(rf"{_SEPARATOR}+{_NUMBER_PATTERN}")


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
    if found is None or found[1] != count:
        return None
    span = found[0]
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


def _last_list(text: str, count: int) -> tuple[str, int] | None:
    """The text and number count of the list that ends last in ``text``, if there is one
    (a count above ``count`` may be cut at ``count + 1``)."""
    groups = _outermost_groups(text)
    # Walk backwards over the alternation segment, group, segment, …, group, segment: the last
    # explicit run of a segment ends after every group before it and before every group after.
    ends = [g[0] for g in groups] + [len(text)]
    starts = [0] + [g[1] for g in groups]
    for k in range(len(groups), -1, -1):
        if starts[k] < ends[k]:
            run = _last_run(text, starts[k], ends[k], count)
            if run is not None:
                start, end, numbers = run
                return text[start:end], numbers
        if k > 0:
            open_at, close_end = groups[k - 1]
            content = text[open_at + 1 : close_end - 1]
            numbers = _list_numbers(content)
            # A group with no number (a Markdown "[ ]", a "[sic]") is no list (decided).
            if numbers:
                return content, numbers
    return None


def _list_numbers(content: str) -> int:
    """How many numbers a bracketed list's content holds; 0 if it is no list (anything but
    numbers, separators and brackets, or numbers not apart)."""
    rest, numbers = _DELIMITED_NUMBER.subn(" ", content)
    return numbers if numbers and _SEPARATORS_OR_BRACKETS.fullmatch(rest) else 0


def _last_run(text: str, start: int, end: int, count: int) -> tuple[int, int, int] | None:
    """``(start, end, numbers)`` of the last explicit run in ``text[start:end]``, numbers cut
    at ``count + 1``. Looked for in a window at the end, widened while the run found could
    reach further left (no character before it in the window stops a run, and it is not yet
    known to be too long)."""
    width = _TAIL
    while True:
        low = max(start, end - width)
        found = _last_run_between(text, low, end, count)
        if low == start:
            return found
        if found is not None and (found[2] > count or _STOPPER.search(text, low, found[0])):
            return found
        width *= 4


def _last_run_between(text: str, low: int, end: int, count: int) -> tuple[int, int, int] | None:
    """The last run of two or more numbers in ``text[low:end]``, matched piece by piece (a
    lone number is skipped by the regex engine, not by a Python loop)."""
    chain: tuple[int, int, int] | None = None  # the run being followed
    for piece in _pieces(count).finditer(text, low, end):
        numbers = len(_tokens(piece.group()))
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
def _pieces(count: int) -> re.Pattern[str]:
    """Two to ``count + 1`` numbers apart: a longer run is several pieces with only separators
    between them, so no match (and no memory of the regex engine) grows with the run."""
    return re.compile(rf"{_NUMBER_PATTERN}(?:{_SEPARATOR}+{_NUMBER_PATTERN}){{1,{count}}}")


def _tokens(span: str) -> list[str]:
    # A matched list holds only numbers and separators: splitting is tokenising, and much
    # cheaper than matching numbers again with their look-arounds.
    return [t for t in _SPLIT.split(span) if t]


def _outermost_groups(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` spans of the outermost matched ``[...]`` groups, in order.

    A ``]`` with no open ``[`` and a ``[`` never closed are ordinary characters; the groups
    matched inside a never-closed ``[`` are then outermost themselves.
    """
    # One byte a character (anything past Latin-1 becomes "?"), so byte offsets are offsets.
    codes = np.frombuffer(text.encode("latin-1", "replace"), np.uint8)
    at = np.flatnonzero((codes == 0x5B) | (codes == 0x5D)).astype(np.int32)  # texts < 2 GB
    if at.size == 0:
        return []
    step = (codes[at] == 0x5B).astype(np.int8) * np.int8(2) - np.int8(1)
    del codes
    # A "]" with nothing open is ordinary: the depth is the running sum reflected at zero
    # (Skorokhod's formula), and a "]" met at depth zero is dropped.
    depth = np.cumsum(step, dtype=np.int32)
    depth -= np.minimum(np.minimum.accumulate(depth), 0)
    kept = step == 1
    kept[1:] |= depth[:-1] > 0
    del depth
    at, step = at[kept], step[kept]
    if at.size == 0:
        return []
    # A "[" is closed when the depth later falls below the depth it opened: else ordinary.
    level = np.cumsum(step, dtype=np.int32)
    lowest_after = np.empty_like(level)
    lowest_after[:-1] = np.minimum.accumulate(level[::-1])[::-1][1:]
    lowest_after[-1] = level.size
    kept = (step == -1) | (lowest_after < level)
    del level, lowest_after
    at, step = at[kept], step[kept]
    level = np.cumsum(step, dtype=np.int32)  # every bracket paired: outermost open at 1, close at 0
    opens = at[(step == 1) & (level == 1)]
    closes = at[(step == -1) & (level == 0)] + 1
    return list(zip(opens.tolist(), closes.tolist(), strict=True))
