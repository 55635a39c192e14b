"""Where a JSON value that ends an answer can begin (issue 37): one place, and it is run.py's."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scoring._json_tail import CHUNK, only_start
from tests.examples import scaled


def first_decodable(tail: str) -> int | None:
    """run.py's search, decoding from each ``[`` and ``{`` in turn: the first start whose
    value ends ``tail``."""
    decoder = json.JSONDecoder()
    for start, char in enumerate(tail):
        if char in "[{":
            try:
                if decoder.raw_decode(tail, start)[1] == len(tail):
                    return start
            except (ValueError, RecursionError):
                continue
    return None


@pytest.mark.parametrize(
    ("tail", "start"),
    [
        ("[1, 2, 3, 4]", 0),
        ("So: [1, 2] and [3]", 15),
        ('{"a": "]"}', 0),  # a bracket in a string is no bracket
        ('["[", 1]', 0),
        ('"[1]', 1),  # a quote before the value opens no string: the decoder begins after it
        ('["\\"]", 2]', 0),  # an escaped quote closes no string
        ('["\\\\", 2]', 0),  # an escaped backslash escapes nothing
        ('["\\\\\\"[", 1]', 0),
        ("[[1]", 1),  # the outer "[" is never closed
        ("[1]]", None),  # the last "]" closes nothing
        ("[" * 3000 + "1" + "]" * 3000, 0),  # found, however deep (the decoder judges it)
        ("[1" + ", 2" * CHUNK + "]", 0),  # the zero in a chunk before the last
        ("]" * (CHUNK + 5), None),
        ("é [中, 1]", 2),  # offsets are characters
        ("", None),
        ("[1] x", None),  # no value ends the answer
    ],
)
def test_the_start_is_found(tail: str, start: int | None) -> None:
    assert only_start(tail) == start


PIECES = st.sampled_from(
    ["[", "]", "{", "}", '"', "\\", "\\\\", '\\"', ",", ": ", "1", "a", " ", '"a": ', "é", "中",
     "[1, 2]", '{"b": [3]}', "null"]
)  # fmt: skip


@settings(max_examples=scaled(5))  # the pieces make few decodable tails: more draws find them
@given(st.tuples(st.lists(PIECES, max_size=25).map("".join), st.sampled_from(["]", "}", ""])))
def test_the_only_start_is_the_first_that_decodes(parts: tuple[str, str]) -> None:
    # No start but the one found can give a value that ends the text: the first of run.py's
    # is it, whenever there is one.
    tail = "".join(parts)
    found = first_decodable(tail)
    assert found is None or found == only_start(tail)
