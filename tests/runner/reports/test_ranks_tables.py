"""Table 1's Pooled and Mean rows and its marks, the rank-stability table and the
subdivision-only slice, against figures computed by hand on hand-made scores."""

from __future__ import annotations

import dataclasses
import math
import re

from rich.console import Console

from conditions import BOX
from runner.reports import (
    Cell,
    Question,
    ReportData,
    ReportTable,
    ViewScores,
    best_and_second,
    fitting_table,
    rank_stability,
    rank_stability_table,
    render,
    rich_table,
    subdivision_contrast,
    subdivision_contrasts,
    subdivision_table,
    table1,
    table5,
)
from scoring import BoxScore, PolygonScore

Ious = list[float | None]  # one question each (q0, q1, …); None: no parseable answer


def _score(iou: float | None) -> PolygonScore | None:
    if iou is None:
        return None
    return PolygonScore(True, iou=iou, iou_part=iou, iou_union=iou, iou_cont=iou, legal=True,
                        legal_iou=iou, sel=True)  # fmt: skip


def _data(
    cells: dict[tuple[str, int], Ious],
    *,
    running: dict[tuple[str, int], int] | None = None,
    boxes: dict[str, list[BoxScore | None]] | None = None,
    fidelity: dict[int, float] | None = None,
    part_vertices: dict[str, int] | None = None,
) -> ReportData:
    """Base cells of settled questions; ``running`` adds that many unsettled ones to a cell."""
    view = ViewScores("iou2")
    for (configuration, n), ious in cells.items():
        cell = Cell(configuration, "base", n)
        view.polygons[cell] = {f"q{i}": _score(v) for i, v in enumerate(ious)}
        view.grid[cell] = len(ious) + (running or {}).get((configuration, n), 0)
    for configuration, scores in (boxes or {}).items():
        cell = Cell(configuration, "base", BOX)
        view.boxes[cell] = {f"q{i}": s for i, s in enumerate(scores)}
        view.grid[cell] = len(scores)
    return ReportData(view, ViewScores("best_effort"), {}, fidelity or {},
                      part_vertices=part_vertices or {})  # fmt: skip


def _rows(t: ReportTable) -> dict[tuple[str, str], dict[str, str]]:
    return {(r[0], r[1]): dict(zip(t.columns, r, strict=True)) for r in t.rows}


# -- Table 1: Pooled, Mean, marks ---------------------------------------------------------------


def _box(iou: float, c8: float, c16: float) -> BoxScore:
    return BoxScore(True, iou, {8: PolygonScore(True, iou=c8), 16: PolygonScore(True, iou=c16)})


def _three() -> ReportData:
    """a and b at N=8 and 16, c at N=8 only; C_8 = 50, C_16 = 100; a and b have box cells.

    Per cell (fixed / parseable-only):
    a/8  [.6, .4]    IoU 50.0/50.0  IoU_n 100.0/100.0  Acc@.5 50.0/50.0    Acc@.9 0.0/0.0
    a/16 [.8, —]     IoU 40.0/80.0  IoU_n  40.0/80.0   Acc@.5 50.0/100.0
    b/8  [.5, .5]    IoU 50.0/50.0  IoU_n 100.0/100.0  Acc@.5 100.0/100.0  Acc@.9 0.0/0.0
    b/16 [.9, .7]    IoU 80.0/80.0  IoU_n  80.0/80.0   Acc@.5 100.0/100.0
    c/8  [.2, —]     IoU 10.0/20.0  IoU_n  20.0/40.0   Acc@.5 0.0/0.0      Acc@.9 0.0/0.0
    Boxes: a [.6 (controls .5 at 8, .3 at 16), .4 (.3, .1)]: Acc@.5 50.0/50.0, control 40.0
    at 8, 20.0 at 16; b [.7 (.6, .2), —]: Acc@.5 50.0/100.0, control 30.0 at 8, 10.0 at 16.
    """
    return _data(
        {
            ("a", 8): [0.6, 0.4],
            ("a", 16): [0.8, None],
            ("b", 8): [0.5, 0.5],
            ("b", 16): [0.9, 0.7],
            ("c", 8): [0.2, None],
        },
        boxes={"a": [_box(0.6, 0.5, 0.3), _box(0.4, 0.3, 0.1)], "b": [_box(0.7, 0.6, 0.2), None]},
        fidelity={8: 50.0, 16: 100.0},
    )


