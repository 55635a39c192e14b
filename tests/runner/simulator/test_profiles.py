"""The simulator's profiles: ``default`` is the simulator as it was; ``paper`` gives each of the
paper's configurations its own behaviour, with partly common random numbers across the grid's
cells (each cell's draws √ρ shared, √(1−ρ) its own)."""

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
from conditions._grid import REDUCED_THINKING_BUDGET
from runner.backends import call_id
from runner.simulator import PROFILES, Behaviour, Seen, SimSpec, Simulator, answer
from runner.simulator._luck import Sharing
from runner.simulator._model import Truth
from runner.simulator._profiles import GEMINI, PAPER, at
from runner.simulator._server import replicate_and_attempt
from runner.simulator._traced import profile_answer, whole_outline
from scoring import parse_answer, ring_from_flat, score_polygon, score_references
from tests.runner.test_against_simulator import QWEN, _ask_all, _run

MODEL = {c.name: c.model for c in PAPER_CONFIGURATIONS}


def _seen(q_qid: str, cohort: Cohort, n: int, variant: Variant = "full", *,
          spatial: Truth | None = None, colour: Truth | None = None, thinking: bool = True,
          temperature: float | None = None,
          thinking_budget: int | None = None) -> Seen:  # fmt: skip
    q = cohort.question(q_qid)
    qid = None if variant == "none" else q_qid
    return Seen(qid, q.expression, n, variant, spatial, colour, thinking, temperature,
                thinking_budget)  # fmt: skip


def _scores(cohort: Cohort, name: str, n: int, replicate: int = 0, *, variant: Variant = "full",
            spatial: Truth | None = None, colour: Truth | None = None, thinking: bool = True,
            temperature: float | None = None,
            thinking_budget: int | None = None) -> list[float]:  # fmt: skip
    """Attempt 0's fixed IoU (points, 0 if unparseable) of each question: no retry, so a
    test reads the model's own rates."""
    tracing = PAPER.tracings[MODEL[name]]
    out = []
    for q in cohort.questions:
        seen = _seen(q.qid, cohort, n, variant, spatial=spatial, colour=colour,
                     thinking=thinking, temperature=temperature,
                     thinking_budget=thinking_budget)  # fmt: skip
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


# -- partly common random numbers --------------------------------------------------------------


def _vertices(text: str, n: int) -> list[float]:
    parsed = parse_answer(text, n)
    assert parsed is not None
    return [float(c) for point in parsed for c in point]


SECOND_ORDER: dict[str, dict[str, object]] = {
    "thinking-budget": {"thinking_budget": REDUCED_THINKING_BUDGET},
    "temperature": {"temperature": 1.0},
    "cue-spatial-true": {"spatial": "true"},
    "cue-colour-true": {"colour": "true"},
}


@pytest.mark.parametrize("condition", [*SECOND_ORDER, "repeat"])
def test_a_second_order_condition_answers_unlike_base_but_close_to_it(
    small_cohort: Cohort, condition: str
) -> None:
    """Its own cell, so its own share of the luck: the answers differ from base's (no
    equivalence passes on identical answers), by a small effect on average."""
    tracing = PAPER.tracings[MODEL["qwen-max"]]
    n, replicate = 32, 1 if condition == "repeat" else 0
    kwargs = SECOND_ORDER.get(condition, {})
    differ = 0
    for q in small_cohort.questions:
        base = profile_answer(_seen(q.qid, small_cohort, n), small_cohort, PAPER, tracing, 0, 0)
        other = profile_answer(
            _seen(q.qid, small_cohort, n, **kwargs),  # type: ignore[arg-type]
            small_cohort, PAPER, tracing, 0, 0, replicate,
        )  # fmt: skip
        differ += other.text != base.text
    assert differ >= 0.9 * len(small_cohort.questions)
    mean = _mean(_scores(small_cohort, "qwen-max", n))
    moved = _mean(_scores(small_cohort, "qwen-max", n, replicate, **kwargs))  # type: ignore[arg-type]
    assert moved != mean and abs(moved - mean) < 5  # 45 questions: noise of a few points


def test_the_second_order_effects_are_real_and_small(small_cohort: Cohort) -> None:
    """The conditions' own moves, apart from the luck: a reduced thinking budget places the
    shape 3 % worse, temperature widens the jitter, a true hint lowers the distractor rate."""
    from runner.simulator._traced import condition_moves

    e = PAPER.effects
    q = small_cohort.questions[0]
    base = condition_moves(_seen(q.qid, small_cohort, 16), e)
    budget = condition_moves(
        _seen(q.qid, small_cohort, 16, thinking_budget=REDUCED_THINKING_BUDGET), e
    )
    warm = condition_moves(_seen(q.qid, small_cohort, 16, temperature=1.0), e)
    hinted = condition_moves(_seen(q.qid, small_cohort, 16, spatial="true"), e)
    assert base.shape == 1.0 and 1.0 < budget.shape <= 1.05
    assert 1.0 < warm.jitter <= 1.05
    assert 0.8 <= hinted.distractor_scale < 1.0
    full = condition_moves(_seen(q.qid, small_cohort, 16, thinking_budget=32768), e)
    assert full.shape == 1.0  # a budget at the full chain is not a reduced one
    assert 0.0 < e.shared.question < 1.0 and 0.0 < e.shared.budget < 1.0


def test_each_model_answers_from_its_own_share_of_the_luck(small_cohort: Cohort) -> None:
    q = small_cohort.questions[0]
    seen = _seen(q.qid, small_cohort, 16)
    total = replace(PAPER, effects=replace(PAPER.effects, shared=Sharing(1.0, 1.0)))
    a = profile_answer(seen, small_cohort, total, GEMINI, 0, 0, model="a")
    b = profile_answer(seen, small_cohort, total, GEMINI, 0, 0, model="b")
    assert a.text == b.text  # ρ = 1: every cell the same draws
    a = profile_answer(seen, small_cohort, PAPER, GEMINI, 0, 0, model="a")
    b = profile_answer(seen, small_cohort, PAPER, GEMINI, 0, 0, model="b")
    assert a.text != b.text
    # by default, the model the profile keys the tracing by
    named = profile_answer(seen, small_cohort, PAPER, GEMINI, 0, 0, model=MODEL["gemini-high"])
    assert profile_answer(seen, small_cohort, PAPER, GEMINI, 0, 0).text == named.text


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
    assert none < half < grey  # evidence ≫ resolution ≫ colour
    # greyscale costs little: on 45 questions its own share of the luck outweighs it
    assert abs(grey - base) < 10
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
        for c in ("base", "repeat", "thinking-budget")
        for qid in qids
    ]
    records = _run(sim, QWEN, lambda conf: [builder.build(k, conf) for k in keys], _ask_all)
    tracing = PAPER.tracings[QWEN.model]
    assert len(records) >= len(keys)  # an unparseable answer was asked again
    answered: dict[tuple[str, str, int], str] = {}
    for r in records:
        replicate = 1 if r.condition == "repeat" else 0
        # the reduced budget as DashScope receives it: thinking_budget in the request
        reduced = REDUCED_THINKING_BUDGET if r.condition == "thinking-budget" else None
        seen = _seen(r.qid, small_cohort, 64, thinking_budget=reduced)
        expected = profile_answer(seen, small_cohort, PAPER, tracing, 0, r.attempt, replicate)
        assert r.answer == expected.text
        answered[(r.condition, r.qid, r.attempt)] = r.answer
    for (condition, qid, attempt), text in answered.items():
        if condition != "base" and ("base", qid, attempt) in answered:
            assert text != answered[("base", qid, attempt)]  # a cell of its own


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
