"""The paper's tables from a store's scores (PROTOCOL §7), as plain rows of text.

Every figure is in points; a pair is ``fixed / parseable-only``. Contrasts are paired on the
exact intersection of question ids, with a bootstrap 95% interval. A cell with questions still
running is marked ``*`` and its count of settled questions is given: it is never averaged as if
it were complete.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from conditions import BOX, CONDITION_NAMES
from runner.reports._data import Cell, Question, ReportData, ViewScores
from scoring import (
    THRESHOLDS,
    Contrast,
    Pair,
    PolygonScore,
    control_scores,
    paired_contrast,
    per_question,
    summarise_box_cell,
    summarise_cell,
)

INCOMPLETE = "*"
CUE_AND_IMAGE = ("no-image", "half-res", "greyscale", "cue-spatial-true", "cue-spatial-wrong",
                 "cue-colour-true", "cue-colour-wrong", "cue-both-wrong")  # fmt: skip
SLICES: tuple[tuple[str, Callable[[Question], str], bool], ...] = (
    ("difficulty", lambda q: q.difficulty, False),
    ("D", lambda q: q.d_bin, False),
    ("Q", lambda q: q.q_bin, False),
    ("RS", lambda q: q.rs_bin, False),
    ("group", lambda q: q.group, True),  # semantic groups use the best-effort view (paper)
)


@dataclass(frozen=True)
class ReportTable:
    """One table: what it is, its columns, its rows of formatted text, notes below it."""

    name: str
    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    notes: tuple[str, ...] = ()


def table1(data: ReportData) -> ReportTable:
    """Configuration × budget: IoU, IoU_p, IoU_n, Acc@τ, legality, box Acc@.5 and control."""
    view = data.headline
    columns = ("Configuration", "N", "Questions", "IoU", "IoU_p", "IoU_n",
               *(f"Acc@{t:g}" for t in THRESHOLDS), "Legal %", "Legal IoU",
               "Box Acc@0.5", "Box control IoU")  # fmt: skip
    rows = []
    for configuration in data.configurations:
        box_cell = Cell(configuration, "base", BOX)
        boxes = view.boxes.get(box_cell, {})
        box = summarise_box_cell(list(boxes.values())) if box_cell in view.grid else None
        for n in data.budgets_of(configuration):
            cell = Cell(configuration, "base", n)
            s = summarise_cell(list(view.polygons.get(cell, {}).values()), data.fidelity.get(n))
            control = (
                _fmt(summarise_cell(control_scores(list(boxes.values()), n)).iou.fixed)
                + _mark(view, box_cell)
                if box is not None
                else "—"
            )
            rows.append(
                (
                    configuration,
                    str(n),
                    _count(view, cell),
                    _pair(s.iou),
                    _pair(s.iou_p),
                    _pair(s.iou_n),
                    *(_pair(s.acc[t]) for t in THRESHOLDS),
                    _pair(s.legal_coverage),
                    _pair(s.legal_iou),
                    _pair(box.acc[0.5]) + _mark(view, box_cell) if box is not None else "—",
                    control,
                )
            )
    return ReportTable(
        "table1",
        "Table 1: filled-region results under IoU2 (fixed / parseable-only, points)",
        columns,
        tuple(rows),
        _notes(
            view,
            "base condition; IoU_n = 100·IoU_p / C_N; the box control is the box "
            "answer as an N-vertex polygon",
        ),
    )


def table2(data: ReportData) -> ReportTable:
    """Cues and image evidence: each condition against the same questions' base answers."""
    view = data.headline
    rows = []
    for configuration in data.configurations:
        base = pooled(view, configuration, "base")
        for condition in CUE_AND_IMAGE:
            if condition not in data.conditions_of(configuration):
                continue
            scores = pooled(view, configuration, condition)
            mark = _cells_mark(view, configuration, condition)
            rows.append((configuration, condition, *_against(scores, base), mark))
    return ReportTable(
        "table2",
        "Table 2: prompt cues and image evidence, fixed IoU against same-question base (IoU2)",
        ("Configuration", "Condition", "Pairs", "Condition IoU", "Base IoU", "Δ [95% CI]", ""),
        tuple(rows),
        _notes(view, "pairs are (question, budget) answered in both cells, budgets pooled"),
    )


def table3(data: ReportData) -> ReportTable:
    """The 13-condition grid: fixed IoU per condition and budget, and Δ against base."""
    view = data.headline
    budgets = sorted({n for c in data.configurations for n in data.budgets_of(c)})
    rows = []
    for configuration in data.configurations:
        conditions = [c for c in CONDITION_NAMES if c in data.conditions_of(configuration)]
        if len(conditions) < 2:
            continue
        base = pooled(view, configuration, "base")
        for condition in conditions:
            per_budget = []
            for n in budgets:
                cell = Cell(configuration, condition, n)
                if cell not in view.grid:
                    per_budget.append("—")
                    continue
                s = summarise_cell(list(view.polygons.get(cell, {}).values()))
                per_budget.append(_fmt(s.iou.fixed) + _mark(view, cell))
            delta = (
                "—"
                if condition == "base"
                else _contrast(paired(pooled(view, configuration, condition), base))
            )
            rows.append((configuration, condition, *per_budget, delta))
    return ReportTable(
        "table3",
        "Table 3: the 13-condition grid, fixed IoU (IoU2) and Δ against base",
        ("Configuration", "Condition", *(f"N={n}" for n in budgets), "Δ vs base [95% CI]"),
        tuple(rows),
        _notes(view, "Δ pools budgets over the (question, budget) pairs both cells answered"),
    )


