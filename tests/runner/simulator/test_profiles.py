"""The simulator's profiles: ``default`` is the simulator as it was; ``paper`` gives each of the
paper's configurations its own behaviour, with common random numbers across conditions."""

from __future__ import annotations

import hashlib
import random
import statistics
from dataclasses import replace
from pathlib import Path

import pytest
from shapely.geometry import Polygon

from conditions import (
    PAPER_CONFIGURATIONS,
    Cohort,
    DataRoot,
    RequestBuilder,
    RequestKey,
    Variant,
    VariantCache,
)
from runner.backends import call_id
from runner.simulator import PROFILES, Behaviour, Seen, SimSpec, Simulator, answer
from runner.simulator._model import Truth
from runner.simulator._profiles import GEMINI, PAPER, at
from runner.simulator._server import replicate_and_attempt
from runner.simulator._traced import profile_answer, whole_outline
from scoring import parse_answer, ring_from_flat, score_polygon, score_references
from tests.runner.test_against_simulator import QWEN, _ask_all, _run

MODEL = {c.name: c.model for c in PAPER_CONFIGURATIONS}


def _seen(q_qid: str, cohort: Cohort, n: int, variant: Variant = "full", *,
          spatial: Truth | None = None, colour: Truth | None = None, thinking: bool = True,
          temperature: float | None = None) -> Seen:  # fmt: skip
    q = cohort.question(q_qid)
    qid = None if variant == "none" else q_qid
    return Seen(qid, q.expression, n, variant, spatial, colour, thinking, temperature)


def _scores(cohort: Cohort, name: str, n: int, replicate: int = 0, *, variant: Variant = "full",
            spatial: Truth | None = None, colour: Truth | None = None, thinking: bool = True,
            temperature: float | None = None) -> list[float]:  # fmt: skip
    """Attempt 0's fixed IoU (points, 0 if unparseable) of each question: no retry, so a
    test reads the model's own rates."""
    tracing = PAPER.tracings[MODEL[name]]
    out = []
    for q in cohort.questions:
        seen = _seen(q.qid, cohort, n, variant, spatial=spatial, colour=colour,
                     thinking=thinking, temperature=temperature)  # fmt: skip
        reply = profile_answer(seen, cohort, PAPER, tracing, 0, 0, replicate)
        s = score_polygon(reply.text, cohort.referent(q.qid).reference(n))
        out.append(100 * s.iou if s.parseable else 0.0)
    return out


def _mean(values: list[float]) -> float:
    return statistics.mean(values)


# -- the default profile ---------------------------------------------------------------------


def test_the_default_profile_is_the_simulator_as_it_was(small_cohort: Cohort) -> None:
    assert SimSpec().profile == "default"
    assert all(PROFILES["default"].tracing(c.model) is None for c in PAPER_CONFIGURATIONS)
    # The default model's answers, pinned: the same text as before profiles were added.
    q = small_cohort.questions[0]
    texts = [
        answer(_seen(q.qid, small_cohort, n, variant), small_cohort, Behaviour(),
               random.Random(f"{n}:{variant}")).text
        for n in (0, 8, 64) for variant in ("full", "half", "none")
    ]  # fmt: skip
    digest = hashlib.sha256("\n".join(texts).encode()).hexdigest()
    assert digest == _DEFAULT_DIGEST, digest


# Computed with the model as it was at commit 4d9093d (before this profile).
_DEFAULT_DIGEST = "462fa50988808315f313880298a08215b508a2f010fe789a6130213de5010fdd"


# -- the paper profile selects by model ------------------------------------------------------


def test_the_paper_profile_answers_each_paper_model_by_its_own_tracing() -> None:
    tracings = {name: PAPER.tracing(model) for name, model in MODEL.items()}
    assert all(t is not None for t in tracings.values())
    assert len({id(t) for t in tracings.values()}) == 4  # four behaviours
    assert PAPER.tracing("some-other-model") is None  # answered by the default behaviour
    # Its answers break at the densest budget: more tangles, unparseable answers and defects.
    for rates in (GEMINI.tangle, GEMINI.unparseable, GEMINI.defect):
        assert at(rates, 64) > at(rates, 32)


def test_the_configurations_keep_the_papers_order(small_cohort: Cohort) -> None:
    means = {name: _mean(_scores(small_cohort, name, 16)) for name in MODEL}
    assert means["gemini-high"] > means["qwen-max"] > means["doubao"] > means["kimi"]


