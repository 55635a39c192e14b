"""The simulated model: conditions move its scores the way the paper's ablations expect."""

from __future__ import annotations

import random
import statistics

import pytest

from conditions import Cohort, Variant
from runner.simulator import Behaviour, Seen, answer
from runner.simulator._model import Truth
from scoring import Reference, parse_box, score_polygon

N = 16


def _mean_iou(
    cohort: Cohort,
    variant: Variant = "full",
    spatial: Truth | None = None,
    colour: Truth | None = None,
    thinking: bool = True,
    behaviour: Behaviour | None = None,
    seeds: int = 3,
) -> float:
    behaviour = behaviour or Behaviour()
    ious = []
    for q in cohort.questions:
        reference = Reference.build(cohort.referent(q.qid), N, 0, tuple(cohort.target(q.qid, N)))
        for seed in range(seeds):
            seen = Seen(q.qid, q.expression, N, variant, spatial, colour, thinking)
            reply = answer(seen, cohort, behaviour, random.Random(f"{seed}:{q.qid}"))
            score = score_polygon(reply.text, reference)
            ious.append(score.iou if score.parseable else 0.0)
    return 100 * statistics.mean(ious)


@pytest.fixture(scope="module")
def base(small_cohort: Cohort) -> float:
    return _mean_iou(small_cohort)


def test_the_image_conditions_lower_the_score_in_the_expected_order(
    small_cohort: Cohort, base: float
) -> None:
    half = _mean_iou(small_cohort, "half")
    grey = _mean_iou(small_cohort, "grey")  # synthetic expressions all name a colour
    none = _mean_iou(small_cohort, "none")
    assert base > half > none and base > grey > none
    assert none < 20 < 50 < base


def test_wrong_hints_mislead_and_true_hints_help(small_cohort: Cohort, base: float) -> None:
    assert _mean_iou(small_cohort, spatial="wrong") < base - 10
    assert _mean_iou(small_cohort, colour="wrong") < base - 10
    assert _mean_iou(small_cohort, spatial="true") >= base - 2


def test_reasoning_off_is_noisier(small_cohort: Cohort, base: float) -> None:
    assert _mean_iou(small_cohort, thinking=False) < base


def test_a_perfect_model_traces_the_target(small_cohort: Cohort) -> None:
    perfect = Behaviour(
        vertex_noise=0.0, distractor=0.0, wrong_count=0.0, duplicate=0.0,
        self_intersection=0.0, decimals=0.0, refusal=0.0,
    )  # fmt: skip
    assert _mean_iou(small_cohort, behaviour=perfect, seeds=1) > 97


def test_reasoning_text_is_apart_and_a_box_answer_has_four_values(small_cohort: Cohort) -> None:
    q = small_cohort.questions[0]
    clean = Behaviour(refusal=0.0, decimals=0.0)
    reply = answer(Seen(q.qid, q.expression, 0, "full"), small_cohort, clean, random.Random(1))
    assert parse_box(reply.text) is not None
    assert reply.reasoning and reply.reasoning not in reply.text
    off = Seen(q.qid, q.expression, 8, "full", thinking=False)
    assert answer(off, small_cohort, clean, random.Random(1)).reasoning == ""