def test_pooled_rows_pool_every_answer_of_a_configuration() -> None:
    rows = _rows(table1(_three()))
    a, b, c = rows["a", "Pooled"], rows["b", "Pooled"], rows["c", "Pooled"]
    assert a["Questions"] == "4"
    assert a["IoU"] == "45.0 / 60.0"  # (60 + 40 + 80 + 0) / 4; / 3
    # Per answer with its own C_N: (120 + 80 + 80 + 0) / 4 = 70; / 3 = 93.3 (a mean of the
    # budgets' IoU_n would say 90.0 for parseable-only).
    assert a["IoU_n"] == "70.0 / 93.3"
    assert a["Acc@0.5"] == "50.0 / 66.7"  # .6 and .8 of 4; of 3
    assert a["Acc@0.75"] == "25.0 / 33.3"  # .8
    assert a["Box Acc@0.5"] == "50.0 / 50.0"
    assert a["Box control IoU"] == "30.0"  # (50 + 30 + 30 + 10) / 4
    assert (b["IoU"], b["IoU_n"], b["Acc@0.9"]) == ("65.0 / 65.0", "90.0 / 90.0", "25.0 / 25.0")
    assert b["Box control IoU"] == "20.0"  # (60 + 20 + 0 + 0) / 4
    assert (c["IoU"], c["IoU_n"], c["Box Acc@0.5"]) == ("10.0 / 20.0", "20.0 / 40.0", "—")


def test_mean_rows_average_configurations_and_leave_out_missing_cells() -> None:
    t = table1(_three())
    assert [r[:2] for r in t.rows][-3:] == [("Mean", "8"), ("Mean", "16"), ("Mean", "Pooled")]
    rows = _rows(t)
    m8, m16, mp = rows["Mean", "8"], rows["Mean", "16"], rows["Mean", "Pooled"]
    assert m8["Questions"] == "—"
    assert m8["IoU"] == "36.7 / 40.0"  # (50 + 50 + 10) / 3; (50 + 50 + 20) / 3
    assert m8["IoU_n"] == "73.3 / 80.0"  # (100 + 100 + 20) / 3; (100 + 100 + 40) / 3
    assert m8["Acc@0.5"] == "50.0 / 50.0"  # (50 + 100 + 0) / 3
    assert m8["Box Acc@0.5"] == "50.0 / 75.0"  # a and b only: c has no box cell (—)
    assert m8["Box control IoU"] == "35.0"  # (40 + 30) / 2
    assert m16["IoU"] == "60.0 / 80.0"  # a and b: c has no N=16 cell
    assert mp["IoU"] == "40.0 / 48.3"  # (45 + 65 + 10) / 3; (60 + 65 + 20) / 3
    assert mp["Box control IoU"] == "25.0"  # (30 + 20) / 2
    assert "Mean rows leave out N=16: c (no cell)" in t.notes


def test_marks_go_to_best_and_second_by_the_fixed_value() -> None:
    t = table1(_three())
    index = {(r[0], r[1]): i for i, r in enumerate(t.rows)}
    col = {c: j for j, c in enumerate(t.columns)}

    def marks(column: str) -> dict[tuple[str, str], str]:
        rows = {i: key for key, i in index.items()}
        return {rows[i]: m for (i, j), m in t.marks.items() if j == col[column]}

    # IoU: a and b tie at N=8 (both best) and c is second; b then a at N=16 and Pooled.
    assert marks("IoU") == {
        ("a", "8"): "best", ("b", "8"): "best", ("c", "8"): "second",
        ("b", "16"): "best", ("a", "16"): "second",
        ("b", "Pooled"): "best", ("a", "Pooled"): "second",
    }  # fmt: skip
    # Acc@0.9 at N=8 is 0.0 for all three: a full tie marks nothing.
    assert ("a", "8") not in marks("Acc@0.9")
    # The box control: a 40.0 best, b 30.0 second, c's "—" never marked.
    assert {k: v for k, v in marks("Box control IoU").items() if k[1] == "8"} == {
        ("a", "8"): "best",
        ("b", "8"): "second",
    }
    assert not any(key[0] == "Mean" for key in index if (index[key], 3) in t.marks)


