"""A long list's content read in numpy: the same numbers, and the same refusals, as the pattern
of PROTOCOL §4 matched token by token."""

from __future__ import annotations

import re
from unittest import mock

from hypothesis import given
from hypothesis import strategies as st

from scoring import _numbers

_NUMBER = re.compile(
    rb"[+-]?(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
    rb"|(?:[nN][aA][nN]|[iI][nN][fF](?:[iI][nN][iI][tT][yY])?))"
)
_APART = re.compile(rb"[\s,;()\[\]]+")


def _reader(text: bytes) -> _numbers.Reader:
    classes = text.translate(_numbers.CLASS_OF)
    return lambda low, high: classes[low:high]


def _by_pattern(content: bytes) -> int:
    tokens = [t for t in _APART.split(content) if t]
    return len(tokens) if tokens and all(_NUMBER.fullmatch(t) for t in tokens) else 0


# Tokens that are numbers, nearly numbers, and none, with what separates them.
_TOKENS = st.one_of(
    st.sampled_from([b"1", b"-2.5", b"+.5", b"3.", b"1e5", b"2E-3", b"nan", b"-Inf",
                     b"infinity", b"1.2.3", b"e5", b"1e", b"n", b"infinit", b"+", b".", b"x"]),
    st.binary(max_size=6),
)  # fmt: skip
_CONTENTS = st.lists(
    st.tuples(_TOKENS, st.sampled_from([b" ", b", ", b"], [", b";", b"(", b"\t", b""]))
).map(lambda parts: b"".join(token + apart for token, apart in parts))


@given(_CONTENTS)
def test_the_numbers_read_in_numpy_are_those_the_pattern_finds(content: bytes) -> None:
    assert _numbers.list_numbers(_reader(content), 0, len(content)) == _by_pattern(content)


@given(_CONTENTS, st.integers(0, 3))
def test_pieces_and_long_tokens_change_nothing(content: bytes, margin: int) -> None:
    # Read four characters at a time (a token longer than that read on to its end), a token of
    # more than one step's four characters followed run by run, and from an offset in a longer
    # text.
    text = b"x" * margin + content + b"y" * margin
    with mock.patch.object(_numbers, "CHUNK", 4), mock.patch.object(_numbers, "_STEPS", 1):
        found = _numbers.list_numbers(_reader(text), margin, margin + len(content))
    assert found == _by_pattern(content)


# Long tokens: runs of digits of any length with the other characters of the syntax between
# them, in any order, so that most are nearly numbers.
_RUNS = st.lists(
    st.one_of(
        st.integers(1, 300).map(lambda n: b"7" * n),
        st.sampled_from([b"+", b"-", b".", b"e", b"E", b"x", b"n", b"", b"1.5e+3"]),
    ),
    min_size=1,
    max_size=8,
).map(b"".join)


@given(st.lists(_RUNS, min_size=1, max_size=5))
def test_long_tokens_are_followed_to_the_numbers_the_pattern_finds(tokens: list[bytes]) -> None:
    content = b", ".join(tokens)
    assert _numbers.list_numbers(_reader(content), 0, len(content)) == _by_pattern(content)


def test_a_token_longer_than_a_piece_is_read_whole() -> None:
    digits = b"7" * (3 * _numbers.CHUNK)
    text = b"1, " + digits + b", 2"
    assert _numbers.list_numbers(_reader(text), 0, len(text)) == 3
    text = b"1, " + digits + b"x, 2"
    assert _numbers.list_numbers(_reader(text), 0, len(text)) == 0
    text = b"1, 2, " + digits
    assert _numbers.list_numbers(_reader(text), 0, len(text)) == 3
