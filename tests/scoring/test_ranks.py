"""Orderings, inversions and a curve's peak: the definitions behind the rank claims."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scoring import inversions, ordering, peak

names = st.sampled_from(["doubao", "gemini-high", "kimi", "qwen-max", "qwen-off"])
values = st.dictionaries(names, st.floats(0, 100, allow_nan=False), min_size=1)


@given(values)
def test_a_set_of_values_has_no_inversion_against_its_own_ordering(v: dict[str, float]) -> None:
    assert sorted(ordering(v)) == sorted(v)
    assert inversions(ordering(v), v) == []


@given(values)
def test_the_reversed_ordering_inverts_every_pair_of_distinct_values(v: dict[str, float]) -> None:
    reverse = ordering(v)[::-1]
    distinct = sum(1 for i, a in enumerate(reverse) for b in reverse[i + 1 :] if v[a] != v[b])
    assert len(inversions(reverse, v)) == distinct


def test_an_inversion_is_named_by_the_pair_and_a_tie_is_none() -> None:
    reference = ("gemini-high", "qwen-max", "doubao", "kimi")
    at_64 = {"gemini-high": 37.7, "qwen-max": 39.0, "doubao": 30.0, "kimi": 30.0}
    assert inversions(reference, at_64) == [("gemini-high", "qwen-max")]
    assert inversions(reference, {**at_64, "qwen-max": math.nan}) == []  # no value, no pair
    assert ordering(at_64) == ("qwen-max", "gemini-high", "doubao", "kimi")


def test_a_peak_below_the_last_budget_with_a_drop_is_a_reversal() -> None:
    p = peak({8: 50.0, 16: 56.0, 24: 56.0, 32: 53.0, 64: 41.5})
    assert (p.budget, p.value, p.last_budget, p.drop, p.reversal) == (16, 56.0, 64, 14.5, True)
    rising = peak({8: 50.0, 16: 51.0, 64: 60.0})
    assert (rising.budget, rising.drop, rising.reversal) == (64, 0.0, False)
    flat = peak({8: 50.0, 64: 50.0})
    assert (flat.budget, flat.reversal) == (8, False)  # a tie peaks at the lowest budget
    with pytest.raises(ValueError, match="last budget"):
        peak({8: 50.0, 64: math.nan})
