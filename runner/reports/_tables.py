"""The paper's tables from a store's scores (PROTOCOL §7), as plain rows of text.

Every figure is in points; a pair is ``fixed / parseable-only``. Contrasts are paired on the
exact intersection of question ids, with a bootstrap 95% interval. A cell with unsettled
questions is marked ``*`` and its count of settled questions is given: it is never averaged as
if it were complete; the footnote says what left them unsettled (:func:`unsettled_why`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal, TypeVar

from conditions import BOX
from runner.reports._data import EARLIER_VIEWS, Cell, Question, ReportData, ViewScores
from scoring import (
    THRESHOLDS,
    CellSummary,
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
Mark = Literal["best", "second"]
"""A cell's mark: the renderers set a ``best`` cell bold and a ``second`` one underlined."""
K = TypeVar("K", bound=Hashable)
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
    """One table: what it is, its columns, its rows of formatted text, notes below it.

    ``marks`` maps (row, column) indices of ``rows`` to a :data:`Mark`; the cell's text stays
    plain, and each renderer styles marked cells in one place (a CSV leaves them plain).
    """

    name: str
    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    notes: tuple[str, ...] = ()
    marks: Mapping[tuple[int, int], Mark] = field(default_factory=dict)
    empty_because: str = ""  # why a table has no rows, said where it is left out
    label_columns: int = 2  # the first columns name a row: a narrow layout repeats them

    def why_empty(self) -> str:
        """Why the table has no rows: its own reason, else its notes (a table with nothing to
        show says why in them)."""
        return self.empty_because or "; ".join(self.notes) or "nothing to show"


TABLE1_FIGURES = ("IoU", "IoU0", "IoU1", "IoU_p", "IoU_n", "IoU union", "IoU cont",
                  *(f"Acc@{t:g}" for t in THRESHOLDS), "Legal %", "Legal IoU", "Box Acc@0.5",
                  "Box control IoU")  # fmt: skip
"""Table 1's figure columns, after Configuration, N and Questions: the ones marks rank."""
NO_CONDITIONS = "the grid has no condition but base (a base-only run): nothing to contrast"
BASE = "base"
OFF = "thinking-off"  # Table 1's ablation rows: the paper's "Qwen-off" (PROTOCOL §9)
POOLED = "Pooled"
MEAN = "Mean"


def table1(data: ReportData) -> ReportTable:
    """Configuration × budget: IoU (IoU2, then IoU0 and IoU1), the alternate references
    (IoU_p against the unreduced part, IoU_n, the union of parts, continuous area), Acc@τ,
    legality, box Acc@.5 and control.

    Each configuration's budget rows are followed by its Pooled row, then, where it runs
    ``thinking-off``, by the same rows of that condition (the paper's same-endpoint ablation,
    "Qwen-off"), and the table ends with the Mean block (one row per budget and one for
    Pooled); see :func:`_table1_notes`.
    """
    lines = [
        line
        for c in data.configurations
        for condition in (BASE, *([OFF] if OFF in data.conditions_of(c) else []))
        for line in _configuration_lines(data, c, condition)
    ]
    labels = [*(str(n) for n in _all_budgets(data)), POOLED]
    main = [line for line in lines if not line.ablation]
    means, left_out = _mean_lines(main, labels, data.configurations)
    return ReportTable(
        "table1",
        "Table 1: filled-region results under IoU2 (fixed / parseable-only, points)",
        ("Configuration", "N", "Questions", *TABLE1_FIGURES),
        tuple(line.cells() for line in [*lines, *means]),
        _notes(data.headline, *_table1_notes(left_out, len(main) < len(lines))),
        _line_marks(lines),
    )


@dataclass(frozen=True)
class _Figure:
    """One figure cell of Table 1 before it is formatted.

    ``complete``: it covers complete cells only; an incomplete figure is never marked nor
    averaged into a Mean. ``flagged``: the cell carries its own ``*`` (the box columns: the row's
    Questions count is not theirs). ``fixed_only``: printed as the fixed value alone (the
    box control, a fixed-denominator figure).
    """

    value: Pair
    complete: bool = True
    flagged: bool = False
    fixed_only: bool = False

    def text(self) -> str:
        body = _fmt(self.value.fixed) if self.fixed_only else _pair(self.value)
        return body if self.complete or not self.flagged else body + INCOMPLETE


