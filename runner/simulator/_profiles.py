"""Simulator profiles: per-model behaviour that reproduces the paper's §4 effects (issue 40).

``[simulator] profile = "paper"`` makes each of the paper's four configurations' models (keyed
by :data:`conditions.PAPER_CONFIGURATIONS`' model ids) answer by its own :class:`Tracing`
(:mod:`runner.simulator._traced`), with the common random numbers of
:mod:`runner.simulator._luck`; a model the profile does not name keeps the default
:class:`~runner.simulator._spec.Behaviour`. The profile ``default`` is the simulator as it was.

Every number says where it comes from: a figure of the paper that it is calibrated to
("paper: …"), or what it was chosen to make hold ("chosen so that …"). The paper prints few
absolute numbers (Gemini pooled 57.7; at ``N`` = 64 filled IoU 37.7, legal coverage 7.5, legal
IoU 4.2; the box-derived control 57.3), so most values are chosen to give its *effects* (orders,
peaks, falls, equivalences) with room to spare on 1,500 questions, and on the demo's 300 (its
equivalences at ±2 points and the ±1.1-point reference shifts need about that many). They were
set with ``python -m benchmarks.paper_profile``, which scores the pure model on the demo's and
the paper's cohorts without a run (the README summarises its output), and
``python -m benchmarks.paper_recovery`` checks them through a whole run.

Rates are per answer; σ are fractions of √(box area) of the referent; a :data:`Budgeted` holds
one value per budget ``N`` = 8, 16, 24, 32, 64.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Literal

from conditions import PAPER_CONFIGURATIONS
from scoring import BUDGETS

ProfileName = Literal["default", "paper", "paper-no-reversal"]
Budgeted = tuple[float, float, float, float, float]
"""One value per budget, ``N`` = 8, 16, 24, 32, 64."""
Graded = tuple[float, float, float]
"""One value per composite difficulty: easy, medium, hard (PROTOCOL §8)."""
_GRADES = ("easy", "medium", "hard")


def at(values: Budgeted, budget: int) -> float:
    """The value of ``values`` at ``budget`` (one of :data:`scoring.BUDGETS`).

    >>> at((1.0, 2.0, 3.0, 4.0, 5.0), 24)
    3.0
    """
    return values[BUDGETS.index(budget)]


def graded(values: Graded, difficulty: str) -> float:
    """The value of ``values`` for a question of ``difficulty``."""
    return values[_GRADES.index(difficulty)]


@dataclass(frozen=True)
class Tracing:
    """How one configuration answers (:mod:`runner.simulator._traced` says how each is used).

    Selection: ``distractor``, the rate of outlining a same-category other (× the question's
    difficulty factor). Placement (one draw per question, shared by every budget):
    ``placement``, σ of the outline's offset and of its relative size; ``wobble``, σ of a
    smooth misreading of the shape. ``error`` scales both per budget. Tracing: ``blur``, the
    share of the perimeter the seen contour is averaged over; ``jitter``, σ per vertex;
    ``cut``, the rate at which the ``N`` points cover only part of the contour (the allocation
    failure of small budgets); ``contract``, the rate at which the outline is drawn at
    ``size`` of its size. Delivery: ``unparseable``, per attempt (up to three are made, so
    ``IoU2`` loses about its cube); ``tangle``, the rate of a ring traced twice round (its
    even-odd fill a thin band: the bimodal failure of dense budgets); ``defect``, one small
    illegality (a repeated vertex, or two vertices swapped). Box answers: ``box_error`` scales the
    placement, ``box_shrink`` the box about its centre, ``box_edge`` is σ per edge.
    """

    distractor: Budgeted
    placement: float
    wobble: float
    error: Budgeted
    blur: float
    jitter: Budgeted
    cut: Budgeted
    contract: Budgeted
    size: Budgeted
    unparseable: Budgeted
    tangle: Budgeted
    defect: Budgeted
    box_error: float
    box_shrink: float
    box_edge: float


@dataclass(frozen=True)
class Effects:
    """What the conditions do, the same for every configuration (the paper's Qwen grid, with
    Gemini replicating the image conditions), and how answers are written."""

    off_shape: float  # reasoning off: placement and misreading × this
    off_jitter: float  # ... jitter × this
    off_unparseable: float  # ... per-attempt unparseable rate + this
    off_distractor: float  # ... distractor rate + this
    temperature_jitter: float  # jitter × (1 + this · temperature) when one is sent
    half_shape: float  # half resolution: placement and misreading × this
    half_jitter: float  # ... jitter × this
    half_blur: float  # ... blur + this (detail finer than the half-size pixels is lost)
    grey_confusion: float  # greyscale, an expression naming a colour: distractor rate + this
    spatial_follow: float  # a wrong spatial hint misleads at this rate
    colour_follow: float  # a wrong colour hint misleads at this rate
    both_discount: float  # both wrong: each rate × this (the two hints contradict each other)
    replicate_fresh: float  # a replicate redraws this share of the jitter's variance
    cut_span: float  # a cut answer's points cover this share of the contour
    whole_object: float  # a referent an occluder splits: outlined as one object at this rate
    refusal_share: float  # of unparseable answers, refusals (the rest: a wrong count)
    prose: float  # sentences around a bracketed list


@dataclass(frozen=True)
class Hardness:
    """The question's composite difficulty (PROTOCOL §8: distractors, contour complexity,
    relative scale) scales the distractor rate (``distractor``) and the placement and
    misreading (``error``), easy, medium, hard."""

    distractor: Graded
    error: Graded


@dataclass(frozen=True)
class Profile:
    """A named simulator behaviour: a :class:`Tracing` per model id, and the shared effects."""

    name: str
    tracings: Mapping[str, Tracing]
    effects: Effects
    hardness: Hardness

    def tracing(self, model: str) -> Tracing | None:
        """``model``'s tracing, or None: the default behaviour answers it."""
        return self.tracings.get(model)


