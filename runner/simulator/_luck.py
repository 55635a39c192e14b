"""Common random numbers: a profile model's draws, made before it knows the condition.

A profile model (:mod:`runner.simulator._traced`) answers from a :class:`Luck`: every uniform
and Gaussian it may need, drawn in a fixed order from a generator seeded by the question, the
budget and the attempt, never by the model or the condition. Two cells of the grid then see the
same luck on the same (question, budget, attempt), and differ only by what their parameters do
with it: a paired contrast between them carries the effect and nothing of the draw. That is what
lets the demo's 300 questions show a second-order condition within ±2 points of base, and keep the
configurations' order at every budget (common random numbers, as in simulation studies).

Two levels of luck: the question's (which object the model settles on, where it places it, how
a wrong hint moves it; one per question and attempt, so every budget and the box question agree)
and the budget's (how the trace is drawn and spoiled at that ``N``).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

# Draws kept for the longest answer a profile writes: 64 vertices, 2 coordinates each.
_MAX_VERTICES = 64
WOBBLE_HARMONICS = (2, 3, 4)  # a shape misread as squashed, triangular, square (1 is a shift)


@dataclass(frozen=True)
class QuestionLuck:
    """Draws shared by every budget (and the box question) of one question and attempt."""

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
    """Draws of one question at one budget and attempt."""

    parse: float  # below the unparseable rate: no list of 2N values
    miscount: float  # which way it fails (refusal, fewer or more vertices)
    cut: float  # below the cut rate: its points cover only part of the contour
    contract: float  # below the contract rate: it draws the outline too small
    tangle: float  # below the tangle rate: the ring goes round twice
    defect: float  # below the defect rate: one small illegality
    defect_at: float  # where, and which kind
    start: float  # where along the contour the trace starts (a fraction of the perimeter)
    prose: float  # below the prose rate: sentences around a bracketed list
    jitter: tuple[float, ...]  # N(0, 1) per coordinate, x then y, vertex by vertex
    guess: int  # a seed for a guess made without the image


@dataclass(frozen=True)
class Luck:
    question: QuestionLuck
    budget: BudgetLuck


def draw_luck(seed: int, question: str, budget: int, attempt: int, replicate: int = 0,
              fresh: float = 0.0) -> Luck:  # fmt: skip
    """The luck of ``question`` (its id, or the expression when no image names it) at
    ``budget`` (0: the box question), attempt ``attempt``.

    A replicate (``replicate`` > 0, the grid's repeat condition) shares every draw with
    replicate 0 except the vertex jitter, of which a share ``fresh`` of the variance is drawn
    anew: a rerun of the same request traces the same object a little differently.
    """
    q = random.Random(f"{seed}|{question}|a{attempt}|question")
    question_luck = QuestionLuck(
        select=q.random(),
        other=q.random(),
        spatial=q.random(),
        colour=q.random(),
        shift=(q.gauss(0, 1), q.gauss(0, 1)),
        scale=q.gauss(0, 1),
        wobble=tuple(q.gauss(0, 1) for _ in range(2 * 2 * len(WOBBLE_HARMONICS))),
        edges=(q.gauss(0, 1), q.gauss(0, 1), q.gauss(0, 1), q.gauss(0, 1)),
        whole=q.random(),  # drawn last: every earlier draw stays as it was before it
    )
    b = random.Random(f"{seed}|{question}|{budget}|a{attempt}|budget")
    parse, miscount, cut, contract, tangle, defect, defect_at, start, prose = (
        b.random() for _ in range(9)
    )
    jitter = [b.gauss(0, 1) for _ in range(2 * _MAX_VERTICES)]
    guess = b.getrandbits(32)
    if replicate and fresh > 0:
        r = random.Random(f"{seed}|{question}|{budget}|a{attempt}|r{replicate}")
        keep, new = (1.0 - fresh) ** 0.5, fresh**0.5
        jitter = [keep * z + new * r.gauss(0, 1) for z in jitter]
    budget_luck = BudgetLuck(
        parse,
        miscount,
        cut,
        contract,
        tangle,
        defect,
        defect_at,
        start,
        prose,
        tuple(jitter),
        guess,
    )
    return Luck(question_luck, budget_luck)
