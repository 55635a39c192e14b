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
``2.5.``). Every step is a regular expression run in C; there is no
per-character Python loop, so a 1 MB answer is scanned in milliseconds.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

_NUMBER_PATTERN = (
    r"(?<![\w.])[+-]?(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
    r"|(?:[nN][aA][nN]|[iI][nN][fF](?:[iI][nN][iI][tT][yY])?))(?!\w|\.[0-9])"
)
_SEPARATOR = r"[\s,;()]"
_SEPARATOR_OR_BRACKET = r"[\s,;()\[\]]"
_EXPLICIT_RUN = re.compile(rf"{_NUMBER_PATTERN}(?:{_SEPARATOR}+{_NUMBER_PATTERN})+")
# The content of a bracketed list: at least one number, numbers apart, nothing else.
_BRACKET_CONTENT = re.compile(
    rf"{_SEPARATOR_OR_BRACKET}*{_NUMBER_PATTERN}"
    rf"(?:{_SEPARATOR_OR_BRACKET}+{_NUMBER_PATTERN})*{_SEPARATOR_OR_BRACKET}*"
)
_SPLIT = re.compile(rf"{_SEPARATOR_OR_BRACKET}+")
_BRACKET = re.compile(r"[\[\]]")
_NOT_INTEGER = re.compile(r"[.eE]")


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
    found = _last_list(text)
    if found is None:
        return None
    span, tokens = found
    if len(tokens) != count:
        return None
    values = tuple(map(float, tokens))
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


def _last_list(text: str) -> tuple[str, list[str]] | None:
    """The text and number tokens of the list that ends last in ``text``, if there is one."""
    groups = _outermost_groups(text)
    # Walk backwards over the alternation segment, group, segment, …, group, segment: the last
    # explicit run of a segment ends after every group before it and before every group after.
    ends = [g[0] for g in groups] + [len(text)]
    starts = [0] + [g[1] for g in groups]
    for k in range(len(groups), -1, -1):
        runs = _EXPLICIT_RUN.findall(text, starts[k], ends[k]) if starts[k] < ends[k] else []
        if runs:
            return runs[-1], _tokens(runs[-1])
        if k > 0:
            open_at, close_end = groups[k - 1]
            content = text[open_at + 1 : close_end - 1]
            # A group with no number (a Markdown "[ ]", a "[sic]") is no list (decided).
            if _BRACKET_CONTENT.fullmatch(content):
                return content, _tokens(content)
    return None


def _tokens(span: str) -> list[str]:
    # A matched list holds only numbers and separators: splitting is tokenising, and much
    # cheaper than matching numbers again with their look-arounds.
    return [t for t in _SPLIT.split(span) if t]


def _outermost_groups(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` spans of the outermost matched ``[...]`` groups, in order.

    A ``]`` with no open ``[`` and a ``[`` never closed are ordinary characters; the groups
    matched inside a never-closed ``[`` are then outermost themselves.
    """
    stack: list[int] = []
    pairs: list[tuple[int, int]] = []
    for m in _BRACKET.finditer(text):
        if m.group() == "[":
            stack.append(m.start())
        elif stack:
            pairs.append((stack.pop(), m.end()))
    pairs.sort()
    outer: list[tuple[int, int]] = []
    for start, end in pairs:
        if not outer or start >= outer[-1][1]:
            outer.append((start, end))
    return outer
