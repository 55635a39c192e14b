"""The last pair of number-like tokens apart: the chunked numpy search agrees with the plain
pattern, searched backwards, that it replaces."""

from __future__ import annotations

import re
from unittest import mock

from hypothesis import given
from hypothesis import strategies as st

from scoring import _pairs

# The pattern, read backwards: a later token's first character, separators, an earlier
# token's last.
_BACKWARDS = re.compile(rb"[+\-0-9.nNiI][\s,;()]+[0-9.nNfFyY]")

# Each kind of character the search tells apart, and some that belong to two kinds or none.
_TEXTS = st.lists(st.sampled_from(list(b" ,;()\t\n1.nfy+-iI xa?[]")), max_size=60).map(bytes)


def _by_pattern(text: bytes) -> int | None:
    found = _BACKWARDS.search(text[::-1])
    return None if found is None else len(text) - found.start() - 1


@given(_TEXTS)
def test_the_last_pair_is_where_the_pattern_finds_it(text: bytes) -> None:
    assert _pairs.last_pair(text) == _by_pattern(text)


@given(_TEXTS)
def test_the_last_pair_is_the_same_found_in_chunks_of_four(text: bytes) -> None:
    # Stretches of separators then cross chunks, and reach back past several.
    with mock.patch.object(_pairs, "CHUNK", 4):
        assert _pairs.last_pair(bytearray(text)) == _by_pattern(text)


def test_a_pair_apart_by_a_stretch_longer_than_a_chunk_is_found() -> None:
    text = b"x 1" + b" " * (3 * _pairs.CHUNK) + b"2 y"
    assert _pairs.last_pair(text) == len(text) - 3


def test_a_text_of_separators_only_holds_no_pair() -> None:
    assert _pairs.last_pair(b" " * (2 * _pairs.CHUNK + 5)) is None
