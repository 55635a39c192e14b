"""One tally of a run's counts and costs: immutable and additive, so producers emit deltas and
every view adds them (issue 56)."""

from __future__ import annotations

import dataclasses

from hypothesis import given
from hypothesis import strategies as st

from runner._port import Tally
from tests.runner.store.rows import attempt_record

_COUNTS = st.integers(0, 10**9)
TALLIES = st.builds(Tally, **{f.name: _COUNTS for f in dataclasses.fields(Tally)})


@given(TALLIES, TALLIES, TALLIES)
def test_law_adding_tallies_is_associative_and_commutative(a: Tally, b: Tally, c: Tally) -> None:
    assert (a + b) + c == a + (b + c)
    assert a + b == b + a
    assert a + Tally() == a


@given(TALLIES, TALLIES)
def test_law_what_a_running_total_grew_by_adds_back_to_it(a: Tally, b: Tally) -> None:
    """A producer's outcome is its total since its last one: the sum of its outcomes is its
    total, whichever order the consumer adds them in."""
    total = a + b
    assert a + total.since(a) == total
    assert total.since(a).max_input_tokens == total.max_input_tokens  # a max, added again


def test_a_record_counts_once_and_its_money_at_the_price_given() -> None:
    tally = Tally.of(attempt_record("q1")) + Tally.of(attempt_record("q2", outcome="transient"))
    assert (tally.attempts, tally.answered, tally.errored, tally.transient_ended) == (2, 1, 1, 1)
    assert (tally.input_tokens, tally.output_tokens, tally.usage_unknown) == (10, 5, 0)
    assert tally.spent(lambda i, o: i + 2 * o) == 20.0
    assert tally.unknown_spent(lambda i, o: i + 2 * o) == 0.0


def test_a_record_counted_at_its_worst_case_is_counted_apart() -> None:
    tally = Tally.of(attempt_record("q1", billed=(4000, 1000, 1)))
    assert tally.usage_unknown == 1 and tally.unknown_input_tokens == 4000
    assert tally.max_input_tokens == 4000  # the bound, or a reported input past it