def test_a_thinking_off_ablation_gets_rows_of_its_own_never_marked_nor_averaged() -> None:
    """Issue 40: the paper's Qwen-off row. a runs thinking-off at N=8 ([.9, .7]: IoU 80.0,
    above every base cell) with a box cell; its rows follow a's Pooled."""
    data = _data({("a", 8): [0.6, 0.4], ("b", 8): [0.5, 0.3]})
    view = data.headline
    off = Cell("a", "thinking-off", 8)
    view.polygons[off] = {"q0": _score(0.9), "q1": _score(0.7)}
    view.grid[off] = 2
    box = Cell("a", "thinking-off", BOX)
    view.boxes[box] = {"q0": _box(0.6, 0.5, 0.3), "q1": None}
    view.grid[box] = 2
    t = table1(data)
    keys = [r[:2] for r in t.rows]
    assert keys == [
        ("a", "8"), ("a", "Pooled"), ("a (thinking-off)", "8"), ("a (thinking-off)", "Pooled"),
        ("b", "8"), ("b", "Pooled"), ("Mean", "8"), ("Mean", "Pooled"),
    ]  # fmt: skip
    rows = _rows(t)
    assert rows["a (thinking-off)", "8"]["IoU"] == "80.0 / 80.0"
    assert rows["a (thinking-off)", "Pooled"]["Box Acc@0.5"] == "50.0 / 100.0"
    assert rows["Mean", "8"]["IoU"] == "45.0 / 45.0"  # a 50.0 and b 40.0; not the ablation
    iou = t.columns.index("IoU")
    marked = {keys[i]: m for (i, j), m in t.marks.items() if j == iou}
    assert marked == {("a", "8"): "best", ("b", "8"): "second",
                      ("a", "Pooled"): "best", ("b", "Pooled"): "second"}  # fmt: skip
    assert any("Qwen-off ablation" in note for note in t.notes)
    assert not any("Qwen-off" in note for note in table1(_three()).notes)


def test_incomplete_cells_are_neither_marked_nor_averaged() -> None:
    """x/8 [.5] is complete; y/8 has [.9] settled and one question running."""
    t = table1(_data({("x", 8): [0.5], ("y", 8): [0.9]}, running={("y", 8): 1}))
    rows = _rows(t)
    assert rows["y", "8"]["Questions"] == "1/2*"
    assert rows["Mean", "8"]["IoU"] == "50.0 / 50.0"  # x alone
    assert t.marks == {}  # one complete configuration: nothing to compare
    assert "Mean rows leave out N=8: y (incomplete); Pooled: y (incomplete)" in t.notes


def test_table5_marks_best_and_second_per_slice_label_over_complete_configurations() -> None:
    """q0 is easy, q1 hard. Fixed IoU on easy: a 60, b 50, c 20, d 99; on hard: a 40, b 90,
    c 10, d 99. d has a question running: never marked, however high."""
    data = _data(
        {("a", 8): [0.6, 0.4], ("b", 8): [0.5, 0.9], ("c", 8): [0.2, 0.1], ("d", 8): [0.99, 0.99]},
        running={("d", 8): 1},
    )
    questions = {
        "q0": Question("easy", "D1", "Q1", "RS1", "animal"),
        "q1": Question("hard", "D2", "Q2", "RS2", "animal"),
    }
    t = table5(dataclasses.replace(data, questions=questions))
    marked = {(t.rows[i][0], t.rows[i][2]): m for (i, j), m in t.marks.items()}
    assert {j for _, j in t.marks} == {t.columns.index("IoU")}
    assert {k: m for k, m in marked.items() if k[1] in ("easy", "hard")} == {
        ("a", "easy"): "best", ("b", "easy"): "second",
        ("b", "hard"): "best", ("a", "hard"): "second",
    }  # fmt: skip
    # Each label of each slice is ranked on its own: D1 as easy, D2 as hard.
    assert marked["a", "D1"] == "best" and marked["b", "D2"] == "best"
    assert not any(k[0] in ("c", "d") for k in marked)
    assert any("best / second configuration per slice label" in note for note in t.notes)


def test_best_and_second_ties_on_the_printed_value() -> None:
    assert best_and_second({"a": 50.04, "b": 49.96, "c": 20.0, "d": math.nan}) == {
        "a": "best",
        "b": "best",
        "c": "second",
    }
    assert best_and_second({"a": 1.0}) == {}
    assert best_and_second({"a": 3.0, "b": 3.0}) == {}


def test_marks_render_bold_and_underlined_in_every_format() -> None:
    t = table1(_three())
    md = render(t, "markdown")
    assert "| c | 8 | 2 | <u>10.0 / 20.0</u> |" in md
    assert "| a | 8 | 2 | **50.0 / 50.0** |" in md
    tex = render(t, "latex")
    assert r"a & 8 & 2 & \textbf{50.0 / 50.0} &" in tex
    assert r"c & 8 & 2 & \underline{10.0 / 20.0} &" in tex
    csv = render(t, "csv")
    assert "a,8,,2,50.0,50.0," in csv and "**" not in csv and "<u>" not in csv
    console = Console(record=True, width=400, force_terminal=True, color_system="standard")
    console.print(rich_table(t))
    styled = console.export_text(styles=True)
    assert "\x1b[1m50.0 / 50.0\x1b[0m" in styled  # bold
    assert "\x1b[4m10.0 / 20.0\x1b[0m" in styled  # underline