def table4(data: ReportData) -> ReportTable:
    """Selection and tracing by budget, best-effort view: Sel, Con and fixed IoU."""
    view = data.best_effort
    rows = []
    for configuration in data.configurations:
        for n in data.budgets_of(configuration):
            cell = Cell(configuration, "base", n)
            s = summarise_cell(list(view.polygons.get(cell, {}).values()))
            rows.append(
                (
                    configuration,
                    str(n),
                    _count(view, cell),
                    _fmt(s.sel),
                    _fmt(s.con),
                    _fmt(s.iou.fixed),
                )
            )
    return ReportTable(
        "table4",
        "Table 4: selection/tracing by budget (best-effort view)",
        ("Configuration", "N", "Questions", "Sel %", "Con", "IoU"),
        tuple(rows),
        _notes(view, "Sel: target preferred over every distractor; Con: mean IoU of those"),
    )


def table5(data: ReportData) -> ReportTable:
    """Slices: pooled fixed (and parseable-only) IoU by difficulty, D, Q, RS and group."""
    rows = []
    for configuration in data.configurations:
        for slicer, label_of, best_effort in SLICES:
            view = data.best_effort if best_effort else data.headline
            answers = pooled(view, configuration, "base")
            by_label: dict[str, list[PolygonScore | None]] = {}
            for (_, qid), score in sorted(answers.items()):
                by_label.setdefault(label_of(data.questions[qid]), []).append(score)
            for label, scores in sorted(by_label.items()):
                s = summarise_cell(scores)
                rows.append((configuration, slicer, label, str(s.questions), _pair(s.iou)))
    return ReportTable(
        "table5",
        "Table 5: pooled fixed-IoU slices (base; IoU2, groups best-effort)",
        ("Configuration", "Slice", "Label", "Answers", "IoU"),
        tuple(rows),
        ("answers pool the budgets of each question",),
    )


# -- helpers ----------------------------------------------------------------------------------

Pooled = dict[tuple[int, str], PolygonScore | None]


def pooled(view: ViewScores, configuration: str, condition: str) -> Pooled:
    """A configuration's polygon scores for one condition, keyed (budget, qid) over budgets."""
    out: Pooled = {}
    for cell, scores in view.polygons.items():
        if cell.configuration == configuration and cell.condition == condition:
            out.update(((cell.budget, qid), s) for qid, s in scores.items())
    return out


def paired(a: Pooled, b: Pooled) -> Contrast:
    return paired_contrast(per_question(a), per_question(b))


def _against(scores: Pooled, base: Pooled) -> tuple[str, str, str, str]:
    common = scores.keys() & base.keys()
    mine = summarise_cell([scores[k] for k in common]).iou.fixed
    theirs = summarise_cell([base[k] for k in common]).iou.fixed
    return str(len(common)), _fmt(mine), _fmt(theirs), _contrast(paired(scores, base))


def _contrast(c: Contrast) -> str:
    if c.questions == 0:
        return "—"
    return f"{c.delta:+.1f} [{c.low:+.1f}, {c.high:+.1f}]"


def _fmt(value: float) -> str:
    return "—" if math.isnan(value) else f"{value:.1f}"


def _pair(p: Pair) -> str:
    return f"{_fmt(p.fixed)} / {_fmt(p.parseable)}"


def _mark(view: ViewScores, cell: Cell) -> str:
    return "" if view.complete(cell) else INCOMPLETE


def _count(view: ViewScores, cell: Cell) -> str:
    settled = (
        len(view.boxes.get(cell, {})) if cell.budget == BOX else len(view.polygons.get(cell, {}))
    )
    total = view.grid.get(cell, 0)
    return f"{settled}" if settled == total else f"{settled}/{total}{INCOMPLETE}"


def _cells_mark(view: ViewScores, configuration: str, condition: str) -> str:
    cells = [c for c in view.grid if c.configuration == configuration and c.condition == condition]
    return "" if all(view.complete(c) for c in cells) else INCOMPLETE


def _notes(view: ViewScores, *extra: str) -> tuple[str, ...]:
    incomplete = sorted(c for c in view.grid if not view.complete(c))
    notes = list(extra)
    if incomplete:
        notes.append(
            f"{INCOMPLETE} incomplete: {len(incomplete)} cell(s) still have questions running; "
            "their figures cover the settled questions only"
        )
    return tuple(notes)
