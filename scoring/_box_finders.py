"""Which box an answer gives, as each box benchmark's released code finds it (PROTOCOL §10).

A finder, the first step of a :class:`~scoring.BoxReader`, turns an answer's text into the four
numbers it writes, in the answer's own units, or None when it finds none. Each follows one
released file line by line — what it searches, what it accepts as a number, which match wins —
and never raises, whatever the text: where the released code gives up (an exception it catches)
the finder does the same, and where the released code would crash (an exception it lets
through) the finder goes on as if that step had found no box.

Deliberate departures from the released code, the same in every finder (PROTOCOL §10):

- a JSON ``true``/``false`` is not a number (Python's ``isinstance(True, int)`` made Ref-Adv's and
  RefBench-PRO's code read it as 1/0, GroundingME's ``float(True)`` likewise);
- JSON nested deeper than :data:`MAX_DEPTH` is unreadable (there, the interpreter's stack decides);
- a box is returned with whatever values it has, non-finite ones included: what a non-finite
  coordinate means is the judge's rule, not the finder's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import Any, Literal

from scoring._json_tail import only_start
from scoring._parse import parse_box

Box = tuple[float, float, float, float]
# A reader is named after the benchmark whose released code it follows ("groundbench": §4's).
ReaderName = Literal["groundbench", "ref-adv", "groundingme", "refbench-pro"]

ZERO: Box = (0.0, 0.0, 0.0, 0.0)

# Ref-Adv (run.py: FENCE_RE, _load_last_json_candidate, _collect_boxes). FENCE_RE is
# r"```(?:json)?\s*(.*?)```"; here "json" and the spaces are taken whole (possessive), which
# finds the same blocks: a block not found with them is not found with fewer, since no "```"
# can begin among them. Without, a fence and a long run of spaces were tried once for each
# length of the run, a scan of the rest of the answer each time (issue 37).
_FENCED = re.compile(r"```(?:json)?+\s*+(.*?)```", re.DOTALL | re.IGNORECASE)
_BOX_KEYS = ("bboxes", "boxes", "bbox", "bbox_2d", "predictions", "results", "objects",
             "coordinates")  # fmt: skip
# GroundingME (evaluate.py: parse_bbox): r"\{.*\"bbox_2d\".*\}" (DOTALL) searched, greedy —
# from the first "{" to the last "}" with '"bbox_2d"' between them (``_bbox_object``).
_BBOX_KEY = '"bbox_2d"'
# evaluate.py's run of four numbers, r"(-?\d+(?:\.\d+)?)" + r"[\s,]+(-?\d+(?:\.\d+)?)" * 3,
# with its numbers and separators taken whole (possessive) and no run begun inside a run of
# digits. Neither changes a match: after a number or separators the pattern needs a character
# that cannot continue them, so only the longest can be followed; and a run begun inside digits
# fails wherever one begun at their first digit failed. Without, a run of digits was tried
# from each of its digits and each length of it (issue 37).
_NUMBER = r"\d++(?:\.\d++)?+"
_FOUR_NUMBERS = re.compile(rf"((?:-|(?<!\d)){_NUMBER})" + rf"[\s,]++(-?{_NUMBER})" * 3)
# RefBench-PRO (eval_qwen3vl.py: extract_bbox_from_response): r"\[(.*?)\]" found all, no DOTALL,
# so within one line — Qwen's multi-line ``[\n {"bbox_2d": [x1, y1, x2, y2], …}\n]`` yields
# the inner list. A match is a "[" and the text up to the first "]" after it on its line, so
# ``_BRACKETED`` takes the same stretches (one with no "]" on its line is taken to the line's
# end, where r"\[(.*?)\]" tried each "[" in it and scanned the rest of the line each time,
# issue 37), and captures a content only if it is four fields ``float()`` reads apart (below):
# the only contents ``_bracket_box`` reads a box from, its JSON numbers among them.
_SPACE = r"[^\S\n]*"  # str.strip()'s and float()'s whitespace, a line's
_DIGITS = r"\d(?:_?\d)*"  # float(): Unicode decimal digits, an underscore between two
_FLOAT = (
    rf"{_SPACE}[+-]?(?:[nN][aA][nN]|[iI][nN][fF](?:[iI][nN][iI][tT][yY])?"
    rf"|(?:{_DIGITS}(?:\.(?:{_DIGITS})?)?|\.{_DIGITS})(?:[eE][+-]?{_DIGITS})?){_SPACE}"
)
_BRACKETED = re.compile(rf"\[(?:((?>{_FLOAT}),(?>{_FLOAT}),(?>{_FLOAT}),(?>{_FLOAT}))\]"
                        r"|[^\]\n]*+\]?)")  # fmt: skip

# What the JSON decoder and float() raise on text that is no number or no JSON: a syntax error
# or a number of over 4,300 digits (ValueError), nesting deeper than the interpreter allows
# (RecursionError), an integer too large for a float (OverflowError).
_UNREADABLE = (ValueError, TypeError, KeyError, RecursionError, OverflowError)
# JSON nested deeper than this is unreadable (decided, §10). The released code's limit is the
# interpreter's recursion limit — about 990 levels from the top of a script, fewer from deeper
# in a program — so where it falls depends on the caller; a fixed bound, far enough below it
# that the decoder never reaches it first, makes an answer read the same from a test, the CLI
# or a Ray actor.
MAX_DEPTH = 500


class _TooDeep(ValueError):
    """A JSON value nested deeper than :data:`MAX_DEPTH`."""


def find_box(text: str, parsing: ReaderName) -> Box | None:
    """The box an answer gives, in its own units, as ``parsing`` reads it; None if none.

    - ``groundbench``: the last list of exactly 4 values (PROTOCOL §4);
    - ``ref-adv``: the last fenced block that is JSON, else a JSON value that ends the answer;
      the first 4-number list in it, depth first, box-like keys (``bboxes``, ``bbox_2d``, …)
      before the others;
    - ``groundingme``: the ``bbox_2d`` of the JSON object spanning the first ``{`` to the last
      ``}`` (``null`` is the zero box; each value through ``float()``, so ``"903"`` reads),
      else the last run of four numbers;
    - ``refbench-pro``: the last ``[…]`` within one line that holds four JSON numbers or four
      comma-separated values ``float()`` reads.

    >>> find_box('{"bbox_2d": ["0", "903", "240", "999"]}', "groundingme")
    (0.0, 903.0, 240.0, 999.0)
    >>> find_box("[" * 3000, "ref-adv") is None
    True
    """
    return _FINDERS[parsing](text)


# -- Ref-Adv ------------------------------------------------------------------------------------


def _ref_adv(text: str) -> Box | None:
    if not text.strip():
        return None
    try:
        return _first_box(_last_json(text))
    except _UNREADABLE:  # run.py: any exception while parsing leaves the answer without a box
        return None


def _last_json(text: str) -> Any:
    for chunk in reversed([c.strip() for c in _FENCED.findall(text) if c.strip()]):
        try:
            return _shallow(json.loads(chunk))
        except _UNREADABLE:
            continue
    return _json_ending(text.rstrip())


def _json_ending(tail: str) -> Any:
    """The JSON array or object that ends ``tail``, decoded from its first ``[`` or ``{``
    that gives one, as run.py decodes from each in turn; at most one can (``only_start``), so
    only that one is decoded."""
    start = only_start(tail)
    if start is None:
        return None
    try:
        value, end = json.JSONDecoder().raw_decode(tail, start)
        return _shallow(value) if end == len(tail) else None
    except _UNREADABLE:
        return None


def _first_box(value: Any) -> Box | None:
    """The first 4-number list of ``value``, depth first as ``_collect_boxes`` visits it.

    An explicit stack, not recursion: a value nested as deep as the JSON decoder allows is
    walked without touching the interpreter's recursion limit.
    """
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            if len(item) == 4 and all(_is_number(v) for v in item):
                return _floats(item)
            stack.extend(reversed(item))
        elif isinstance(item, dict):
            keys = [k for k in _BOX_KEYS if k in item] + [k for k in item if k not in _BOX_KEYS]
            stack.extend(item[k] for k in reversed(keys))
    return None


# -- GroundingME --------------------------------------------------------------------------------


def _groundingme(text: str) -> Box | None:
    found = _bbox_object(text)
    if found is not None:
        try:
            value = _shallow(json.loads(found))["bbox_2d"]
            if value is None:
                return ZERO
            if isinstance(value, list) and len(value) == 4:
                return _floats([_float(v) for v in value])
        except _UNREADABLE:  # evaluate.py's bare ``except: pass``: on to the fallback
            pass
    runs = _FOUR_NUMBERS.findall(text)
    return _floats([float(v) for v in runs[-1]]) if runs else None


def _bbox_object(text: str) -> str | None:
    """What evaluate.py's pattern finds: from the first "{" to the last "}", if '"bbox_2d"'
    lies between them. Searched by the regex engine, a "{" it failed from was tried again
    from each later one, a scan of the rest each time (issue 37); where the first fails, every
    later one fails too."""
    first, last = text.find("{"), text.rfind("}")
    if first < 0 or last < 0 or text.find(_BBOX_KEY, first + 1, last) < 0:
        return None
    return text[first : last + 1]


def _float(value: object) -> float:
    """``float(value)`` as evaluate.py calls it (strings such as ``" 903 "`` read), save that a
    boolean is no coordinate."""
    if isinstance(value, bool):
        raise TypeError("a boolean is not a coordinate")
    return float(value)  # type: ignore[arg-type]  # anything else float() refuses raises


# -- RefBench-PRO -------------------------------------------------------------------------------


def _refbench_pro(text: str) -> Box | None:
    for content in reversed(_BRACKETED.findall(text)):
        if not content:  # a stretch no box can be read from
            continue
        box = _bracket_box(content)
        if box is not None:
            return box
    return None


def _bracket_box(content: str) -> Box | None:
    """``_parse_and_validate_bbox``: four JSON numbers, else four comma-separated floats."""
    try:
        value = json.loads(f"[{content}]")
        if isinstance(value, list) and len(value) == 4 and all(_is_number(v) for v in value):
            return _floats(value)
    except _UNREADABLE:  # the released code catches only JSONDecodeError; it crashes on the rest
        pass
    parts = content.split(",")
    if len(parts) != 4:
        return None
    try:
        return _floats([float(p.strip()) for p in parts])
    except ValueError:
        return None


# -- shared -------------------------------------------------------------------------------------


def _shallow(value: Any) -> Any:
    """``value`` if it nests at most :data:`MAX_DEPTH` lists and objects deep.

    Raises
    ------
    _TooDeep
        When it nests deeper: read as the decoder's RecursionError would be.
    """
    level = [(value, 1)]
    while level:
        item, depth = level.pop()
        if isinstance(item, list | dict):
            if depth > MAX_DEPTH:
                raise _TooDeep(f"JSON nested over {MAX_DEPTH} deep")
            children = item.values() if isinstance(item, dict) else item
            level.extend((child, depth + 1) for child in children)
    return value


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _floats(values: Sequence[Any]) -> Box:
    x1, y1, x2, y2 = (float(v) for v in values)
    return (x1, y1, x2, y2)


_FINDERS: dict[ReaderName, Callable[[str], Box | None]] = {
    "groundbench": parse_box,
    "ref-adv": _ref_adv,
    "groundingme": _groundingme,
    "refbench-pro": _refbench_pro,
}