@dataclass(frozen=True)
class _Line:
    """One row of Table 1 before it is formatted: ``label`` is the budget, Pooled or Mean's."""

    configuration: str
    label: str
    questions: str
    figures: tuple[_Figure | None, ...]  # None: no such cell ("—")
    ablation: bool = False  # a thinking-off row: shown, never marked nor averaged

    @property
    def complete(self) -> bool:
        return all(f is None or f.complete for f in self.figures)

    def cells(self) -> tuple[str, ...]:
        figures = (f.text() if f is not None else "—" for f in self.figures)
        return (self.configuration, self.label, self.questions, *figures)


def _configuration_lines(data: ReportData, configuration: str, condition: str) -> list[_Line]:
    """A configuration's budget rows of ``condition``, then its Pooled row; named
    ``configuration (thinking-off)`` for the ablation's."""
    view = data.headline
    ablation = condition != BASE
    name = f"{configuration} ({condition})" if ablation else configuration
    lines = []
    for n in data.budgets_of(configuration, condition):
        cell = Cell(configuration, condition, n)
        s = summarise_cell(list(view.polygons.get(cell, {}).values()), data.fidelity.get(n))
        boxes = _box_figures(view, configuration, [n], condition)
        figures = _polygon_figures(s, view.complete(cell), _earlier(data, [cell])) + boxes
        lines.append(_Line(name, str(n), _count(view, cell), figures, ablation))
    pooled_line = _pooled_line(data, configuration, condition)
    lines.append(replace(pooled_line, configuration=name, ablation=ablation))
    return lines


def _pooled_line(data: ReportData, configuration: str, condition: str = BASE) -> _Line:
    """Every (budget, question) answer of a configuration's ``condition`` as one summary.

    ``IoU_n`` normalises each answer by its own budget's ``C_N`` (pooling answers, not budget
    means), so it is the per-budget ``IoU_n`` weighted by the answers behind each.
    """
    view = data.headline
    budgets = data.budgets_of(configuration, condition)
    cells = [Cell(configuration, condition, n) for n in budgets]
    per_budget = [
        summarise_cell(list(view.polygons.get(c, {}).values()), data.fidelity.get(c.budget))
        for c in cells
    ]
    s = replace(
        summarise_cell(list(pooled(view, configuration, condition).values())),
        iou_n=_pooled_iou_n(per_budget),
    )
    complete = all(view.complete(c) for c in cells)
    settled = sum(len(view.polygons.get(c, {})) for c in cells)
    count = _count_text(settled, sum(view.grid.get(c, 0) for c in cells))
    boxes = _box_figures(view, configuration, budgets, condition)
    figures = _polygon_figures(s, complete, _earlier(data, cells)) + boxes
    return _Line(configuration, POOLED, count, figures)


def _polygon_figures(
    s: CellSummary, complete: bool, earlier: tuple[_Figure | None, ...]
) -> tuple[_Figure | None, ...]:
    """The headline summary's figures, with ``earlier`` (IoU0, IoU1) after its IoU."""
    rest = (s.iou_p, s.iou_n, s.iou_union, s.iou_cont, *(s.acc[t] for t in THRESHOLDS),
            s.legal_coverage, s.legal_iou)  # fmt: skip
    return (_Figure(s.iou, complete), *earlier, *(_Figure(p, complete) for p in rest))


def _earlier(data: ReportData, cells: Sequence[Cell]) -> tuple[_Figure | None, ...]:
    """IoU0 and IoU1 of ``cells`` pooled: the fixed / parseable-only IoU under attempt 0
    alone and under attempts 0-1, each complete where its view has every question of every
    cell settled; "—" (None) where the view was not read."""
    figures: list[_Figure | None] = []
    for name in EARLIER_VIEWS:
        view = data.earlier.get(name)
        if view is None:
            figures.append(None)
            continue
        scores = [s for c in cells for s in view.polygons.get(c, {}).values()]
        complete = all(view.complete(c) for c in cells)
        figures.append(_Figure(summarise_cell(scores).iou, complete))
    return tuple(figures)


