"""Report tables against hand-computed values on a small hand-made store; renderings; figures."""

from __future__ import annotations

import csv
import io
import math
import re
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from conditions import CONDITION_NAMES, Cohort, write_cohort
from runner._tables import print_whole
from runner.cli import app
from runner.reports import (
    ReportData,
    ViewScores,
    all_tables,
    fitting_table,
    load_report_data,
    omitted_note,
    render,
    shown_and_omitted,
    table1,
    table2,
    table3,
    table5,
    write_figures,
)
from runner.reports._render import csv_columns
from runner.reports._tables import TABLE3_PARTS, _contrast, _fmt, _natural
from runner.store import StoreError, read_only
from scoring import Contrast


def test_table1_equals_the_hand_computed_cell(data: ReportData) -> None:
    t = table1(data)
    rows = {(r[0], r[1]): dict(zip(t.columns, r, strict=True)) for r in t.rows}
    n8 = rows["cfg", "8"]
    assert n8["Questions"] == "4"
    assert n8["IoU"] == "47.5 / 63.3"  # (50 + 80 + 0 + 60) / 4; / 3 parseable
    assert n8["Legal %"] == "50.0 / 66.7"  # q0 and q3 legal, q1 crossing, q2 none
    assert n8["Legal IoU"] == "27.5 / 36.7"  # (50 + 60) / 4; / 3
    assert n8["Acc@0.5"] == "75.0 / 100.0"  # three of four at ≥ 0.5
    assert n8["Acc@0.75"] == "25.0 / 33.3"
    # Issue 40: the views before the headline's. Attempt 0 alone: q2 and q3 unparseable (q3's
    # 0.6 is its attempt 1), so (50 + 80) / 4; / 2. Attempts 0-1 lock q3's 0.6, as IoU2 does.
    assert n8["IoU0"] == "32.5 / 65.0"
    assert n8["IoU1"] == "47.5 / 63.3"
    # The box cell: q1 answered 0.75, q0 three unparseable answers, q2 and q3 not yet.
    assert n8["Box Acc@0.5"] == "50.0 / 100.0*"
    assert n8["Box control IoU"] == "20.0*"  # q1's control 0.4 over the 2 settled
    n16 = rows["cfg", "16"]
    assert n16["Questions"] == "1/4*" and n16["IoU"] == "70.0 / 70.0"
    (note,) = [note for note in t.notes if note.startswith("* incomplete")]
    # A report never reads a running store: it says what stopped the unsettled questions.
    assert "4 requests not sent yet, 1 stopped on spent quota; `groundbench run` again" in note
    assert "running" not in note


def test_table1s_iou0_and_iou1_are_the_stores_cell_summary(store: Path, data: ReportData) -> None:
    """Issue 40: IoU0 and IoU1 were only in the store's cell_summary view; Table 1 prints
    the same figures."""
    t = table1(data)
    rows = {(r[0], r[1]): dict(zip(t.columns, r, strict=True)) for r in t.rows}
    with read_only(store) as con:
        summary = con.execute(
            "SELECT budget, view, fixed_iou, parseable_iou FROM cell_summary "
            "WHERE condition = 'base' AND budget > 0 AND view IN ('iou0', 'iou1')"
        ).fetchall()
    assert len(summary) == 4
    for budget, view, fixed, parseable in summary:
        shown = rows["cfg", str(budget)]["IoU0" if view == "iou0" else "IoU1"]
        assert shown == f"{_fmt(fixed)} / {_fmt(parseable)}"


