"""The controls of ``benchmarks.controls`` (issue 57): each transform does what it says on a
small hand-made answer set and leaves every other cell's object alone; an answer set scored in
process reads as the report reads the store it came from."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmarks._answers import attempts_allowed, in_order, parses
from benchmarks.controls import (
    CLAIM_NAMES,
    CONTROLS,
    REFUSAL,
    SHRINK,
    AnswerSet,
    Scorer,
    answers,
    answers_from_store,
    claim_name,
    control_named,
    controlled,
    score,
    subdivided,
    target_text,
)
from conditions import BOX, Cohort, write_cohort
from runner.distributed import Scorer as RunScorer
from runner.reports import findings, load_report_data
from runner.reports._data import Cell, Question, ReportData, ViewScores
from runner.rescore import rescore
from runner.store import GridRow, Registration, Store, read_only
from scoring import (
    mask_iou,
    parse_answer,
    parse_box,
    parse_list,
    place_answer,
    score_polygon,
)
from tests.runner.store.rows import attempt_row


def ring(n: int, radius: float = 200.0, centre: tuple[float, float] = (500.0, 450.0)) -> str:
    """A regular ``n``-gon as a bare line of integers, in 0–999 units."""
    cx, cy = centre
    points = [
        (cx + radius * math.cos(2 * math.pi * k / n), cy + radius * math.sin(2 * math.pi * k / n))
        for k in range(n)
    ]
    return " ".join(str(round(c)) for p in points for c in p)


QIDS = ("q1", "q2", "q3")
UNPARSED = "I used 31 points: 1 2 3"


def hand_made() -> dict[Cell, dict[str, tuple[str, ...]]]:
    """Two paper configurations' base cells at N = 8, 16, 32, 64 and a box cell, Qwen's
    thinking-off, thinking-budget, no-image (two questions: the matched subset), both wrong
    cues, a true cue, Gemini's half-res; some first attempts unparseable."""
    out: dict[Cell, dict[str, tuple[str, ...]]] = {}
    for name, radius in (("gemini-high", 200.0), ("qwen-max", 150.0), ("doubao", 120.0),
                         ("kimi", 100.0)):  # fmt: skip
        for n in (8, 16, 32, 64):
            out[Cell(name, "base", n)] = {
                "q1": (ring(n, radius),),
                "q2": (UNPARSED, ring(n, radius + 10)),
                "q3": (ring(n, radius - 10),),
            }
        out[Cell(name, "base", BOX)] = {
            "q1": ("100 200 300 400",),
            "q2": ("[100.5, 200.5, 900.5, 400.5]",),
            "q3": ("no box", "400 400 500 600"),
        }
    for condition, radius in (("thinking-off", 90.0), ("thinking-budget", 140.0),
                              ("cue-both-wrong", 60.0), ("cue-colour-true", 155.0),
                              ("cue-spatial-wrong", 70.0), ("cue-colour-wrong", 80.0)):  # fmt: skip
        for n in (8, 16, 32, 64):
            out[Cell("qwen-max", condition, n)] = {q: (ring(n, radius),) for q in QIDS}
    out[Cell("qwen-max", "no-image", 8)] = {q: (ring(8, 30.0),) for q in ("q1", "q3")}
    out[Cell("gemini-high", "half-res", 8)] = {q: (ring(8, 50.0),) for q in ("q1", "q3")}
    return out


def unchanged_cells(before: AnswerSet, after: AnswerSet, changed: set[Cell]) -> None:
    """The same cells, and each not in ``changed`` the very same object."""
    assert after.keys() == before.keys()
    assert after is not before
    for cell in before.keys() - changed:
        assert after[cell] is before[cell], cell


def transform(name: str, answer_set: AnswerSet, cohort: Cohort | None = None) -> AnswerSet:
    return control_named(name).transform(answer_set, cohort)  # type: ignore[arg-type]


# -- the transforms -------------------------------------------------------------------------------