def _box_figures(
    view: ViewScores, configuration: str, budgets: Sequence[int], condition: str = BASE
) -> tuple[_Figure | None, _Figure | None]:
    """Box Acc@.5 (one box cell per configuration and condition) and the box control pooled
    over ``budgets``; none without a box cell."""
    box_cell = Cell(configuration, condition, BOX)
    if box_cell not in view.grid:
        return None, None
    boxes = list(view.boxes.get(box_cell, {}).values())
    complete = view.complete(box_cell)
    control = summarise_cell([s for n in budgets for s in control_scores(boxes, n)]).iou
    return (
        _Figure(summarise_box_cell(boxes).acc[0.5], complete, flagged=True),
        _Figure(control, complete, flagged=True, fixed_only=True),
    )


def _pooled_iou_n(per_budget: Sequence[CellSummary]) -> Pair:
    """Pooled ``IoU_n``: each budget's weighted by its questions (fixed) or its parseable
    answers (parseable-only)."""
    fixed = _weighted_mean([(s.iou_n.fixed, s.questions) for s in per_budget])
    parseable = _weighted_mean([(s.iou_n.parseable, s.parseable) for s in per_budget])
    return Pair(fixed, parseable)


def _weighted_mean(values: Sequence[tuple[float, int]]) -> float:
    """NaN when nothing weighs, or when a value that weighs is NaN (a budget without ``C_N``):
    a pooled figure that silently dropped a budget's answers would not be that pool's."""
    weighed = [(v, w) for v, w in values if w > 0]
    total = sum(w for _, w in weighed)
    if not total or any(math.isnan(v) for v, _ in weighed):
        return math.nan
    return sum(v * w for v, w in weighed) / total


def _mean_lines(
    lines: Sequence[_Line], labels: Sequence[str], configurations: Sequence[str]
) -> tuple[list[_Line], dict[str, list[str]]]:
    """The Mean block: per label and column, the unweighted mean over configurations of their
    complete figures; also, per label, the configurations left out ("name (why)")."""
    means, left_out = [], {}
    for label in labels:
        group = {line.configuration: line for line in lines if line.label == label}
        columns = zip(*(line.figures for line in group.values()), strict=True)
        if not group:
            continue
        figures = tuple(_mean_figure(list(c)) for c in columns)
        means.append(_Line(MEAN, label, "—", figures))
        left_out[label] = [
            f"{c} ({_why_left_out(group.get(c))})"
            for c in configurations
            if c not in group or not group[c].complete
        ]
    return means, {label: names for label, names in left_out.items() if names}


def _why_left_out(line: _Line | None) -> str:
    """ "no cell", "incomplete", or the columns whose cells are incomplete (the box ones)."""
    if line is None:
        return "no cell"
    present = [(c, f) for c, f in zip(TABLE1_FIGURES, line.figures, strict=True) if f is not None]
    incomplete = [c for c, f in present if not f.complete]
    return (
        "incomplete" if len(incomplete) == len(present) else f"{', '.join(incomplete)} incomplete"
    )


def _mean_figure(figures: Sequence[_Figure | None]) -> _Figure | None:
    usable = [f for f in figures if f is not None and f.complete]
    if not usable:
        return None
    fixed = _finite_mean([f.value.fixed for f in usable])
    parseable = _finite_mean([f.value.parseable for f in usable])
    return _Figure(Pair(fixed, parseable), fixed_only=usable[0].fixed_only)


def _finite_mean(values: Sequence[float]) -> float:
    finite = [v for v in values if math.isfinite(v)]
    return sum(finite) / len(finite) if finite else math.nan


def _line_marks(lines: Sequence[_Line]) -> dict[tuple[int, int], Mark]:
    """Best and second per label (budget or Pooled) and figure column, over configurations."""
    marks: dict[tuple[int, int], Mark] = {}
    first = 3  # Configuration, N, Questions come first
    for label in dict.fromkeys(line.label for line in lines):
        rows = [i for i, line in enumerate(lines) if line.label == label and not line.ablation]
        for j in range(len(TABLE1_FIGURES)):
            values = {i: f.value.fixed for i in rows if (f := lines[i].figures[j]) and f.complete}
            marks.update(((i, first + j), m) for i, m in best_and_second(values).items())
    return marks