def test_table1_pools_budgets_and_averages_only_complete_cells(data: ReportData) -> None:
    t = table1(data)
    labels = [("cfg", "8"), ("cfg", "16"), ("cfg", "Pooled")]
    assert [r[:2] for r in t.rows] == [*labels, *(("Mean", n) for _, n in labels)]
    rows = {(r[0], r[1]): dict(zip(t.columns, r, strict=True)) for r in t.rows}
    # Pooled: base/8's four answers and base/16's one settled of four.
    p = rows["cfg", "Pooled"]
    assert p["Questions"] == "5/8*"
    assert p["IoU"] == "52.0 / 65.0"  # (50 + 80 + 0 + 60 + 70) / 5; / 4 parseable
    assert p["Legal %"] == "60.0 / 75.0"  # q0@8, q3@8, q0@16 legal: 3 / 5; 3 / 4
    assert p["Acc@0.5"] == "80.0 / 100.0"  # 0.5, 0.8, 0.6, 0.7 of 5
    assert p["Box Acc@0.5"] == "50.0 / 100.0*"  # the one box cell, still incomplete
    assert p["Box control IoU"] == "20.0*"  # q1's 0.4 at N=8 and N=16 over 2 × 2 settled
    # Mean: base/8 is complete (its box columns are not); base/16 and the pool are not.
    m8 = rows["Mean", "8"]
    assert (m8["Questions"], m8["IoU"], m8["Acc@0.5"]) == ("—", "47.5 / 63.3", "75.0 / 100.0")
    assert (m8["Box Acc@0.5"], m8["Box control IoU"]) == ("—", "—")
    assert set(rows["Mean", "16"].values()) - {"Mean", "16"} == {"—"}
    assert set(rows["Mean", "Pooled"].values()) - {"Mean", "Pooled"} == {"—"}
    assert (
        "Mean rows leave out N=8: cfg (Box Acc@0.5, Box control IoU incomplete); "
        "N=16: cfg (incomplete); Pooled: cfg (incomplete)"
    ) in t.notes
    assert t.marks == {}  # one configuration: nothing to rank


def test_contrasts_are_paired_on_the_common_questions(data: ReportData) -> None:
    (row,) = table2(data).rows
    assert row == ("cfg", "no-image", "2", "15.0", "65.0", "-50.0 [-60.0, -40.0]")
    t = table3(data)
    base, no_image = t.rows
    assert base[1:3] == ("image", "base") and base[-1] == "—"
    # Its budgets (8; no 16 cell), then pooled: parse coverage and parseable-only IoU.
    assert no_image[1:] == (
        "image",
        "no-image",
        "15.0",
        "—",
        "100.0",
        "15.0",
        "-50.0 [-60.0, -40.0]",
    )
    assert t.columns[-3:] == ("Parse %", "Parseable IoU", "Δ vs base [95% CI]")
    # base over both budgets: q0-q3 at 8 (q2 unparseable) and q0 at 16: 4 of 5 parsed, and
    # (50 + 80 + 60 + 70) / 4 their IoU.
    assert base[-3:-1] == ("80.0", "65.0")


def test_table3s_parts_cover_the_13_conditions_each_once() -> None:
    parts = [c for _, conditions in TABLE3_PARTS for c in conditions]
    assert sorted(["base", *parts]) == sorted(CONDITION_NAMES)


LONG_NAMES = ("gemini-2.5-pro-preview-high", "qwen-vl-max-latest", "doubao-seed-1-6-vision")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_RULES = re.compile(r"[\s\u2500-\u257f]+")  # spaces and box-drawing characters


def _renamed(view: ViewScores, names: tuple[str, ...]) -> ViewScores:
    """``view``'s cells copied under each of ``names``: a grid of long configuration names."""
    out = ViewScores(view.view, open_requests=dict(view.open_requests))
    for name in names:
        out.polygons.update({c._replace(configuration=name): s for c, s in view.polygons.items()})
        out.boxes.update({c._replace(configuration=name): s for c, s in view.boxes.items()})
        out.grid.update({c._replace(configuration=name): n for c, n in view.grid.items()})
    return out


def _tokens(text: str) -> set[str]:
    return {t.removesuffix("*") for t in _RULES.split(text) if t}


