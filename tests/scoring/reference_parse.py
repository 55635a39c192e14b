"""The answer parser as it was before issue 19: a few regular expressions over the whole text.

Kept as the oracle the bounded parser (``scoring/_parse.py``) is checked against: the two must
give the same result on every text. It is correct and simple, but a run of millions of numbers
is matched whole (gigabytes inside the regex engine) and brackets are paired in a Python loop.
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
    """The last explicit or bracketed list of ``text`` if it has exactly ``count`` finite values."""
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