def best_and_second(values: Mapping[K, float]) -> dict[K, Mark]:
    """Which keys get the best and the second-best mark: the highest and the next-highest value.

    Values are compared as printed (one decimal), so figures that print alike tie, and every
    tied key gets the mark; the second mark goes to the next distinct value below the best
    (dense ranking). NaN takes no part. Nothing is marked with fewer than two values to
    compare, or when they all tie (there is no best then).

    >>> best_and_second({"a": 50.0, "b": 50.04, "c": 10.0, "d": float("nan")})
    {'a': 'best', 'b': 'best', 'c': 'second'}
    """
    shown = {k: round(v, 1) for k, v in values.items() if math.isfinite(v)}
    levels = sorted(set(shown.values()), reverse=True)
    if len(levels) < 2:
        return {}
    mark: dict[float, Mark] = {levels[0]: "best", levels[1]: "second"}
    return {k: mark[v] for k, v in shown.items() if v in mark}


def _table1_notes(left_out: Mapping[str, Sequence[str]], ablation: bool) -> list[str]:
    """What Pooled, Mean and the marks are, which configurations a Mean row leaves out, and
    (``ablation``: the table has thinking-off rows) what those rows are."""
    notes = [
        "base condition; the alternate references (PROTOCOL §5): IoU_p against the unreduced "
        "selected part A_i, IoU_n = 100·IoU_p / C_N, IoU union against the union of the "
        "referent's parts, IoU cont the continuous-area IoU against G_N; the box control is "
        "the box answer as an N-vertex polygon",
        "IoU: the headline view, IoU2 (the first parseable of attempts 0-2); IoU0 and IoU1: "
        "the same under attempt 0 alone and attempts 0-1 (PROTOCOL §6)",
        "Pooled: all of a configuration's base (budget, question) answers as one cell; its "
        "IoU_n normalises each answer by its own budget's C_N, and its box control pools "
        "the controls of every budget",
        "Mean: the unweighted mean over configurations, fixed and parseable-only separately; "
        "a configuration without the cell, with the cell incomplete, or with no value there "
        "(—) is left out of it",
        "bold / underline: best / second configuration per N (and per Pooled) and column by "
        "the fixed value as printed; ties all get the mark; incomplete and Mean rows never",
    ]
    if ablation:
        notes.append(
            f"a configuration's ({OFF}) rows: the same endpoint with reasoning off (the "
            "paper's Qwen-off ablation), shown beside it, never marked nor in Mean"
        )
    if left_out:
        listed = "; ".join(
            f"{'N=' if label.isdigit() else ''}{label}: {', '.join(names)}"
            for label, names in left_out.items()
        )
        notes.append(f"Mean rows leave out {listed}")
    return notes


def _all_budgets(data: ReportData) -> list[int]:
    return sorted({n for c in data.configurations for n in data.budgets_of(c)})


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
            pairs, mine, theirs, delta = _against(scores, base)
            # The condition's cells' own mark, on its figure: no unnamed column for it.
            mine += _cells_mark(view, configuration, condition)
            rows.append((configuration, condition, pairs, mine, theirs, delta))
    return ReportTable(
        "table2",
        "Table 2: prompt cues and image evidence, fixed IoU against same-question base (IoU2)",
        ("Configuration", "Condition", "Pairs", "Condition IoU", "Base IoU", "Δ [95% CI]"),
        tuple(rows),
        _notes(view, "pairs are (question, budget) answered in both cells, budgets pooled"),
        empty_because=NO_CONDITIONS,
    )


# Table 3's three parts (the paper's three tables of the 13-condition grid), each led by base,
# the reference its rows are read against.
TABLE3_PARTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("reasoning", ("thinking-off", "thinking-budget", "temperature", "repeat")),
    ("image", ("no-image", "half-res", "greyscale")),
    ("cues", ("cue-spatial-true", "cue-spatial-wrong", "cue-colour-true", "cue-colour-wrong",
              "cue-both-wrong")),
)  # fmt: skip


