"""The outermost groups of a text: those a stack finds, each written over; and, found in one
pass where every ``[`` is closed, the same, with a refusal wherever a ``[`` is not closed."""

from __future__ import annotations

from unittest import mock

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from scoring import _brackets
from tests.scoring.reference_parse import _outermost_groups

_TEXTS = st.text(alphabet="[[]]a ", max_size=60).map(str.encode)


def _every_open_closed(text: bytes) -> bool:
    """Whether every ``[`` is closed by a later ``]``, the one it pairs with (a stack)."""
    open_ = 0
    for char in text:
        if char == ord("["):
            open_ += 1
        elif char == ord("]"):
            open_ = max(0, open_ - 1)
    return open_ == 0


@given(_TEXTS, st.sampled_from([8, 16, 1 << 16]))
def test_the_groups_are_those_a_stack_finds_each_written_over(text: bytes, chunk: int) -> None:
    blotted = bytearray(text)
    with mock.patch.object(_brackets, "CHUNK", chunk):
        groups = _brackets.outermost_groups(blotted)
    want = _outermost_groups(text.decode("ascii"))
    opens = np.flatnonzero(np.unpackbits(groups.opens, count=len(text)))
    closes = np.flatnonzero(np.unpackbits(groups.closes, count=len(text)))
    assert [(int(a), int(b) + 1) for a, b in zip(opens, closes, strict=True)] == want
    inside = bytearray(text)
    for start, end in want:
        inside[start:end] = b"?" * (end - start)
    assert blotted == inside


@given(_TEXTS, st.sampled_from([8, 16, 1 << 16]))
def test_one_pass_agrees_with_two_where_every_bracket_closes(text: bytes, chunk: int) -> None:
    two, one = bytearray(text), bytearray(text)
    with mock.patch.object(_brackets, "CHUNK", chunk):
        want = _brackets.outermost_groups(two)
        got = _brackets.closed_groups(one)
    if not _every_open_closed(text) and b"]" in text[text.find(b"[") :]:
        assert got is None
        return
    assert got is not None
    assert np.array_equal(got.opens, want.opens)
    assert np.array_equal(got.closes, want.closes)
    assert one == two


def test_an_unclosed_bracket_after_every_group_is_refused() -> None:
    # Every group is whole; the "[" never closed comes after them, chunks later.
    text = bytearray(b"[1] [2]" + b" " * 40 + b"[ x")
    with mock.patch.object(_brackets, "CHUNK", 8):
        assert _brackets.closed_groups(text) is None