def test_a_curve_peaks_at_moderate_budgets_and_legality_collapses_at_64(
    small_cohort: Cohort,
) -> None:
    curve = {n: _mean(_scores(small_cohort, "gemini-high", n)) for n in (8, 16, 64)}
    assert curve[16] > curve[8] and curve[16] > curve[64] + 10
    tracing = PAPER.tracings[MODEL["gemini-high"]]

    def legal(n: int) -> float:
        scores = [
            score_polygon(
                profile_answer(_seen(q.qid, small_cohort, n), small_cohort, PAPER, tracing, 0, 0)
                .text, small_cohort.referent(q.qid).reference(n),
            )
            for q in small_cohort.questions
        ]  # fmt: skip
        return _mean([float(s.legal) for s in scores])

    assert legal(64) < legal(32) - 0.3


# -- common random numbers --------------------------------------------------------------------


def _vertices(text: str, n: int) -> list[float]:
    parsed = parse_answer(text, n)
    assert parsed is not None
    return [float(c) for point in parsed for c in point]


def test_second_order_conditions_answer_as_base_does_on_the_same_luck(
    small_cohort: Cohort,
) -> None:
    """Seeded by (question, budget, attempt), not by condition: a second-order condition's
    answer is base's, moved only by what the condition does."""
    tracing = PAPER.tracings[MODEL["qwen-max"]]
    n, moved = 32, []
    for q in small_cohort.questions:
        base = profile_answer(_seen(q.qid, small_cohort, n), small_cohort, PAPER, tracing, 0, 0)
        hinted = profile_answer(_seen(q.qid, small_cohort, n, spatial="true"), small_cohort,
                                PAPER, tracing, 0, 0)  # fmt: skip
        assert hinted.text == base.text  # a true hint changes nothing
        warm = profile_answer(_seen(q.qid, small_cohort, n, temperature=1.0), small_cohort,
                              PAPER, tracing, 0, 0)  # fmt: skip
        again = profile_answer(_seen(q.qid, small_cohort, n), small_cohort, PAPER, tracing, 0, 0,
                               replicate=1)  # fmt: skip
        if parse_answer(base.text, n) is None:
            assert parse_answer(warm.text, n) is None and parse_answer(again.text, n) is None
            continue
        for other in (warm, again):
            pairs = zip(_vertices(base.text, n), _vertices(other.text, n), strict=True)
            moved.append(max(abs(a - b) for a, b in pairs))
    assert moved and max(moved) <= 25  # units of 0–999: the same outline, a little moved
    mean = _mean(_scores(small_cohort, "qwen-max", n))
    assert abs(mean - _mean(_scores(small_cohort, "qwen-max", n, temperature=1.0))) < 2
    assert abs(mean - _mean(_scores(small_cohort, "qwen-max", n, replicate=1))) < 2


def test_another_attempt_or_budget_draws_new_luck(small_cohort: Cohort) -> None:
    tracing = PAPER.tracings[MODEL["gemini-high"]]
    q = small_cohort.questions[0]
    first = profile_answer(_seen(q.qid, small_cohort, 16), small_cohort, PAPER, tracing, 0, 0)
    assert (
        first.text
        != profile_answer(_seen(q.qid, small_cohort, 16), small_cohort, PAPER, tracing, 0, 1).text
    )


# -- the effects, deterministically on a small cohort ----------------------------------------


def test_reasoning_off_and_the_image_conditions_cost_in_the_papers_order(
    small_cohort: Cohort,
) -> None:
    n = 16
    base = _mean(_scores(small_cohort, "qwen-max", n))
    off = _mean(_scores(small_cohort, "qwen-max", n, thinking=False))
    none = _mean(_scores(small_cohort, "qwen-max", n, variant="none"))
    half = _mean(_scores(small_cohort, "qwen-max", n, variant="half"))
    grey = _mean(_scores(small_cohort, "qwen-max", n, variant="grey"))
    assert base - off > 10  # the largest input-preserving effect
    assert none < half < grey <= base  # evidence ≫ resolution ≫ colour
    assert 0.5 * (base - off) < base - none < 2 * (base - off)  # comparably damaging


def test_a_wrong_location_misleads_more_than_a_wrong_colour_and_both_less_than_the_sum(
    small_cohort: Cohort,
) -> None:
    n = 16
    base = _scores(small_cohort, "qwen-max", n)
    spatial = _scores(small_cohort, "qwen-max", n, spatial="wrong")
    colour = _scores(small_cohort, "qwen-max", n, colour="wrong")
    both = _scores(small_cohort, "qwen-max", n, spatial="wrong", colour="wrong")
    assert _mean(spatial) < _mean(colour) < _mean(base)
    additive = [max(0.0, s + c - b) for s, c, b in zip(spatial, colour, base, strict=True)]
    assert _mean(both) > _mean(additive)  # sub-additive beyond the floor at 0


