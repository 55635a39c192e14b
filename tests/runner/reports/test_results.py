"""The tidy long table of every cell: full-precision numbers, the tables' figures, Parquet."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import duckdb

from conditions import BOX
from runner.reports import Cell, ReportData, Result, results, write_results

NUMBERS = ("budget", "estimate", "low", "high", "questions", "total")


def _one(rows: list[Result], cell: Cell, metric: str, denominator: str) -> Result:
    (found,) = [
        r
        for r in rows
        if (r.view, r.configuration, r.condition, r.budget, r.metric, r.denominator)
        == ("iou2", *cell, metric, denominator)
    ]
    return found


def test_the_rows_hold_the_tables_figures_unrounded(data: ReportData) -> None:
    rows = results(data)
    iou = _one(rows, Cell("cfg", "base", 8), "iou", "fixed")
    assert math.isclose(iou.estimate, 47.5)  # Table 1 prints 47.5 / 63.3
    assert iou.low is not None and iou.high is not None and iou.low <= 47.5 <= iou.high
    assert (iou.questions, iou.total, iou.complete) == (4, 4, True)
    assert math.isclose(_one(rows, Cell("cfg", "base", 8), "iou", "parseable").estimate, 190 / 3)
    running = _one(rows, Cell("cfg", "base", 16), "iou", "fixed")
    assert (running.questions, running.total, running.complete) == (1, 4, False)
    delta = _one(rows, Cell("cfg", "no-image", 8), "iou_delta_vs_base", "fixed")
    assert (delta.estimate, delta.low, delta.high) == (-50.0, -60.0, -40.0)  # Table 2's Δ
    box = _one(rows, Cell("cfg", "base", None), "box_acc@0.5", "fixed")  # type: ignore[arg-type]
    assert box.estimate == 50.0 and not box.complete
    assert [r.budget for r in rows if r.view == "iou2" and r.metric == "parse_rate"] == [
        8, 16, None, 8  # budgets ascending, the box cell after them
    ]  # fmt: skip
    assert BOX not in {r.budget for r in rows}


def test_the_csv_is_numbers_and_the_parquet_the_same_rows(data: ReportData, tmp_path: Path) -> None:
    csv_path, parquet_path = write_results(data, tmp_path)
    rows = list(csv.DictReader(csv_path.open()))
    assert len(rows) == len(results(data))
    for row in rows:
        for name in NUMBERS:  # empty only where missing (no interval, no box budget)
            assert row[name] == "" or math.isfinite(float(row[name])), (name, row)
        assert row["complete"] in ("true", "false")
    ((count, nulls),) = (
        duckdb.connect()
        .execute(f"SELECT count(*), count(*) FILTER (WHERE low IS NULL) FROM '{parquet_path}'")
        .fetchall()
    )
    assert count == len(rows) and nulls == sum(r["low"] == "" for r in rows)