@pytest.mark.parametrize("width", [80, 100, 120, 200])
def test_a_terminal_report_fits_its_width_and_breaks_no_number_or_word(
    data: ReportData, width: int
) -> None:
    """Every line within the terminal, nothing cut, and every number and word printed whole:
    the numbers printed are exactly those the tables hold (a number folded across two lines,
    ``70.`` over ``4``, prints others) and every word printed is one of the tables' own (a
    header folded as ``Config`` / ``uratio`` / ``n`` is not)."""
    many = replace(
        data,
        headline=_renamed(data.headline, LONG_NAMES),
        best_effort=_renamed(data.best_effort, LONG_NAMES),
    )
    tables, _ = shown_and_omitted([*all_tables(data), *all_tables(many)])
    assert len(tables) > 10
    for table in tables:
        console = Console(file=io.StringIO(), width=width, force_terminal=True, record=True)
        console.print(fitting_table(table, console))
        text = console.export_text()
        assert max(len(line) for line in text.splitlines()) <= width, (table.name, width)
        assert "…" not in text
        held = " ".join([table.title, *table.columns, *(c for r in table.rows for c in r),
                         *table.notes])  # fmt: skip
        assert set(_NUMBER.findall(text)) == set(_NUMBER.findall(held)), (table.name, width)
        extra = _tokens(text) - _tokens(held) - {"—", "fixed", "parseable-only", "(continued)"}
        assert not extra, (table.name, width, extra)


def test_a_narrow_terminal_splits_pairs_and_repeats_the_row_labels(data: ReportData) -> None:
    """At 80 columns Table 1's pairs are two tables, fixed then parseable-only, each in parts
    that start with Configuration and N; with room for every pair whole (300), one table."""
    t = table1(data)
    console = Console(file=io.StringIO(), width=80, force_terminal=True, record=True)
    console.print(fitting_table(t, console))
    text = console.export_text()
    flat = " ".join(text.split())
    assert 0 < flat.index("— fixed") < flat.index("— parseable-only")
    headers = [line for line in text.splitlines() if line.startswith("┃ Configuration")]
    assert len(headers) >= 3 and all(line.split("┃")[2].strip() == "N" for line in headers)
    assert "47.5 / 63.3" not in text
    cells = [
        c.strip() for line in text.splitlines() if line.startswith("│ cfg") for c in line.split("│")
    ]
    assert "47.5" in cells and "63.3" in cells  # the pair's two values, each in its own table
    console = Console(file=io.StringIO(), width=300, force_terminal=True, record=True)
    console.print(fitting_table(t, console))
    assert "47.5 / 63.3" in console.export_text()


def test_a_printed_zero_has_no_sign_and_slices_read_in_their_own_order(data: ReportData) -> None:
    assert (_fmt(-0.04), _fmt(-0.05), _fmt(float("nan"))) == ("0.0", "-0.1", "—")
    assert _contrast(Contrast(3, -0.04, -0.01, 2.0)) == "+0.0 [+0.0, +2.0]"
    labels = ["hard", "easy", "medium", "D3+", "D10", "D1", "D2", "RS1"]
    assert sorted(labels, key=_natural) == ["easy", "medium", "hard", "D1", "D2", "D3+", "D10",
                                            "RS1"]  # fmt: skip
    difficulties = [r[2] for r in table5(data).rows if r[1] == "difficulty"]
    assert difficulties == sorted(difficulties, key=["easy", "medium", "hard"].index)


def test_a_base_only_grid_omits_tables_2_and_3_and_says_why(data: ReportData) -> None:
    view = data.headline
    base = {c: n for c, n in view.grid.items() if c.condition == "base"}
    polygons = {c: s for c, s in view.polygons.items() if c.condition == "base"}
    headline = replace(view, grid=base, polygons=polygons)
    shown, omitted = shown_and_omitted(all_tables(replace(data, headline=headline)))
    assert "table1" in [t.name for t in shown]
    assert not {"table2", "table3"} & {t.name for t in shown}
    notes = [omitted_note(t) for t in omitted]
    assert [n.split(":")[0] for n in notes[:2]] == ["Table 2", "Table 3"]
    assert all("omitted, the grid has no condition but base" in n for n in notes[:2])


