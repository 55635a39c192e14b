"""A profile's luck: each cell's draws mix the shared draws of (question, budget, attempt) with
its own at ρ (a Gaussian copula for the uniforms), deterministically from the seed."""

from __future__ import annotations

import statistics
from statistics import NormalDist

import pytest

from runner.simulator._luck import Luck, Sharing, draw_luck

_NORMAL = NormalDist()


def _gaussians(luck: Luck) -> list[float]:
    q, b = luck.question, luck.budget
    return [*q.shift, q.scale, *q.wobble, *q.edges, b.reselect, *b.jitter]


def _uniforms(luck: Luck) -> list[float]:
    q, b = luck.question, luck.budget
    return [q.select, q.other, q.spatial, q.colour, q.whole, b.parse, b.miscount, b.cut,
            b.contract, b.tangle, b.defect, b.defect_at, b.start, b.prose]  # fmt: skip


def _pairs(rho: float, questions: int = 600) -> tuple[list[Luck], list[Luck]]:
    """Two cells' luck on the same questions (N = 8), at ρ for both levels."""
    sharing = Sharing(rho, rho)
    a = [draw_luck(3, f"q{i}", 8, 0, "cell-a", sharing) for i in range(questions)]
    b = [draw_luck(3, f"q{i}", 8, 0, "cell-b", sharing) for i in range(questions)]
    return a, b


def test_the_same_seed_question_budget_attempt_and_cell_draw_the_same_luck() -> None:
    sharing = Sharing(0.7, 0.5)
    assert draw_luck(0, "q1", 16, 1, "c", sharing) == draw_luck(0, "q1", 16, 1, "c", sharing)
    assert draw_luck(0, "q1", 16, 1, "c", sharing) != draw_luck(1, "q1", 16, 1, "c", sharing)
    assert len(draw_luck(0, "q1", 16, 1, "c", sharing).budget.jitter) == 32  # 2N


def test_rho_one_reproduces_the_shared_draws_exactly() -> None:
    shared = draw_luck(0, "q1", 24, 0)  # no cell, ρ = 1: the shared draws themselves
    for cell in ("gemini|full", "qwen|half", ""):
        assert draw_luck(0, "q1", 24, 0, cell, Sharing(1.0, 1.0)) == shared


def test_rho_zero_draws_each_cell_independently() -> None:
    a, b = _pairs(0.0)
    shared = [draw_luck(3, f"q{i}", 8, 0) for i in range(len(a))]
    x = [z for luck in a for z in _gaussians(luck)]
    assert abs(statistics.correlation(x, [z for luck in b for z in _gaussians(luck)])) < 0.05
    assert abs(statistics.correlation(x, [z for s in shared for z in _gaussians(s)])) < 0.05


@pytest.mark.parametrize("rho", [0.3, 0.7])
def test_two_cells_draws_correlate_at_rho(rho: float) -> None:
    """About 20,000 pairs of Gaussians: the sample correlation's standard error is under
    0.01, so a tolerance of 0.05 is five of them; the draws are seeded, so it cannot flake."""
    a, b = _pairs(rho)
    x = [z for luck in a for z in _gaussians(luck)]
    y = [z for luck in b for z in _gaussians(luck)]
    assert len(x) > 15_000
    assert statistics.correlation(x, y) == pytest.approx(rho, abs=0.05)
    assert statistics.fmean(x) == pytest.approx(0.0, abs=0.05)
    assert statistics.pstdev(x) == pytest.approx(1.0, abs=0.05)
    # the uniforms through a Gaussian copula: uniform still, correlated at ρ on the normal scale
    u = [v for luck in a for v in _uniforms(luck)]
    v = [w for luck in b for w in _uniforms(luck)]
    assert all(0.0 < w < 1.0 for w in u + v)
    assert statistics.fmean(u) == pytest.approx(0.5, abs=0.02)
    assert sum(w < 0.1 for w in u) / len(u) == pytest.approx(0.1, abs=0.02)
    normal = statistics.correlation(
        [_NORMAL.inv_cdf(w) for w in u], [_NORMAL.inv_cdf(w) for w in v]
    )
    assert normal == pytest.approx(rho, abs=0.05)


def test_each_level_mixes_at_its_own_rho() -> None:
    sharing = Sharing(question=1.0, budget=0.0)
    a = draw_luck(0, "q1", 8, 0, "a", sharing)
    b = draw_luck(0, "q1", 8, 0, "b", sharing)
    assert a.question == b.question  # the question's luck wholly shared
    assert a.budget.jitter != b.budget.jitter and a.budget.guess != b.budget.guess


def test_a_share_outside_zero_to_one_is_refused() -> None:
    with pytest.raises(ValueError, match="ρ"):
        Sharing(1.2, 0.5)