_MODEL = {c.name: c.model for c in PAPER_CONFIGURATIONS}

# -- the paper profile ------------------------------------------------------------------------
#
# The configurations share one structure, scaled: placement and misreading σ in the ratio
# 1 : 1.16 : 1.43 : 1.49 (Gemini, Qwen, Doubao, Kimi). With common random numbers a weaker
# configuration then answers each question worse on the same draw, so the paper's order holds
# question by question, not only on average (chosen so that every adjacent pair is a reliable
# paired contrast at every budget on the demo's 300 questions). Shared across them, chosen so
# that:
# - the curve rises from N = 8: ``cut`` (allocation) at N = 8, with even spacing, which
#   misses corners G_8 keeps (the paper: peaks at moderate budgets);
# - it falls at N = 64: more distractors (target preference drops only at the densest budget,
#   the paper's Table 4), more unparseable answers, tangles, and near-certain small defects
#   (legal coverage collapses; paper: Gemini's 7.5 %);
# - easy > medium > hard: ``HARDNESS`` (the paper's Table 5: consistent declines, parseable-only
#   too).

GEMINI = Tracing(
    distractor=(0.02, 0.02, 0.02, 0.02, 0.12),  # chosen: Sel ≈ 97 % until N = 64
    placement=0.067,  # chosen so that pooled fixed IoU is the paper's 57.7
    wobble=0.078,
    # a little worse at N = 64 when not tangled: chosen so that its legal answers average the
    # paper's 4.2 / 7.5 ≈ 56 IoU
    error=(1.0, 1.0, 1.0, 1.0, 1.15),
    blur=0.03,
    jitter=(0.012, 0.012, 0.012, 0.012, 0.012),
    cut=(0.25, 0.0, 0.0, 0.0, 0.0),  # chosen: a rise from N = 8 that keeps Acc@.75 there
    contract=(0.0, 0.0, 0.0, 0.0, 0.0),
    size=(1.0, 1.0, 1.0, 1.0, 1.0),
    unparseable=(0.02, 0.02, 0.02, 0.03, 0.45),  # at 64 ≈ 9 % after three attempts
    # bimodal at N = 64, good or tangled: its Acc@.5 stays above Qwen's while its fixed IoU
    # falls below (paper: filled IoU 37.7 at 64, Acc@.5 keeping one order)
    tangle=(0.0, 0.0, 0.0, 0.0, 0.2),
    defect=(0.02, 0.04, 0.08, 0.15, 0.79),  # paper: legal coverage 7.5, legal IoU 4.2 at 64
    box_error=1.38,  # paper: box-derived control 57.3 (direct 57.7)
    box_shrink=0.88,  # chosen: boxes a little inside the extent score best as N-gons
    box_edge=0.02,
)
QWEN = Tracing(
    distractor=(0.04, 0.04, 0.04, 0.04, 0.08),
    placement=0.078,  # Gemini's × 1.16
    wobble=0.091,
    # At N = 64 mostly drawn too small (at 0.7 of its size: IoU under .5) but well placed and
    # seldom broken: mediocre but present, so its fixed IoU passes Gemini's by about 10 points
    # while its Acc@.5 stays about 20 below (paper: the one Qwen–Gemini inversion; gaps chosen
    # to be reliable on the demo's 300 questions)
    error=(1.0, 1.0, 1.0, 1.0, 0.15),
    blur=0.04,
    jitter=(0.015, 0.015, 0.015, 0.015, 0.015),
    cut=(0.35, 0.03, 0.0, 0.0, 0.0),
    contract=(0.0, 0.0, 0.0, 0.0, 0.85),
    size=(1.0, 1.0, 1.0, 1.0, 0.7),
    unparseable=(0.03, 0.03, 0.03, 0.04, 0.1),
    tangle=(0.0, 0.0, 0.0, 0.0, 0.0),
    defect=(0.03, 0.06, 0.1, 0.2, 0.9),
    box_error=1.0,
    box_shrink=0.88,
    box_edge=0.06,
)
DOUBAO = Tracing(
    distractor=(0.07, 0.07, 0.07, 0.07, 0.19),
    placement=0.096,  # Gemini's × 1.43
    wobble=0.112,
    error=(1.1, 1.0, 1.0, 1.0, 1.0),
    blur=0.05,
    jitter=(0.02, 0.02, 0.02, 0.02, 0.03),
    cut=(0.4, 0.05, 0.0, 0.0, 0.0),
    contract=(0.0, 0.0, 0.0, 0.0, 0.0),
    size=(1.0, 1.0, 1.0, 1.0, 1.0),
    unparseable=(0.05, 0.05, 0.05, 0.06, 0.35),
    tangle=(0.0, 0.0, 0.0, 0.02, 0.75),  # chosen: Acc@.5 at 64 reliably between Qwen's and Kimi's
    defect=(0.04, 0.08, 0.12, 0.25, 0.85),
    box_error=1.0,
    box_shrink=0.88,
    box_edge=0.08,
)
KIMI = Tracing(
    # Finds the object at N = 8 (few distractors, placement × 0.5) but draws it coarsely (too
    # small): it clears IoU .25 as often as Gemini and almost never .75 (paper: "thresholds
    # distinguish Kimi's low-budget object finding from Gemini's stronger geometry")
    distractor=(0.02, 0.08, 0.08, 0.08, 0.22),
    placement=0.1,
    wobble=0.12,
    error=(0.5, 1.0, 1.0, 1.0, 1.0),
    blur=0.09,
    jitter=(0.03, 0.025, 0.025, 0.025, 0.035),
    cut=(0.0, 0.0, 0.0, 0.0, 0.0),
    contract=(1.0, 1.0, 1.0, 1.0, 1.0),
    size=(0.6, 0.8, 0.8, 0.8, 0.8),
    unparseable=(0.06, 0.06, 0.06, 0.08, 0.55),
    tangle=(0.0, 0.0, 0.0, 0.03, 0.9),
    defect=(0.05, 0.1, 0.15, 0.3, 0.9),
    box_error=1.0,
    box_shrink=0.88,
    box_edge=0.1,
)
EFFECTS = Effects(
    # Reasoning off: worse geometry and more unparseable answers (paper F3: "through both
    # broader parse coverage and better geometry"), a loss near half of no-image's (paper:
    # "removing the image is comparably damaging": within a factor of two)
    off_shape=1.8,
    off_jitter=2.0,
    off_unparseable=0.3,
    off_distractor=0.1,
    # second-order (paper F4: thinking-budget, temperature and a repeat run): a reduced
    # thinking budget is not visible to the simulator and answers as base does
    temperature_jitter=0.03,
    replicate_fresh=0.1,
    # evidence ≫ resolution ≫ colour (paper F3): without the image the model guesses from the
    # words; half resolution blurs and misplaces; greyscale confuses colour names a little
    half_shape=1.6,
    half_jitter=1.3,
    half_blur=0.1,
    grey_confusion=0.03,
    # cues (paper F4): a wrong location misleads more than a wrong colour; the two together
    # less than their sum; a true hint changes nothing (no reliable gain)
    spatial_follow=0.4,
    colour_follow=0.15,
    both_discount=0.6,
    cut_span=0.6,  # chosen: a cut answer loses about a third of its IoU
    # A model sees the object, not the annotation's parts: where an occluder splits it, it
    # outlines the whole object (gap closed), or else the part construction selects. The
    # paper's selected parts cover 71.76 % of their union, yet scoring against the union
    # shifts five-budget means by at most 1.1 points: a model tracing only the part would lose
    # about 1.5 there. Chosen so that the union's gains and losses offset (paper-sized cohort:
    # union shifts +0.2, +0.1, +0.2 and −0.6 for Gemini, Qwen, Doubao and Kimi).
    whole_object=0.7,
    refusal_share=0.2,  # chosen, as the default behaviour's refusal : wrong-count ratio
    prose=0.4,  # as the default behaviour
)
HARDNESS = Hardness(
    distractor=(0.4, 1.0, 3.0),  # chosen so that easy > medium > hard reliably (Table 5)
    error=(0.6, 1.0, 1.5),  # ... in parseable-only IoU too (geometry, not coverage)
)
PAPER = Profile(
    "paper",
    {
        _MODEL["gemini-high"]: GEMINI,
        _MODEL["qwen-max"]: QWEN,
        _MODEL["doubao"]: DOUBAO,
        _MODEL["kimi"]: KIMI,
    },
    EFFECTS,
    HARDNESS,
)


def _no_reversal(t: Tracing) -> Tracing:
    """``t`` answering N = 64 as it answers N = 16, near the peak of its curve: no collapse at
    the densest budget (no extra distractors, tangles, failures to parse or defects there)."""

    def peak(v: Budgeted) -> Budgeted:
        return (v[0], v[1], v[2], v[3], v[1])

    return replace(
        t,
        distractor=peak(t.distractor),
        error=peak(t.error),
        jitter=peak(t.jitter),
        cut=peak(t.cut),
        contract=peak(t.contract),
        size=peak(t.size),
        unparseable=peak(t.unparseable),
        tangle=peak(t.tangle),
        defect=peak(t.defect),
    )


# The paper profile with one effect removed, for the recovery benchmark
# (``benchmarks.paper_recovery``): the collapse at N = 64.
PAPER_NO_REVERSAL = replace(
    PAPER,
    name="paper-no-reversal",
    tracings={m: _no_reversal(t) for m, t in PAPER.tracings.items()},
)

PROFILES: dict[ProfileName, Profile] = {
    "default": Profile("default", {}, EFFECTS, HARDNESS),  # no model of its own
    "paper": PAPER,
    "paper-no-reversal": PAPER_NO_REVERSAL,
}