def test_every_table_renders_as_markdown_csv_and_latex(data: ReportData) -> None:
    for table in all_tables(data):
        md = render(table, "markdown")
        assert md.splitlines()[2].count("|") == len(table.columns) + 1
        parsed = list(csv.reader(io.StringIO(render(table, "csv"))))
        assert len(parsed) == len(table.rows) + 1 and all(parsed[0])  # no unnamed column
        tex = render(table, "latex")
        assert tex.count(r" \\") == len(table.rows) + 1 and "_" not in tex.replace(r"\_", "")


def test_a_piped_report_cuts_nothing(data: ReportData) -> None:
    """Redirected to a file at rich's default 80 columns: no '…', every name and header whole."""
    for table in all_tables(data):
        out = io.StringIO()  # not a terminal
        console = Console(file=out, width=80)
        print_whole(console, fitting_table(table, console))
        text = out.getvalue()
        assert "…" not in text, table.name
        words = set(text.split())
        for name in [*table.columns, *(cell for row in table.rows for cell in row[:2])]:
            assert set(name.split()) <= words, (table.name, name)


def test_every_csv_column_of_numbers_parses_as_numbers(data: ReportData) -> None:
    """A CSV holds one value per column: a number column parses as float in every row (empty
    only where the table prints —), and no other column of Tables 1-5 holds a figure."""
    figure = re.compile(r"[+-]?\d+(\.\d+)?(\*| / .*| \[.*|/\d+\*?)?")
    for table in all_tables(data):
        kinds = {c.name: c.kind for c in csv_columns(table)}
        rows = list(csv.DictReader(io.StringIO(render(table, "csv"))))
        for name, kind in kinds.items():
            values = [row[name] for row in rows]
            if kind == "number":
                assert all(v == "" or math.isfinite(float(v)) for v in values), (table.name, name)
            elif kind == "flag":
                assert set(values) <= {"true", "false"}
            elif table.name.startswith("table") and name != "N_label":
                assert not any(figure.fullmatch(v) for v in values), (table.name, name, values)
    t1 = {c.name: c.values for c in csv_columns(table1(data))}
    assert t1["IoU_fixed"][0] == "47.5" and t1["IoU_parseable"][0] == "63.3"
    assert (t1["Questions"][1], t1["Questions_total"][1], t1["Questions_incomplete"][1]) == (
        "1",
        "4",
        "true",
    )  # base/16: "1/4*"
    assert t1["N"][2] == "" and t1["N_label"][2] == "Pooled"
    t2 = {c.name: c.values for c in csv_columns(table2(data))}
    assert (t2["Δ_estimate"], t2["Δ_low"], t2["Δ_high"]) == (("-50.0",), ("-60.0",), ("-40.0",))


