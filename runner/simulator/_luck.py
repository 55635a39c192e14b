"""Partly common random numbers: a profile model's draws, shared in part between the grid's cells.

A profile model (:mod:`runner.simulator._traced`) answers from a :class:`Luck`: every uniform
and Gaussian it may need, drawn in a fixed order before it is used. Each draw mixes two
sources:

- the **shared** draw of (question, budget, attempt), the same in every cell of the grid: how
  hard this question is to get right, for any model under any condition;
- the cell's **own** draw, from a generator seeded also by the *cell*: the model and everything
  in the request that a condition changes (image variant, the hints' truth, reasoning on or off
  and its budget or effort, temperature, replicate).

A Gaussian is ``z = √ρ·z_shared + √(1−ρ)·z_own``; a uniform goes through a Gaussian copula,
``u = Φ(√ρ·Φ⁻¹(u_shared) + √(1−ρ)·z_own)``, so it stays uniform and two cells' uniforms are
correlated as their Gaussians are (ρ). ``ρ`` is the profile's ``Effects.shared``: with ρ = 1
every cell would answer from the same draws (total common random numbers, under which a
condition that changes nothing scores exactly as base and an equivalence passes on Δ ≡ 0);
with ρ = 0 the cells would be independent replicates. In between, a paired contrast between
two cells carries the effect plus a real, bounded share of sampling noise, as two runs of a
real model do; the contrast's interval then measures something. Everything stays a
deterministic function of the seed.

Two levels of luck: the question's (which object the model settles on, where it places it,
how a wrong hint moves it; one per question, attempt and cell, so every budget and the box
question of one cell agree) and the budget's (how the trace is drawn and spoiled at that
``N``). Each level is mixed with its own ρ (:class:`Sharing`).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from statistics import NormalDist

WOBBLE_HARMONICS = (2, 3, 4)  # a shape misread as squashed, triangular, square (1 is a shift)
_NORMAL = NormalDist()
_EDGE = 1e-12  # a shared uniform is kept this far from 0 and 1 before Φ⁻¹


@dataclass(frozen=True)
class Sharing:
    """ρ, the share of each draw's variance that is common to every cell, for the question's
    luck and for the budget's."""

    question: float = 1.0
    budget: float = 1.0

    def __post_init__(self) -> None:
        for rho in (self.question, self.budget):
            if not 0.0 <= rho <= 1.0:
                raise ValueError(f"a shared share ρ must lie in [0, 1], not {rho}")


@dataclass(frozen=True)
class QuestionLuck:
    """Draws shared by every budget (and the box question) of one question, attempt and cell."""

    select: float  # below the distractor rate: the model settles on a same-category other
    other: float  # which other
    spatial: float  # below the follow rate: a wrong spatial hint misleads it
    colour: float  # ... a wrong colour hint
    shift: tuple[float, float]  # N(0, 1): where it places the object, off by this many σ
    scale: float  # N(0, 1): how large it draws it
    # N(0, 1): how it misreads the shape, a smooth deformation along the contour (harmonics
    # 2–4 of x then y, cosine and sine each)
    wobble: tuple[float, ...]
    edges: tuple[float, float, float, float]  # N(0, 1): a box answer's edges
    whole: float  # below the whole-object rate: it outlines a parted object as one


@dataclass(frozen=True)
class BudgetLuck:
    """Draws of one question at one budget, attempt and cell."""

    parse: float  # below the unparseable rate: no list of 2N values
    miscount: float  # which way it fails (refusal, fewer or more vertices)
    cut: float  # below the cut rate: its points cover only part of the contour
    contract: float  # below the contract rate: it draws the outline too small
    tangle: float  # below the tangle rate: the ring goes round twice
    defect: float  # below the defect rate: one small illegality
    defect_at: float  # where, and which kind
    start: float  # where along the contour the trace starts (a fraction of the perimeter)
    prose: float  # below the prose rate: sentences around a bracketed list
    # N(0, 1): this request's share of which object it settles on (mixed with the question's
    # ``select`` at the profile's ``select_kept``: each budget is a request of its own)
    reselect: float
    jitter: tuple[float, ...]  # N(0, 1) per coordinate, x then y, vertex by vertex (2N)
    guess: int  # a seed for a guess made without the image (the cell's own)


@dataclass(frozen=True)
class Luck:
    question: QuestionLuck
    budget: BudgetLuck


_WOBBLES = 2 * 2 * len(WOBBLE_HARMONICS)
_BUDGET_UNIFORMS = 9


def mixed_uniform(u: float, own: float, keep: float, new: float) -> float:
    """The uniform ``u`` through the Gaussian copula: its normal score weighted ``keep``
    (√ρ) plus the N(0, 1) draw ``own`` weighted ``new`` (√(1−ρ)), back to a uniform."""
    z = _NORMAL.inv_cdf(min(1.0 - _EDGE, max(_EDGE, u)))
    return _NORMAL.cdf(keep * z + new * own)


class _Mixer:
    """Draws of one level: the shared generator's, each mixed with the cell's own at ρ."""

    def __init__(self, shared: random.Random, own: random.Random | None, rho: float) -> None:
        self.shared, self.own = shared, own
        self.keep, self.new = math.sqrt(rho), math.sqrt(1.0 - rho)

    def uniform(self) -> float:
        u = self.shared.random()
        if self.own is None:
            return u
        return mixed_uniform(u, self.own.gauss(0, 1), self.keep, self.new)

    def gauss(self) -> float:
        z = self.shared.gauss(0, 1)
        if self.own is None:
            return z
        return self.keep * z + self.new * self.own.gauss(0, 1)


def _mixer(key: str, cell: str, rho: float) -> _Mixer:
    """The shared generator of ``key`` and, unless ρ = 1 (then every draw is the shared
    one, exactly), the cell's own."""
    own = random.Random(f"{key}|cell:{cell}") if rho < 1.0 else None
    return _Mixer(random.Random(key), own, rho)


def draw_luck(seed: int, question: str, budget: int, attempt: int, cell: str = "",
              sharing: Sharing = Sharing()) -> Luck:  # fmt: skip
    """The luck of ``question`` (its id, or the expression when no image names it) at
    ``budget`` (0: the box question), attempt ``attempt``, in the grid's ``cell`` (a name for
    the model and what the request's condition changes), its draws mixed with the shared ones
    of (question, budget, attempt) at ``sharing``'s ρ.
    """
    q = _mixer(f"{seed}|{question}|a{attempt}|question", cell, sharing.question)
    u: Callable[[], float] = q.uniform
    g: Callable[[], float] = q.gauss
    question_luck = QuestionLuck(
        select=u(),
        other=u(),
        spatial=u(),
        colour=u(),
        shift=(g(), g()),
        scale=g(),
        wobble=tuple(g() for _ in range(_WOBBLES)),
        edges=(g(), g(), g(), g()),
        whole=u(),
    )
    b = _mixer(f"{seed}|{question}|{budget}|a{attempt}|budget", cell, sharing.budget)
    parse, miscount, cut, contract, tangle, defect, defect_at, start, prose = (
        b.uniform() for _ in range(_BUDGET_UNIFORMS)
    )
    reselect = b.gauss()
    jitter = tuple(b.gauss() for _ in range(2 * budget))
    # the guess is the cell's own (the shared generator's when ρ = 1: every cell alike)
    guess = (b.own or b.shared).getrandbits(32)
    budget_luck = BudgetLuck(
        parse, miscount, cut, contract, tangle, defect, defect_at, start, prose, reselect, jitter,
        guess,
    )  # fmt: skip
    return Luck(question_luck, budget_luck)