def test_unmarked_tables_render_as_before() -> None:
    t = ReportTable("t", "T", ("A", "B"), (("x|y", "1.0"),))
    assert render(t, "markdown").splitlines()[4] == r"| x\|y | 1.0 |"
    assert r"x|y & 1.0 \\" in render(t, "latex")


# -- rank stability ---------------------------------------------------------------------------


def _ranked() -> ReportData:
    """p, q, r at N = 8, 16, 32; s lacks N=32 and is not ranked.

    fixed  IoU           Acc@.25         Acc@.5         Acc@.75
           8   16  32    8   16  32      8   16  32     8   16  32
    p     80   70  50   100 100 100    100 100 100     50  50   0   ([.9,.7] [.8,.6] [.5,.5])
    q     50   50  60   100 100 100     50  50  50      0   0  50   ([.6,.4] [.6,.4] [.9,.3])
    r     10   20  10     0  50   0      0   0   0      0   0   0   ([.2,—] [.3,.1] [.1,.1])
    Means: IoU p 66.7 > q 53.3 > r 13.3; Acc@.25 p 100 = q 100 > r 16.7; Acc@.5 p 100 > q 50
    > r 0; Acc@.75 p 33.3 > q 16.7 > r 0.
    IoU at 32: q 60 above p 50 (1 inversion); Acc@.75 at 32: q 50 above p 0 (r ties p: none).
    """
    return _data(
        {
            ("p", 8): [0.9, 0.7],
            ("p", 16): [0.8, 0.6],
            ("p", 32): [0.5, 0.5],
            ("q", 8): [0.6, 0.4],
            ("q", 16): [0.6, 0.4],
            ("q", 32): [0.9, 0.3],
            ("r", 8): [0.2, None],
            ("r", 16): [0.3, 0.1],
            ("r", 32): [0.1, 0.1],
            ("s", 8): [1.0],
            ("s", 16): [1.0],
        }
    )


def test_rank_stability_counts_inversions_against_the_mean_ordering() -> None:
    result = rank_stability(_ranked())
    iou = result["IoU"]
    assert iou.reference == ("p", "q", "r")
    assert [b.budget for b in iou.budgets] == [8, 16, 32]
    assert [b.inversions for b in iou.budgets] == [(), (), (("p", "q"),)]
    assert iou.budgets[2].ordering == ("q", "p", "r")
    assert (iou.total_inversions, iou.one_ordering) == (1, False)
    acc5 = result["Acc@0.5"]
    assert (acc5.reference, acc5.total_inversions, acc5.one_ordering) == (("p", "q", "r"), 0, True)
    assert result["Acc@0.25"].one_ordering
    assert result["Acc@0.75"].total_inversions == 1
    assert iou.left_out == {"s": "no cell at N=32"}


def test_rank_stability_table_names_each_inversion() -> None:
    t = rank_stability_table(_ranked())
    rows = _rows(t)
    assert rows["IoU", "mean"]["Ordering"] == "p > q > r"
    assert rows["IoU", "8"]["Inversions vs reference"] == "0"
    assert rows["IoU", "32"]["Ordering"] == "q > p > r"
    assert rows["IoU", "32"]["Inversions vs reference"] == "1: q above p"
    assert rows["IoU", "all"]["Ordering"] == "one ordering across all budgets: no"
    assert rows["IoU", "all"]["Inversions vs reference"] == "1"
    assert rows["Acc@0.5", "all"]["Ordering"] == "one ordering across all budgets: yes"
    assert rows["Acc@0.25", "mean"]["Ordering"] == "p = q > r"
    assert rows["Acc@0.75", "8"]["Ordering"] == "p > q = r"
    assert len(t.rows) == 4 * (1 + 3 + 1)
    assert any("a tie is no inversion" in n for n in t.notes)
    assert "not ranked: s (no cell at N=32)" in t.notes


def test_a_running_cell_keeps_its_configuration_out_of_the_ranks() -> None:
    data = _data({("p", 8): [0.5], ("q", 8): [0.9]}, running={("q", 8): 1})
    assert rank_stability(data)["IoU"].reference == ("p",)
    assert "not ranked: q (incomplete at N=8)" in rank_stability_table(data).notes


# -- the subdivision-only slice -------------------------------------------------------------------


