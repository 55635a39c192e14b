"""The cohort section's tables, their figures computed by hand: C_N and what each budget does
to the selected parts, questions per slice, the multi-part statistics and the answer length
against the allowance."""

from __future__ import annotations

from dataclasses import replace

from runner.reports import (
    Allowance,
    LongestAnswer,
    Question,
    ReportData,
    Shape,
    StoredCohort,
    all_tables,
    parts_table,
    slices_table,
    targets_table,
)

WIDE = (0, 0, 10, 0, 20, 0, 20, 10, 0, 10)  # 200 px, 5 vertices
SMALL = (30, 0, 40, 0, 40, 10, 30, 10)  # 100 px, 4 vertices
INNER = (0, 0, 5, 0, 10, 0, 10, 10, 5, 10, 0, 10)  # 100 px, 6 vertices
OUTER = (0, 0, 20, 0, 20, 20, 0, 20)  # 400 px, 4 vertices, covers INNER
NINE = tuple(c for k in range(9) for c in (k, k * k % 5))  # 9 vertices


def _shape(*parts: tuple[int, ...]) -> Shape:
    return Shape(tuple(tuple(float(c) for c in p) for p in parts), 64, 32)


SHAPES = {"a": _shape(SMALL, WIDE), "b": _shape(OUTER, INNER), "c": _shape(NINE),
          "d": _shape(SMALL)}  # fmt: skip
# Selected parts of 5, 6, 9 and 4 vertices; a: share 2/3 and largest, b: 1/4 and not.


def _with(data: ReportData, **cohort: object) -> ReportData:
    return replace(data, cohort=StoredCohort(shapes=SHAPES, **cohort))  # type: ignore[arg-type]


def test_targets_table_gives_c_n_beside_the_paper_s_and_what_each_budget_does(
    data: ReportData,
) -> None:
    table = targets_table(replace(_with(data), fidelity={8: 88.04, 16: 96.24}))
    assert table.columns == ("N", "C_N", "Paper C_N", "Simplified", "Up-sampled", "As listed")
    assert table.rows == (
        ("8", "88.0", "88.6", "1", "3", "0"),  # only the 9-vertex part is simplified at 8
        ("16", "96.2", "96.2", "0", "4", "0"),
        ("24", "—", "98.3", "0", "4", "0"),  # no stored C_N: —
        ("32", "—", "99.0", "0", "4", "0"),
        ("64", "—", "99.4", "0", "4", "0"),
    )
    assert table.label_columns == 1


def test_targets_table_names_figure_1_s_referent(data: ReportData) -> None:
    example = data.cohort.example
    assert example is not None
    (note,) = [n for n in targets_table(data).notes if n.startswith("Figure 1")]
    assert example.qid in note and f"of {example.shape.vertices} vertices" in note
    assert f"{len(example.shape.parts)} parts" in note


def _question(difficulty: str, d: str, q: str, rs: str, group: str) -> Question:
    return Question(difficulty, d, q, rs, group)


def test_slices_table_counts_questions_per_label_in_the_slices_order(data: ReportData) -> None:
    questions = {
        "q1": _question("hard", "D3+", "Q3", "RS1", "person"),
        "q2": _question("easy", "D1", "Q1", "RS3", "animal"),
        "q3": _question("medium", "D1", "Q3", "RS2", "person"),
        "q4": _question("easy", "D2", "Q2", "RS3", "person"),
    }
    table = slices_table(replace(data, questions=questions))
    assert table.rows == (
        ("difficulty", "easy", "2", "50.0", "—"),
        ("difficulty", "medium", "1", "25.0", "—"),
        ("difficulty", "hard", "1", "25.0", "—"),
        ("D", "D1", "2", "50.0", "705"),
        ("D", "D2", "1", "25.0", "276"),
        ("D", "D3+", "1", "25.0", "519"),
        ("Q", "Q1", "1", "25.0", "—"),
        ("Q", "Q2", "1", "25.0", "—"),
        ("Q", "Q3", "2", "50.0", "—"),
        ("RS", "RS1", "1", "25.0", "—"),
        ("RS", "RS2", "1", "25.0", "—"),
        ("RS", "RS3", "2", "50.0", "—"),
        ("group", "animal", "1", "25.0", "—"),
        ("group", "person", "3", "75.0", "—"),
    )
    assert table.notes[0].startswith("4 questions")


def test_parts_table_gives_the_multi_part_statistics_and_the_answer_length(
    data: ReportData,
) -> None:
    longest = LongestAnswer(523, "qwen-max", "base", 64, "refcoco:7", 1)
    allowances = (Allowance(4096, "gemini"), Allowance(1280, "kimi"))
    table = parts_table(_with(data, longest_legal=longest, allowances=allowances,
                              unrecorded=("doubao",)))  # fmt: skip
    assert table.rows == (
        ("Referents of more than one part", "questions (of 4)", "2", "148"),
        # (2/3 + 1/4) / 2 = 45.83…%; one of the two is the largest
        ("Selected part's mean share of the union's area", "% of those 2", "45.8", "71.76"),
        ("Selected part is also the largest part", "% of those 2", "50.0", "85.14"),
        ("Longest legal answer", "characters", "523", "520"),
        ("Tightest output allowance", "tokens (kimi)", "1280", "1280"),
    )
    notes = " ".join(table.notes)
    assert "qwen-max, base, N = 64, refcoco:7, attempt 1" in notes
    assert "No output allowance recorded for: doubao" in notes


def test_parts_table_without_answers_or_allowances_says_so(data: ReportData) -> None:
    table = parts_table(_with(data))
    assert table.rows[3:] == (
        ("Longest legal answer", "characters", "—", "520"),
        ("Tightest output allowance", "tokens (none recorded)", "—", "1280"),
    )


def test_the_report_ends_with_the_cohort_section(data: ReportData) -> None:
    names = [t.name for t in all_tables(data)]
    assert names[-3:] == ["cohort_targets", "cohort_slices", "cohort_parts"]
    assert all(t.rows for t in all_tables(data)[-3:])
