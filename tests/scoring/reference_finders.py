"""The box finders' searches as they were before issue 37: the released files' own patterns
and loops, as written there.

Kept as the oracle the linear finders (``scoring/_box_finders.py``) are checked against: the
two must find the same box in every text. They are simple and faithful, but a hostile answer
costs them time with the square of its length: run.py decodes JSON from every ``[`` and ``{``,
and the regex engine retries evaluate.py's and eval_qwen3vl.py's patterns from every place.
The steps after the search (reading a JSON value, a bracket's content) are shared.
"""

from __future__ import annotations

import json
import re
from typing import Any

from scoring._box_finders import (
    _UNREADABLE,
    ZERO,
    Box,
    _bracket_box,
    _first_box,
    _float,
    _floats,
    _shallow,
)

_FENCED = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)
_BBOX_2D = re.compile(r"\{.*\"bbox_2d\".*\}", re.DOTALL)
_FOUR_NUMBERS = re.compile(r"(-?\d+(?:\.\d+)?)" + r"[\s,]+(-?\d+(?:\.\d+)?)" * 3)
_BRACKETED = re.compile(r"\[(.*?)\]")


def ref_adv(text: str) -> Box | None:
    if not text.strip():
        return None
    try:
        return _first_box(_last_json(text))
    except _UNREADABLE:
        return None


def _last_json(text: str) -> Any:
    for chunk in reversed([c.strip() for c in _FENCED.findall(text) if c.strip()]):
        try:
            return _shallow(json.loads(chunk))
        except _UNREADABLE:
            continue
    return json_ending(text.rstrip())


def json_ending(tail: str) -> Any:
    """run.py: decode from each ``[`` and ``{`` in turn; the first value ending ``tail``."""
    decoder = json.JSONDecoder()
    for start, char in enumerate(tail):
        if char in "[{":
            try:
                value, end = decoder.raw_decode(tail, start)
                if end == len(tail):
                    return _shallow(value)
            except _UNREADABLE:
                continue
    return None


def groundingme(text: str) -> Box | None:
    found = _BBOX_2D.search(text)
    if found is not None:
        try:
            value = _shallow(json.loads(found.group(0)))["bbox_2d"]
            if value is None:
                return ZERO
            if isinstance(value, list) and len(value) == 4:
                return _floats([_float(v) for v in value])
        except _UNREADABLE:
            pass
    runs = _FOUR_NUMBERS.findall(text)
    return _floats([float(v) for v in runs[-1]]) if runs else None


def refbench_pro(text: str) -> Box | None:
    for content in reversed(_BRACKETED.findall(text)):
        box = _bracket_box(content)
        if box is not None:
            return box
    return None


FINDERS = {"ref-adv": ref_adv, "groundingme": groundingme, "refbench-pro": refbench_pro}