def table3(data: ReportData) -> ReportTable:
    """The 13-condition grid in its three parts (reasoning and decoding, image evidence,
    cues), each led by base: fixed IoU per budget, then pooled over budgets the parse
    coverage and the parseable-only IoU (the split of a fixed-IoU difference into answers
    made and their geometry), and Δ fixed IoU against base."""
    view = data.headline
    budgets = sorted({n for c in data.configurations for n in data.budgets_of(c)})
    rows = []
    for configuration in data.configurations:
        ran = set(data.conditions_of(configuration))
        base = pooled(view, configuration, BASE)
        for part, conditions in TABLE3_PARTS:
            mine = [c for c in conditions if c in ran]
            if BASE not in ran or not mine:
                continue
            for condition in (BASE, *mine):
                scores = pooled(view, configuration, condition)
                figures = _per_budget(view, configuration, condition, budgets)
                figures += _coverage(scores)
                delta = "—" if condition == BASE else _contrast(paired(scores, base))
                rows.append((configuration, part, condition, *figures, delta))
    return ReportTable(
        "table3",
        "Table 3: the 13-condition grid in three parts, fixed IoU (IoU2) and Δ against base",
        (
            "Configuration",
            "Part",
            "Condition",
            *(f"N={n}" for n in budgets),
            "Parse %",
            "Parseable IoU",
            "Δ vs base [95% CI]",
        ),
        tuple(rows),
        _notes(
            view,
            "parts: reasoning and decoding, image evidence, cues; each led by base",
            "Parse % and Parseable IoU pool the budgets: the answers parsed, and the IoU of "
            "those (a fixed-IoU difference is coverage, geometry or both)",
            "Δ pools budgets over the (question, budget) pairs both cells answered",
        ),
        empty_because=NO_CONDITIONS,
        label_columns=3,  # Configuration, Part, Condition
    )


def _per_budget(
    view: ViewScores, configuration: str, condition: str, budgets: Sequence[int]
) -> list[str]:
    """A condition's fixed IoU at each budget, with its cell's mark ("—": no such cell)."""
    out = []
    for n in budgets:
        cell = Cell(configuration, condition, n)
        if cell not in view.grid:
            out.append("—")
            continue
        s = summarise_cell(list(view.polygons.get(cell, {}).values()))
        out.append(_fmt(s.iou.fixed) + _mark(view, cell))
    return out


def _coverage(scores: Pooled) -> list[str]:
    """A condition's parse coverage and parseable-only IoU, its budgets pooled."""
    s = summarise_cell(list(scores.values()))
    return [_fmt(s.parse_rate), _fmt(s.iou.parseable)]


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
    """Slices: pooled fixed (and parseable-only) IoU by difficulty, D, Q, RS and group; per
    slice label, the best and second configuration marked (:func:`_slice_marks`)."""
    rows: list[tuple[str, ...]] = []
    ranked: dict[tuple[str, str], dict[int, float]] = {}  # (slice, label): row -> fixed IoU
    for configuration in data.configurations:
        for slicer, label_of, best_effort in SLICES:
            view = data.best_effort if best_effort else data.headline
            answers = pooled(view, configuration, "base")
            complete = all(
                view.complete(Cell(configuration, "base", n))
                for n in data.budgets_of(configuration)
            )
            by_label: dict[str, list[PolygonScore | None]] = {}
            for (_, qid), score in sorted(answers.items()):
                by_label.setdefault(label_of(data.questions[qid]), []).append(score)
            for label, scores in sorted(by_label.items(), key=lambda item: _natural(item[0])):
                s = summarise_cell(scores)
                if complete:
                    ranked.setdefault((slicer, label), {})[len(rows)] = s.iou.fixed
                rows.append((configuration, slicer, label, str(s.questions), _pair(s.iou)))
    return ReportTable(
        "table5",
        "Table 5: pooled fixed-IoU slices (base; IoU2, groups best-effort)",
        ("Configuration", "Slice", "Label", "Answers", "IoU"),
        tuple(rows),
        (
            "answers pool the budgets of each question",
            "bold / underline: best / second configuration per slice label by the fixed IoU as "
            "printed; ties all get the mark; a configuration with an incomplete base cell never",
        ),
        _slice_marks(ranked),
    )


def _slice_marks(
    ranked: Mapping[tuple[str, str], Mapping[int, float]],
) -> dict[tuple[int, int], Mark]:
    """Best and second per slice label, over the configurations ranked there, on the IoU
    column (Table 5's last)."""
    return {
        (row, 4): mark
        for values in ranked.values()
        for row, mark in best_and_second(values).items()
    }


