"""The cohort as the report reads it: the multi-part statistics on hand-made referents whose
areas are known, Figure 1's referent by its rule, and the longest legal answer and the
output allowances from a hand-made store."""

from __future__ import annotations

import json
import math

import pytest

from conditions import BOX, Cohort, write_cohort
from runner.reports import (
    Allowance,
    LongestAnswer,
    ReportData,
    Shape,
    StoredCohort,
    example_qid,
    load_report_data,
    part_share,
    part_statistics,
)
from runner.reports._cohort import resampling
from runner.store import GridRow, Registration, ScoreRow, Store, read_only
from tests.runner.store.rows import attempt_row

# Rectangles on pixel corners: pycocotools samples pixel centres, so an a×b rectangle fills
# a·b pixels exactly.
WIDE = (0, 0, 10, 0, 20, 0, 20, 10, 0, 10)  # 20×10 = 200 px, 5 listed vertices
SMALL = (30, 0, 40, 0, 40, 10, 30, 10)  # 10×10 = 100 px, 4 listed vertices
INNER = (0, 0, 5, 0, 10, 0, 10, 10, 5, 10, 0, 10)  # 10×10 = 100 px, 6 listed vertices
OUTER = (0, 0, 20, 0, 20, 20, 0, 20)  # 20×20 = 400 px, 4 listed, covers INNER


def _shape(*parts: tuple[int, ...]) -> Shape:
    return Shape(tuple(tuple(float(c) for c in p) for p in parts), 64, 32)


def test_the_selected_part_s_share_of_the_union_and_whether_it_is_the_largest() -> None:
    # WIDE lists the most vertices: 200 of the union's 300 px, and the larger part.
    share = part_share(_shape(SMALL, WIDE))
    assert share.share == pytest.approx(2 / 3) and share.largest
    # INNER lists the most vertices but lies inside OUTER: 100 of a 400 px union (the union,
    # not the parts' sum: 500), and not the largest.
    share = part_share(_shape(OUTER, INNER))
    assert (share.share, share.largest) == (0.25, False)
    # A tie for the largest counts as the largest.
    assert part_share(_shape((0, 0, 5, 0, 10, 0, 10, 10, 0, 10), SMALL)).largest


def test_part_statistics_count_multi_part_referents_only() -> None:
    shapes = {
        "a": _shape(SMALL, WIDE),  # share 2/3, largest
        "b": _shape(OUTER, INNER),  # share 1/4, not largest
        "c": _shape(WIDE),  # one part: not in the statistics
    }
    stats = part_statistics(shapes)
    assert (stats.questions, stats.multi_part, stats.largest) == (3, 2, 1)
    assert stats.mean_share == pytest.approx(100 * (2 / 3 + 1 / 4) / 2)  # 45.83
    assert stats.largest_percent == 50.0
    none = part_statistics({"c": _shape(WIDE)})
    assert none.multi_part == 0 and math.isnan(none.mean_share) and math.isnan(none.largest_percent)


def test_resampling_counts_what_each_budget_does_to_the_selected_parts() -> None:
    shapes = {"a": _shape(SMALL, WIDE), "b": _shape(OUTER, INNER), "c": _shape(SMALL)}
    # Selected parts of 5, 6 and 4 vertices.
    assert resampling(shapes, 5) == (1, 1, 1)  # 6 simplified, 4 up-sampled, 5 as listed
    assert resampling(shapes, 8) == (0, 3, 0)
    assert resampling(shapes, 4) == (2, 0, 1)


def _ring(vertices: int) -> tuple[int, ...]:
    """A flat ring of ``vertices`` distinct points (the rule reads only the count)."""
    return tuple(c for k in range(vertices) for c in (k, k * k % 7))


def test_figure_1_s_referent_follows_its_rule() -> None:
    shapes = {
        "a": _shape(_ring(20)),  # 8 < V < 64: the second tier
        "b": _shape(_ring(40)),  # 32 < V < 64, one part
        "c": _shape(_ring(60), _ring(4)),  # 32 < V < 64, two parts: first
        "d": _shape(_ring(47), _ring(3)),  # the same, closer to 48 vertices: chosen
        "e": _shape(_ring(100), _ring(4)),  # more than 64: last
    }
    assert example_qid(shapes) == "d"
    del shapes["d"], shapes["c"]
    assert example_qid(shapes) == "b"  # one part, but the first tier
    del shapes["b"]
    assert example_qid(shapes) == "a"
    del shapes["a"]
    assert example_qid(shapes) == "e"  # neither effect shows: drawn all the same
    assert example_qid({}) is None


