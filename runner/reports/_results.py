"""Every cell's figures as one tidy long table (``results.csv``, ``results.parquet``): a row per
view, cell, metric and denominator, at full precision, for analysis outside the tool.

The paper's tables print rounded text; this is what they are rounded from. Intervals are the
paired bootstrap 95% intervals of the tables (PROTOCOL §7), given for the fixed IoU of each
cell (against zero) and for each condition's Δ against the same budget's base cell, in the
headline view (IoU2); other rows leave them empty.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterator, Mapping
from dataclasses import astuple, dataclass, fields
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from conditions import BOX
from runner._output import whole
from runner.reports._data import Cell, ReportData, ViewScores
from scoring import (
    THRESHOLDS,
    CellSummary,
    Contrast,
    Pair,
    PolygonScore,
    paired_contrast,
    per_question,
    summarise_box_cell,
    summarise_cell,
)


@dataclass(frozen=True)
class Result:
    """One figure of one cell: ``estimate`` in points (NaN: the cell has none, e.g. a
    parseable-only mean with no parseable answer); ``low``/``high`` its 95% interval where
    computed; ``questions`` settled of ``total`` in the cell's grid."""

    view: str
    configuration: str
    condition: str
    budget: int | None  # None: the box cell (the box is not a vertex budget)
    metric: str
    denominator: str  # "fixed", "parseable", or "" for a figure with one denominator
    estimate: float
    low: float | None
    high: float | None
    questions: int
    total: int
    complete: bool


COLUMNS = tuple(f.name for f in fields(Result))
_ARROW = pa.schema(
    [("view", pa.string()), ("configuration", pa.string()), ("condition", pa.string()),
     ("budget", pa.int32()), ("metric", pa.string()), ("denominator", pa.string()),
     ("estimate", pa.float64()), ("low", pa.float64()), ("high", pa.float64()),
     ("questions", pa.int32()), ("total", pa.int32()), ("complete", pa.bool_())]
)  # fmt: skip


def results(data: ReportData) -> list[Result]:
    """Every cell of both views, metric by metric, in the grid's order (configuration,
    condition, budget ascending, the box cell last)."""
    out: list[Result] = []
    for view in (data.headline, data.best_effort):
        for cell in sorted(view.grid, key=lambda c: (c.configuration, c.condition, _order(c))):
            out += _cell_results(data, view, cell)
    return out


def write_results(data: ReportData, out: Path) -> list[Path]:
    """``results.csv`` (a missing value is an empty cell) and ``results.parquet`` in ``out``."""
    rows = results(data)
    csv_path, parquet_path = out / "results.csv", out / "results.parquet"
    with whole(csv_path) as temporary, temporary.open("w", newline="") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(COLUMNS)
        writer.writerows([_csv_value(v) for v in astuple(r)] for r in rows)
    columns = [[_arrow_value(getattr(r, name)) for r in rows] for name in COLUMNS]
    table = pa.table(columns, schema=_ARROW)
    with whole(parquet_path) as temporary:
        pq.write_table(table, temporary)
    return [csv_path, parquet_path]


def _cell_results(data: ReportData, view: ViewScores, cell: Cell) -> Iterator[Result]:
    settled = view.boxes.get(cell, {}) if cell.budget == BOX else view.polygons.get(cell, {})
    common = (view.view, cell.configuration, cell.condition)
    budget = None if cell.budget == BOX else cell.budget
    tail = (len(settled), view.grid[cell], view.complete(cell))
    for metric, denominator, estimate, interval in _figures(data, view, cell):
        low, high = (interval.low, interval.high) if interval else (None, None)
        yield Result(*common, budget, metric, denominator, estimate, low, high, *tail)


Figure = tuple[str, str, float, Contrast | None]


def _figures(data: ReportData, view: ViewScores, cell: Cell) -> Iterator[Figure]:
    if cell.budget == BOX:
        s = summarise_box_cell(list(view.boxes.get(cell, {}).values()))
        yield "parse_rate", "", s.parse_rate, None
        yield from _pair("box_iou", s.box_iou)
        for t in THRESHOLDS:
            yield from _pair(f"box_acc@{t:g}", s.acc[t])
        return
    scores = view.polygons.get(cell, {})
    summary = summarise_cell(list(scores.values()), data.fidelity.get(cell.budget))
    headline = view is data.headline
    interval = against_zero(scores) if headline and scores else None
    yield "parse_rate", "", summary.parse_rate, None
    yield "iou", "fixed", summary.iou.fixed, interval
    yield "iou", "parseable", summary.iou.parseable, None
    yield from _polygon_pairs(summary)
    yield "sel", "", summary.sel, None
    yield "con", "", summary.con, None
    if headline and cell.condition != "base":
        base = view.polygons.get(Cell(cell.configuration, "base", cell.budget), {})
        c = paired_contrast(per_question(scores), per_question(base))
        if c.questions:
            yield "iou_delta_vs_base", "fixed", c.delta, c


def _polygon_pairs(s: CellSummary) -> Iterator[Figure]:
    yield from _pair("iou_p", s.iou_p)
    yield from _pair("iou_n", s.iou_n)
    yield from _pair("iou_union", s.iou_union)
    yield from _pair("iou_cont", s.iou_cont)
    for t in THRESHOLDS:
        yield from _pair(f"acc@{t:g}", s.acc[t])
    yield from _pair("legal_coverage", s.legal_coverage)
    yield from _pair("legal_iou", s.legal_iou)


def _pair(metric: str, p: Pair) -> Iterator[Figure]:
    yield metric, "fixed", p.fixed, None
    yield metric, "parseable", p.parseable, None


def against_zero(scores: Mapping[str, PolygonScore | None]) -> Contrast:
    """A cell's fixed IoU with its bootstrap interval: the paired contrast against zero."""
    values = per_question(scores)
    return paired_contrast(values, dict.fromkeys(values, 0.0))


def _order(cell: Cell) -> float:
    return math.inf if cell.budget == BOX else float(cell.budget)


def _csv_value(value: object) -> object:
    """Empty for a missing value (None or NaN); booleans as true/false."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, bool):
        return str(value).lower()
    return value


def _arrow_value(value: object) -> object:
    """NaN written as null: Parquet readers then agree a figure is missing."""
    return None if isinstance(value, float) and math.isnan(value) else value
