"""The one estimator (issue 39): tokens measured and pooled, scaled to the images left, priced
(the batch price where batched), capped; the requests under ``--limit``; the ETA from the rate
achieved over what is left. Pure functions: no Ray, no network."""

from __future__ import annotations

import pytest

from runner.estimate import (
    CostEstimate,
    Limited,
    Measured,
    Tokens,
    capped_spend,
    eta_s,
    per_call_cost,
    stored_measure,
    tokens_per_call,
)
from runner.experiment import Prices
from runner.store import Progress

ROUGH = Tokens(500.0, 1024.0, "rough")


def test_nothing_measured_is_rough_and_a_stated_output_replaces_the_measured_one() -> None:
    assert tokens_per_call(None, None, ROUGH, None) == ROUGH
    assert tokens_per_call(Measured(0, 0, 0), Measured(0, 0, 0), ROUGH, None) == ROUGH
    stated = tokens_per_call(Measured(4, 4000, 400), None, ROUGH, 250)
    assert (stated.input, stated.output) == (1000.0, 250)
    assert stated.basis.endswith("; output stated")


def test_the_stores_requests_outweigh_the_checks_few_calls_as_they_accrue() -> None:
    """The check measured 50 out a call, the store 150 a request: their pooled mean moves to the
    store's as it fills."""
    checked = Measured(2, 2000, 100)
    early = tokens_per_call(Measured(2, 2000, 300), checked, ROUGH, None)
    late = tokens_per_call(Measured(200, 200_000, 30_000), checked, ROUGH, None)
    assert early.output == 100.0 and late.output == pytest.approx((30_000 + 100) / 202)
    assert late.basis == "measured over 200 stored requests and 2 check calls"


def test_a_measure_of_few_images_is_scaled_to_the_images_left() -> None:
    """One check call on a small image (the rough count: 300 of a mean 600 left) stands for
    requests of twice its input; the output is not scaled."""
    probed = Measured(1, 350, 80, rough_input=300.0)
    tokens = tokens_per_call(None, probed, ROUGH, None, rough_left=600.0)
    assert (tokens.input, tokens.output) == (700.0, 80.0)
    assert tokens.basis == "measured over 1 check call, input scaled to the images left"
    # Nothing known of the measured requests' images: the input as measured.
    assert tokens_per_call(None, Measured(1, 350, 80), ROUGH, None, 600.0).input == 350.0


def test_a_batched_backend_is_priced_at_its_batch_rate() -> None:
    prices = Prices(input_per_mtok=2.0, output_per_mtok=10.0, batch_rate=0.5)
    tokens = Tokens(1000.0, 200.0, "measured")
    assert per_call_cost(prices, tokens, batched=False) == pytest.approx(0.004)
    assert per_call_cost(prices, tokens, batched=True) == pytest.approx(0.002)


def test_the_cap_bounds_the_spend_said() -> None:
    costs = [
        CostEstimate("a", "x", 100, 40, ROUGH, 0.01),
        CostEstimate("b", "y", 100, 60, ROUGH, 0.02),
    ]
    assert capped_spend(costs, None) == pytest.approx(1.6)
    assert capped_spend(costs, 1.0) == 1.0 and capped_spend(costs, 5.0) == pytest.approx(1.6)


def test_under_a_limit_the_totals_are_the_limits_requests() -> None:
    """``run --limit 2`` on a 4,800-request grid of which 1,000 were complete: its 200
    requests are the totals, whatever the grid's count."""
    limited = Limited(total=200, left_at_start=200, complete_at_start=1000)
    assert limited.complete(1000) == 0
    assert limited.complete(1150) == 150
    assert limited.complete(1300) == 200  # never past its total
    # A limited run resumed: 50 of its requests were complete before it began.
    assert Limited(200, 150, 1000).complete(1000) == 50


def test_the_eta_is_what_is_left_at_the_rate_achieved() -> None:
    assert eta_s(100, 50, 10.0) == 20.0
    assert eta_s(0, 0, 0.0) == 0.0  # nothing left: no wait
    assert eta_s(100, 0, 10.0) is None  # nothing complete yet: no rate to go by


def test_a_quota_storms_errored_requests_do_not_thin_the_stored_mean() -> None:
    """100 requests answered at 500 input tokens each, then 900 stopped on quota (errors, no
    tokens): the mean a request left costs is still 500, not 50 (the cap's bound is 4× it)."""
    storm = Progress("q", requests=2000, complete=100, errored=900, responses=1000,
                     answered=100, scored=100, input_tokens=50_000,
                     output_tokens=8_000)  # fmt: skip
    tokens = stored_measure(storm).tokens("stored")
    assert (tokens.input, tokens.output) == (500.0, 80.0)
    early = Progress("q", requests=2000, complete=0, errored=3, responses=5,
                     answered=2, scored=2, input_tokens=1_000, output_tokens=100)  # fmt: skip
    assert stored_measure(early).tokens("stored").input == 500.0  # per answered attempt