def test_a_store_s_cohort_is_read_as_stored(data: ReportData, small_cohort: Cohort) -> None:
    cohort = data.cohort
    targets = {i.qid: i for i in small_cohort.instances if i.role == "target"}
    assert set(cohort.shapes) == {q.qid for q in small_cohort.questions}
    for qid, shape in cohort.shapes.items():
        assert shape.parts == targets[qid].parts
    example = cohort.example
    assert example is not None and example.qid == example_qid(cohort.shapes)
    assert example.shape == cohort.shapes[example.qid]
    assert dict(example.targets) == {
        n: small_cohort.targets[(example.qid, n, 0)] for n in (8, 16, 24, 32, 64)
    }
    question = next(q for q in small_cohort.questions if q.qid == example.qid)
    assert (example.expression, example.category) == (question.expression, question.category)
    # The small synthetic cohort has a referent of several parts whose selected part lies
    # between 32 and 64 vertices: the rule's first choice is one of those.
    assert len(example.shape.parts) > 1 and 32 < example.shape.vertices < 64
    # The hand-made store's configuration records no settings: no allowance, said so.
    assert (cohort.allowances, cohort.unrecorded, cohort.tightest) == ((), ("cfg",), None)


def _settings(tokens: int) -> str:
    return json.dumps({"provider": "qwen", "model": "m",
                       "decoding": {"max_output_tokens": tokens}})  # fmt: skip


@pytest.fixture(scope="module")
def lengths(tmp_path_factory: pytest.TempPathFactory, small_cohort: Cohort) -> ReportData:
    """Answers of known lengths: the longest (40 characters) illegal, the longest legal one
    25 characters (two of them: the first by cell wins), a 60-character box answer; three
    configurations, allowances 4096 and 1280 and one unrecorded."""
    path = tmp_path_factory.mktemp("lengths") / "exp.duckdb"
    write_cohort(path, small_cohort)
    q = sorted(x.qid for x in small_cohort.questions)[:3]
    names = ("big", "tight", "unknown")
    settings = (_settings(4096), _settings(1280), "{}")
    with Store(path) as s:
        grid = [
            GridRow(configuration=c, condition="base", budget=n, qid=qid, attempts=3)
            for c in names
            for n in (8, BOX)
            for qid in q
        ]
        s.register([Registration(c, "p" * 64, "qwen", "m", 3, t)
                    for c, t in zip(names, settings, strict=True)], grid)  # fmt: skip
        answers = {(q[0], "big"): "x" * 40, (q[1], "big"): "y" * 25, (q[2], "big"): "z" * 10,
                   (q[1], "tight"): "w" * 25}  # fmt: skip
        polygons = [attempt_row(qid, budget=8, configuration=c, answer=a)
                    for (qid, c), a in answers.items()]  # fmt: skip
        s.write_responses(
            [*polygons, attempt_row(q[0], budget=BOX, configuration="big", answer="b" * 60)]
        )
        s.repository.write_scores(
            [ScoreRow(c, "base", 8, qid, 0, parseable=True, iou=0.5, legal=qid != q[0])
             for qid, c in answers]
            + [ScoreRow("big", "base", BOX, q[0], 0, parseable=True, box_iou=0.5)],
            [],
        )  # fmt: skip
    with read_only(path) as con:
        return load_report_data(con)


def test_the_longest_legal_answer_and_the_tightest_allowance(lengths: ReportData) -> None:
    cohort = lengths.cohort
    q1 = sorted(cohort.shapes)[1]
    assert cohort.longest_legal == LongestAnswer(25, "big", "base", 8, q1, 0)
    assert cohort.allowances == (Allowance(4096, "big"), Allowance(1280, "tight"))
    assert cohort.tightest == Allowance(1280, "tight")
    assert cohort.unrecorded == ("unknown",)


def test_a_store_without_legal_answers_has_no_longest_one() -> None:
    assert StoredCohort().longest_legal is None and StoredCohort().tightest is None