def test_subdivision_gives_64_vertices_filling_the_32_gons_region(small_cohort: Cohort) -> None:
    qid = small_cohort.questions[0].qid
    referent = small_cohort.referent(qid)
    text = target_text(small_cohort, qid, 32)
    dense = subdivided(text, 32)
    assert parse_answer(dense, 64) is not None and parse_answer(dense, 32) is None
    assert dense == dense.strip() and all(0 <= int(v) <= 999 for v in dense.split())
    corners = parse_answer(dense, 64)
    assert corners is not None and corners[0::2] == parse_answer(text, 32)
    a, b = parse_list(text, 64), parse_list(dense, 128)
    assert a is not None and b is not None
    assert mask_iou(place_answer(a, referent).mask, place_answer(b, referent).mask) > 0.97
    # scored against G_64 it scores as the 32-gon does against G_32, up to the references
    s32 = score_polygon(text, referent.reference(32))
    s64 = score_polygon(dense, referent.reference(64))
    assert s64.parseable and abs(s64.iou_part - s32.iou_part) < 0.03
    assert subdivided(UNPARSED, 32) == UNPARSED


def test_collapse_answers_n64_with_the_n32_request_subdivided() -> None:
    before = hand_made()
    after = transform("collapse", before)
    changed = {c for c in before if c.budget == 64}
    unchanged_cells(before, after, changed)
    for cell in changed:
        source = before[cell._replace(budget=32)]
        assert after[cell].keys() == before[cell].keys()
        for qid, attempts in after[cell].items():
            assert attempts == tuple(subdivided(t, 32) for t in source[qid])
            assert [parses(t, 64) for t in attempts] == [parses(t, 32) for t in source[qid]]
    assert after[Cell("kimi", "base", 64)]["q2"][0] == UNPARSED  # kept, unparseable at 64


def test_doubao_kimi_swaps_every_shared_cell_and_twice_is_the_identity() -> None:
    before = hand_made()
    after = transform("doubao-kimi", before)
    changed = {c for c in before if c.configuration in ("doubao", "kimi")}
    unchanged_cells(before, after, changed)
    for cell in changed:
        other = "kimi" if cell.configuration == "doubao" else "doubao"
        assert after[cell] is before[cell._replace(configuration=other)]
    again = transform("doubao-kimi", after)
    assert all(again[c] is before[c] for c in before)


def test_inversion_shrinks_qwen_at_64_in_every_condition() -> None:
    before = hand_made()
    after = transform("inversion", before)
    changed = {c for c in before if c.configuration == "qwen-max" and c.budget == 64}
    assert Cell("qwen-max", "base", 64) in changed
    unchanged_cells(before, after, changed)
    for cell in changed:
        for q, texts in after[cell].items():
            for old, new in zip(before[cell][q], texts, strict=True):
                ring_before, ring_after = parse_answer(old, 64), parse_answer(new, 64)
                if ring_before is None:
                    assert new == old  # unparseable at 64: kept as it was
                    continue
                assert ring_after is not None
                spread = [max(c) - min(c) for c in zip(*ring_before, strict=True)]
                shrunk = [max(c) - min(c) for c in zip(*ring_after, strict=True)]
                for a, b in zip(spread, shrunk, strict=True):
                    assert b == pytest.approx(SHRINK * a, abs=2.0)


def test_box_gap_enlarges_every_box_1_6_times_about_its_centre() -> None:
    before = hand_made()
    after = transform("box-gap", before)
    changed = {c for c in before if c.budget == BOX}
    unchanged_cells(before, after, changed)
    gemini = after[Cell("gemini-high", "base", BOX)]
    assert gemini["q1"] == ("40 140 360 460",)  # 200 × 200 about (200, 300) → 320 × 320
    box = parse_box(gemini["q3"][1])
    assert box == (370.0, 340.0, 530.0, 660.0)  # 100 × 200 about (450, 500) → 160 × 320
    x1, y1, x2, y2 = box
    assert ((x2 - x1) / 100, (y2 - y1) / 200) == pytest.approx((1.6, 1.6))
    assert gemini["q3"][0] == "no box"  # unparseable, kept
    # decimals stay decimals; clamped to the frame
    assert gemini["q2"] == ("0.0 140.5 999.0 460.5",)