# -- helpers ----------------------------------------------------------------------------------

_ORDERED = ("easy", "medium", "hard")  # difficulty reads in its own order, not the alphabet's


def _natural(label: str) -> tuple[int, str, float, str]:
    """A slice label's place: easy, medium, hard; then by name with any number in it as a
    number (D2 before D10, D3+ after D3)."""
    if label in _ORDERED:
        return (0, "", _ORDERED.index(label), "")
    digits = re.search(r"\d+", label)
    if digits is None:
        return (1, label, 0.0, "")
    return (1, label[: digits.start()], float(digits.group()), label[digits.end() :])


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
    return f"{_signed(c.delta)} [{_signed(c.low)}, {_signed(c.high)}]"


def _fmt(value: float) -> str:
    return "—" if math.isnan(value) else f"{_shown(value):.1f}"


def _signed(value: float) -> str:
    """``value`` to one decimal with its sign: ``+0.0``, never ``-0.0``."""
    return "—" if math.isnan(value) else f"{_shown(value):+.1f}"


def _shown(value: float) -> float:
    """``value`` as printed to one decimal, with -0.04's ``-0.0`` made ``0.0``: a sign on a
    printed zero claims a direction the figure does not have (adding 0.0 clears it)."""
    return round(value, 1) + 0.0


def _pair(p: Pair) -> str:
    return f"{_fmt(p.fixed)} / {_fmt(p.parseable)}"


def _mark(view: ViewScores, cell: Cell) -> str:
    return "" if view.complete(cell) else INCOMPLETE


def _count(view: ViewScores, cell: Cell) -> str:
    settled = (
        len(view.boxes.get(cell, {})) if cell.budget == BOX else len(view.polygons.get(cell, {}))
    )
    return _count_text(settled, view.grid.get(cell, 0))


def _count_text(settled: int, total: int) -> str:
    return f"{settled}" if settled == total else f"{settled}/{total}{INCOMPLETE}"


def _cells_mark(view: ViewScores, configuration: str, condition: str) -> str:
    cells = [c for c in view.grid if c.configuration == configuration and c.condition == condition]
    return "" if all(view.complete(c) for c in cells) else INCOMPLETE


def _notes(view: ViewScores, *extra: str) -> tuple[str, ...]:
    incomplete = sorted(c for c in view.grid if not view.complete(c))
    notes = list(extra)
    if incomplete:
        notes.append(
            f"{INCOMPLETE} incomplete: {len(incomplete)} cell(s) have unsettled questions "
            f"({unsettled_why(view.open_requests)}); their figures cover the settled "
            "questions only"
        )
    return tuple(notes)


_WHY = {"quota": "stopped on spent quota", "fatal": "stopped on a refused key, access or model",
        "transient": "failed on transient errors", "rate-limited": "rate-limited",
        "unsent": "not sent yet"}  # fmt: skip


def unsettled_why(open_requests: Mapping[str, int]) -> str:
    """Why questions are unsettled, from what the store recorded: no run holds a store a report
    reads (DuckDB refuses a reader then), so none is running; a rerun sends what is left.

    >>> unsettled_why({"quota": 12, "unsent": 3})
    '12 requests stopped on spent quota, 3 not sent yet; `groundbench run` again to finish'
    >>> unsettled_why({})
    'answered, not all scored yet; `groundbench run` again to score them'

    A snapshot of a run still going (``report`` during a run) has them all ``running``:

    >>> unsettled_why({"running": 40})
    '40 requests not finished: a run is going, this reads a snapshot of it'
    """
    if "running" in open_requests:
        n = open_requests["running"]
        done = f"{n:,} requests not finished" if n else "answered, not all scored yet"
        return f"{done}: a run is going, this reads a snapshot of it"
    if not open_requests:
        return "answered, not all scored yet; `groundbench run` again to score them"
    parts = [f"{n:,} {_WHY.get(why, why)}" for why, n in open_requests.items()]
    parts[0] = parts[0].replace(" ", " requests ", 1)  # "12 requests stopped on …"
    return ", ".join(parts) + "; `groundbench run` again to finish"