def test_figures_are_written_as_png_pdf_and_svg_on_a_budget_axis(
    data: ReportData, tmp_path: Path
) -> None:
    paths = write_figures(data, tmp_path)
    stems = ["target_construction", "iou_by_n", "legal_by_n", "condition_deltas"]
    assert [p.name for p in paths] == [f"{s}.{k}" for s in stems for k in ("png", "pdf", "svg")]
    for p in paths:
        assert p.stat().st_size > 5000, p.name
    png = (tmp_path / "iou_by_n.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert int.from_bytes(png[16:20], "big") >= 6 * 300  # 6.5 in wide at 300 dpi
    assert (tmp_path / "iou_by_n.pdf").read_bytes()[:5] == b"%PDF-"
    svg = (tmp_path / "iou_by_n.svg").read_text()
    ticks = re.findall(r'id="xtick_\d+">.*?<text[^>]*>([^<]*)</text>', svg, re.DOTALL)
    assert ticks == ["8", "16"]  # exactly the budgets: not 10, 20, 30 on a linear axis
    assert "95% bootstrap intervals" in svg and "configuration" in svg  # the legend's title


def test_a_store_without_a_run_is_one_clear_line(tmp_path: Path, small_cohort: Cohort) -> None:
    path = tmp_path / "exp.duckdb"
    write_cohort(path, small_cohort)  # a cohort, no run yet
    with read_only(path) as con, pytest.raises(StoreError, match="no run results to report"):
        load_report_data(con, path)


def test_latex_states_its_packages_captions_once_and_scales_wide_tables(
    data: ReportData,
) -> None:
    for table in all_tables(data):
        tex = render(table, "latex")
        first, *_ = tex.splitlines()
        assert first.startswith("%") and all(p in first for p in ("booktabs", "graphicx", "array"))
        (caption,) = re.findall(r"\\caption\{(.*)\}", tex)
        assert not re.match(r"Table \d", caption), caption  # LaTeX numbers it
        # Scaled down to the text width only where wider: \width is the table's own.
        assert r"\resizebox{\ifdim\width>\textwidth\textwidth\else\width\fi}{!}" in tex
        assert tex.isascii(), table.name  # every character spelt for pdflatex
    assert "$-$50.0 [$-$60.0, $-$40.0]" in render(table2(data), "latex")
    assert "no-image" in render(table2(data), "latex")  # a name's hyphen stays one
    prose = next(t for t in all_tables(data) if t.name == "findings")
    assert r"p{" in render(prose, "latex").splitlines()[6]  # claims wrap, not shrink


@pytest.mark.skipif(shutil.which("pdflatex") is None, reason="no pdflatex installed")
def test_every_latex_table_compiles_as_written(data: ReportData, tmp_path: Path) -> None:
    tables = "\n".join(render(t, "latex") for t in all_tables(data))
    document = (
        "\\documentclass{article}\n\\usepackage{booktabs}\n\\usepackage{graphicx}\n"
        "\\usepackage{array}\n"
        f"\\begin{{document}}\n{tables}\n\\end{{document}}\n"
    )
    (tmp_path / "tables.tex").write_text(document)
    done = subprocess.run(
        ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "tables.tex"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:]
    assert (tmp_path / "tables.pdf").stat().st_size > 0


def test_report_piped_cuts_nothing_and_out_writes_every_export(store: Path, tmp_path: Path) -> None:
    """`groundbench report` as a user redirects it: no '…', every header whole; --out writes
    the tables, the long table and the figures in every format."""
    out = tmp_path / "report"
    done = CliRunner().invoke(app, ["report", str(store), "--out", str(out)])  # not a terminal
    assert done.exit_code == 0, done.output
    assert "…" not in done.output
    assert set(table1(load(store)).columns) <= set(_cells(done.output))
    for name in ("table1.csv", "table2.tex", "results.csv", "results.parquet",
                 "iou_by_n.png", "iou_by_n.pdf", "iou_by_n.svg"):  # fmt: skip
        assert (out / name).stat().st_size > 0, name
    assert "running" not in (out / "table1.md").read_text()


def load(store: Path) -> ReportData:
    with read_only(store) as con:
        return load_report_data(con)


def _cells(text: str) -> list[str]:
    return [cell.strip() for line in text.splitlines() for cell in line.split("┃")]


def test_a_narrow_table3_repeats_its_three_row_labels_in_every_part(data: ReportData) -> None:
    """Table 3's rows are named by Configuration, Part and Condition (base leads each part):
    a part of the table that does not fit carries all three, or its rows could not be told
    apart."""
    console = Console(record=True, width=60, force_terminal=True)
    console.print(fitting_table(table3(data), console))
    headers = [
        line for line in console.export_text().splitlines() if line.startswith("┃ Configuration")
    ]
    assert len(headers) > 1  # split into parts at 60 columns
    assert all("Part" in h and "Condition" in h for h in headers)