@pytest.mark.parametrize(
    ("name", "target", "source"),
    [
        ("thinking", "thinking-off", "base"),
        ("cue-asymmetry", "cue-colour-wrong", "cue-spatial-wrong"),
        ("no-image", "no-image", "base"),
        ("resolution", "half-res", "base"),
        ("second-order", "thinking-budget", "thinking-off"),
    ],
)
def test_replacing_controls_answer_a_condition_with_anothers(
    name: str, target: str, source: str
) -> None:
    before = hand_made()
    after = transform(name, before)
    changed = {c for c in before if c.condition == target}
    assert changed
    unchanged_cells(before, after, changed)
    for cell in changed:
        theirs = before[cell._replace(condition=source)]
        assert after[cell].keys() == before[cell].keys()  # the target's questions
        assert all(after[cell][q] == theirs[q] for q in after[cell])
        if theirs.keys() == before[cell].keys():
            assert after[cell] is theirs  # shared: scored once


def test_true_cue_gain_answers_one_question_in_four_with_its_target(small_cohort: Cohort) -> None:
    qids = [q.qid for q in small_cohort.questions]
    cell = Cell("qwen-max", "cue-spatial-true", 16)
    others = {c: t for c, t in hand_made().items() if c.condition != "cue-colour-true"}
    before: AnswerSet = {cell: {q: (UNPARSED, ring(16)) for q in qids}, **others}
    after = transform("true-cue-gain", before, small_cohort)
    true_cue = {c for c in before if c.condition in ("cue-spatial-true", "cue-colour-true")}
    unchanged_cells(before, after, true_cue)
    chosen = [q for q in qids if after[cell][q] != before[cell][q]]
    assert 0 < len(chosen) < len(qids) / 2  # about one in four
    for q in chosen:
        (text,) = after[cell][q]
        scored = score_polygon(text, small_cohort.referent(q).reference(16))
        assert scored.parseable and scored.iou > 0.9
    assert transform("true-cue-gain", before, small_cohort)[cell] == after[cell]  # fixed


def test_sub_additive_refuses_every_attempt_of_both_wrong_cues() -> None:
    before = hand_made()
    after = transform("sub-additive", before)
    changed = {c for c in before if c.condition == "cue-both-wrong"}
    unchanged_cells(before, after, changed)
    for cell in changed:
        attempts = attempts_allowed(cell.configuration)
        assert after[cell] == dict.fromkeys(before[cell], (REFUSAL,) * attempts)


def test_rise_keeps_every_other_vertex_of_the_n16_answer() -> None:
    before = hand_made()
    after = transform("rise", before)
    changed = {c for c in before if c.budget == 8}
    unchanged_cells(before, after, changed)
    source = before[Cell("doubao", "base", 16)]
    rise = after[Cell("doubao", "base", 8)]
    assert rise["q2"][0] == UNPARSED
    for q in rise:
        parsed = parse_answer(rise[q][-1], 8)
        full = parse_answer(source[q][-1], 16)
        assert parsed is not None and full is not None and parsed == full[0::2]


def test_difficulty_permutes_the_labels_and_no_answer() -> None:
    labels = ["easy"] * 30 + ["medium"] * 20 + ["hard"] * 10
    questions = {f"q{i:02}": Question(d, "D1", "Q1", "RS1", "g") for i, d in enumerate(labels)}
    data = ReportData(ViewScores("iou2"), ViewScores("best_effort"), questions, {})
    control = control_named("difficulty")
    assert control.transform(hand_made(), None) == hand_made()  # type: ignore[arg-type]
    after = control.relabel(data)
    assert after.headline is data.headline
    moved = [q for q in questions if after.questions[q].difficulty != questions[q].difficulty]
    assert len(moved) > 10
    assert sorted(q.difficulty for q in after.questions.values()) == sorted(labels)
    assert control.relabel(data) == after  # seeded


def test_every_control_names_known_claims_and_each_claim_one_prefix() -> None:
    assert len({c.name for c in CONTROLS}) == len(CONTROLS)
    for c in CONTROLS:
        assert c.claims and set(c.claims) <= set(CLAIM_NAMES), c.name
    assert all(
        sum(a.startswith(b) for b in CLAIM_NAMES) == 1 for a in CLAIM_NAMES
    )  # no prefix is another's