def _split_targets(cohort: Cohort) -> list[str]:
    """The questions whose referent has more than one part."""
    return [
        q.qid for q in cohort.questions
        if len(next(i for i in cohort.instances_of(q.qid) if i.role == "target").parts) > 1
    ]  # fmt: skip


def test_an_object_an_occluder_splits_is_outlined_whole_at_the_whole_object_rate(
    small_cohort: Cohort,
) -> None:
    split = _split_targets(small_cohort)
    assert split, "the small cohort has a referent of several parts"
    whole, part = (replace(PAPER, effects=replace(PAPER.effects, whole_object=r)) for r in (1, 0))
    gains = []
    for qid in split:
        seen = _seen(qid, small_cohort, 32)
        ious = [
            score_references(profile_answer(seen, small_cohort, p, GEMINI, 0, 0).text,
                             small_cohort.referent(qid), 32)
            for p in (whole, part)
        ]  # fmt: skip
        assert ious[0] is not None and ious[1] is not None
        gains.append(ious[0]["union"] - ious[1]["union"])
    assert statistics.mean(gains) > 0.05  # the whole object scores better against the union


def test_a_whole_outline_closes_a_narrow_gap_and_nothing_else() -> None:
    left = (0.0, 0.0, 40.0, 0.0, 40.0, 50.0, 0.0, 50.0)
    right = (44.0, 0.0, 60.0, 0.0, 60.0, 50.0, 44.0, 50.0)  # a 4-pixel pole between them
    far = (400.0, 0.0, 420.0, 0.0, 420.0, 50.0, 400.0, 50.0)
    ring = whole_outline((left, right))
    assert ring is not None
    closed = Polygon(ring)
    assert closed.is_valid and closed.area > Polygon(ring_from_flat(left)).area + 16 * 50 * 0.9
    assert closed.contains(Polygon([(40.5, 10), (43.5, 10), (43.5, 40), (40.5, 40)]))
    assert whole_outline((left,)) is None  # one part: the part itself
    assert whole_outline((left, far)) is None  # two objects' worth apart: not one object


# -- the server --------------------------------------------------------------------------------


def test_the_server_answers_a_paper_model_with_the_luck_of_the_runners_attempt(
    small_cohort: Cohort, small_root: DataRoot, tmp_path: Path
) -> None:
    cache = VariantCache(tmp_path / "v")
    sim = Simulator(small_cohort, small_root.images, cache, SimSpec(profile="paper"))
    builder = RequestBuilder(small_cohort, small_root.images, cache)
    qids = [q.qid for q in small_cohort.questions[:4]]
    keys = [
        RequestKey(configuration=QWEN.name, condition=c, budget=64, qid=qid)
        for c in ("base", "repeat")
        for qid in qids
    ]
    records = _run(sim, QWEN, lambda conf: [builder.build(k, conf) for k in keys], _ask_all)
    tracing = PAPER.tracings[QWEN.model]
    assert len(records) >= len(keys)  # an unparseable answer was asked again
    for r in records:
        replicate = 1 if r.condition == "repeat" else 0
        expected = profile_answer(
            _seen(r.qid, small_cohort, 64), small_cohort, PAPER, tracing, 0, r.attempt, replicate
        )
        assert r.answer == expected.text


@pytest.mark.parametrize("condition, attempt", [("base", 0), ("repeat", 2)])
def test_the_runners_call_id_names_its_replicate_and_attempt(
    small_cohort: Cohort, small_root: DataRoot, tmp_path: Path, condition: str, attempt: int
) -> None:
    builder = RequestBuilder(small_cohort, small_root.images, VariantCache(tmp_path / "v"))
    qid = small_cohort.questions[0].qid
    key = RequestKey(configuration=QWEN.name, condition=condition, budget=8, qid=qid)
    request = builder.build(key, QWEN)
    content = "f" * 64  # the server prefixes the request's content hash
    assert replicate_and_attempt(f"{content}:{call_id(request, attempt)}") == (
        request.replicate,
        attempt,
    )
    assert replicate_and_attempt(f"{content}:3") == (0, 3)  # named by content: the count


def test_the_no_reversal_profile_answers_64_as_16() -> None:
    flat = PROFILES["paper-no-reversal"].tracings[MODEL["gemini-high"]]
    fields = ("distractor", "error", "jitter", "cut", "contract", "size", "unparseable",
              "tangle", "defect")  # fmt: skip
    for name in fields:
        values = getattr(GEMINI, name)
        assert getattr(flat, name) == (*values[:4], values[1]), name
    assert replace(flat, **{f: getattr(GEMINI, f) for f in fields}) == GEMINI