def _subdivided(part_vertices: dict[str, int] | None = None) -> ReportData:
    """Parts: q0 20 and q1 32 vertices (the slice), q2 40, q3 100.

    a: 32 [.75, .5, .5, .75], 64 [.5, .25, .25, —]: differences −25, −25, −25, −75.
    b: 32 [.5, .75, .5, .5],  64 [.75, .5, .5, .5]: differences +25, −25, 0, 0; one more b/64
       question is still running. c has no N=64 cell.
    """
    return _data(
        {
            ("a", 32): [0.75, 0.5, 0.5, 0.75],
            ("a", 64): [0.5, 0.25, 0.25, None],
            ("b", 32): [0.5, 0.75, 0.5, 0.5],
            ("b", 64): [0.75, 0.5, 0.5, 0.5],
            ("c", 32): [0.5],
        },
        running={("b", 64): 1},
        part_vertices={"q0": 20, "q1": 32, "q2": 40, "q3": 100}
        if part_vertices is None
        else part_vertices,
    )


def test_subdivision_contrast_is_paired_on_the_slice() -> None:
    a = subdivision_contrast(_subdivided(), "a")
    assert a is not None and a.complete
    s = a.subdivision
    # q0, q1: 32 → (75 + 50) / 2 = 62.5, 64 → (50 + 25) / 2 = 37.5; both differ by −25, so
    # every resample's mean is −25 and the interval excludes 0.
    assert (s.questions, s.iou_low, s.iou_high) == (2, 62.5, 37.5)
    assert (s.contrast.delta, s.contrast.low, s.contrast.high) == (-25.0, -25.0, -25.0)
    every = a.all_questions
    # 32: (75 + 50 + 50 + 75) / 4 = 62.5; 64: (50 + 25 + 25 + 0) / 4 = 25.0; Δ −37.5, within
    # [−75, −25] (the extremes of the differences).
    assert (every.questions, every.iou_low, every.iou_high) == (4, 62.5, 25.0)
    assert every.contrast.delta == -37.5
    assert -75.0 <= every.contrast.low <= -37.5 <= every.contrast.high <= -25.0
    b = subdivision_contrast(_subdivided(), "b")
    assert b is not None and not b.complete
    # +25 and −25: Δ 0, each resample's mean is −25, 0 or +25, so the interval spans 0.
    assert b.subdivision.contrast.delta == 0.0
    assert b.subdivision.contrast.low == -25.0 and b.subdivision.contrast.high == 25.0
    assert set(subdivision_contrasts(_subdivided())) == {"a", "b"}


def test_subdivision_table_rows_and_notes() -> None:
    t = subdivision_table(_subdivided())
    assert t.rows[:2] == (
        ("a", "V ≤ 32", "2", "62.5", "37.5", "-25.0 [-25.0, -25.0]"),
        ("a", "all", "4", "62.5", "25.0", t.rows[1][5]),
    )
    assert t.rows[1][5].startswith("-37.5 [")
    assert t.rows[2] == ("b", "V ≤ 32", "2*", "62.5", "62.5", "+0.0 [-25.0, +25.0]")
    assert "no N=32 or N=64 base cell: c" in t.notes
    assert any(n.startswith("* a cell has unsettled questions (") for n in t.notes)


def test_without_vertex_counts_the_slice_says_so_and_has_no_rows() -> None:
    data = _subdivided(part_vertices={})
    t = subdivision_table(data)
    assert t.rows == ()
    assert "no rows: the selected parts' vertex counts were not loaded" in t.notes
    assert subdivision_contrast(data, "a") is None and subdivision_contrasts(data) == {}
    for kind in ("markdown", "csv", "latex"):
        assert render(t, kind)


def test_a_narrow_terminal_keeps_the_marks_on_the_fixed_values() -> None:
    """Split for 80 columns, the fixed table keeps the marks (they rank the fixed value) and
    the parseable-only one has none."""
    console = Console(record=True, width=80, force_terminal=True, color_system="standard")
    console.print(fitting_table(table1(_three()), console))
    styled = console.export_text(styles=True)
    # The part titles wrap at 80 columns: "—" may end one line (and its style) and
    # "parseable-only" start the next.
    after_title = styled.split("parseable-only", 1)[1]
    fixed, parseable = re.split(r"—(?:\s|\x1b\[[0-9;]*m)+parseable-only", after_title, maxsplit=1)
    rows = "\n".join(line for line in parseable.splitlines() if line.startswith("│"))
    assert "\x1b[1m50.0\x1b[0m" in fixed and "\x1b[4m10.0\x1b[0m" in fixed
    assert rows and "\x1b[1m" not in rows and "\x1b[4m" not in rows