# -- scoring --------------------------------------------------------------------------------------


def test_scoring_a_control_rescores_only_the_cells_it_changed(small_cohort: Cohort) -> None:
    qids = [q.qid for q in small_cohort.questions[:6]]
    texts = {q: target_text(small_cohort, q, 32) for q in qids}
    answer_set: AnswerSet = {
        Cell(name, "base", n): {q: (UNPARSED, target_text(small_cohort, q, n)) for q in qids}
        for name in ("gemini-high", "kimi")
        for n in (32, 64)
    }
    with Scorer(small_cohort, workers=0) as scorer:
        first = scorer.report_data(answer_set)
        assert scorer.scored == 8  # four cells, each scored and re-scored
        after = controlled(control_named("collapse"), answer_set, scorer)
        assert scorer.scored == 12  # the two N = 64 cells, scored and re-scored
        scorer.report_data(dict(answer_set))
        assert scorer.scored == 12
    cell = Cell("kimi", "base", 64)
    assert first.headline.polygons[cell][qids[0]].iou > 0.9  # type: ignore[union-attr]
    collapsed = after.headline.polygons[cell][qids[0]]
    assert collapsed is not None and collapsed.parseable
    assert collapsed == score_polygon(
        subdivided(texts[qids[0]], 32), small_cohort.referent(qids[0]).reference(64)
    )
    assert after.rescored.ious["phase0"][cell][qids[0]] == pytest.approx(collapsed.iou)


@pytest.fixture(scope="module")
def stored(
    tmp_path_factory: pytest.TempPathFactory, small_cohort: Cohort
) -> Iterator[tuple[Path, AnswerSet]]:
    """The paper's grid answered by the ``paper`` profile on the small cohort, written to a
    store as a run writes it (each attempt's row, scored by the run's scorer) and re-scored."""
    answer_set = answers(small_cohort, "paper", 0, workers=0)
    path = tmp_path_factory.mktemp("controls") / "exp.duckdb"
    write_cohort(path, small_cohort)
    with Store(path) as store:
        names = sorted({c.configuration for c in answer_set})
        store.register(
            [Registration(n, "p" * 64, n, "m", attempts_allowed(n), "{}") for n in names],
            [
                GridRow(
                    c.configuration, c.condition, c.budget, q, attempts_allowed(c.configuration)
                )
                for c, by_q in answer_set.items()
                for q in by_q
            ],
        )
        rows = [
            attempt_row(q, k, configuration=c.configuration, condition=c.condition,
                        budget=c.budget, answer=text, parseable=parses(text, c.budget))
            for c, by_q in answer_set.items()
            for q, attempts in by_q.items()
            for k, text in enumerate(attempts)
        ]  # fmt: skip
        store.write_responses(rows)
        scorer = RunScorer(small_cohort)
        while jobs := store.score_queue.take(2000):
            store.repository.write_scores(*scorer.score(jobs))
    rescore(path)
    yield path, answer_set


def test_a_stores_answers_scored_in_process_read_as_the_report_reads_it(
    stored: tuple[Path, AnswerSet],
) -> None:
    path, made = stored
    cohort, answer_set = answers_from_store(path)
    assert answer_set == made
    mine = score(answer_set, cohort)
    with read_only(path) as con:
        theirs = in_order(load_report_data(con, path))
    for view in ("headline", "best_effort"):
        a, b = getattr(mine, view), getattr(theirs, view)
        assert (a.polygons, a.boxes, a.grid) == (b.polygons, b.boxes, b.grid), view
    for reference, by_cell in mine.rescored.ious.items():
        for cell, ious in by_cell.items():
            assert ious == pytest.approx(theirs.rescored.ious[reference][cell])
    assert mine.questions == theirs.questions
    ours, store = findings(mine), findings(theirs)
    assert [(f.claim, f.verdict, f.here) for f in ours] == [
        (f.claim, f.verdict, f.here) for f in store
    ]
    assert sorted(claim_name(f.claim) for f in ours) == sorted(CLAIM_NAMES)
