"""The paper's figures as PNG, PDF and SVG files (matplotlib, no display needed): Figure 1
(target construction, :mod:`._construction`) and the results against N and by condition.

A point drawn from an incomplete cell (fewer settled questions than its grid has: a run still
to finish, or one stopped) is hatched and labelled "answered/questions", with a legend entry
saying so: 22 of 60 questions must not look like 60 (issue 39).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only: no screen on a cluster node or in CI

import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.typing import ColorType

from conditions import BOX, CONDITION_NAMES
from runner._output import whole
from runner.reports._construction import construction_figure
from runner.reports._data import Cell, ReportData, ViewScores
from runner.reports._results import against_zero
from runner.reports._tables import paired, pooled
from scoring import Contrast, summarise_cell

FORMATS = ("png", "pdf", "svg")  # PNG to look at, PDF and SVG to print at any size
DPI = 300  # print resolution for the PNG
INTERVALS = "error bars: 95% bootstrap intervals"
_DODGE = 0.5  # the width, in budget slots, the configurations' points spread over
HATCH = "//////"  # an incomplete cell's point: dense enough to read in a marker
INCOMPLETE = "incomplete cell:\nanswered/questions"


@dataclass(frozen=True)
class Shortfall:
    """An incomplete cell's point on a figure: at ``x``, ``y``, ``answered`` of ``questions``
    settled."""

    x: float
    y: float
    answered: int
    questions: int

    @property
    def label(self) -> str:
        return f"{self.answered}/{self.questions}"


def write_figures(data: ReportData, out: Path, formats: tuple[str, ...] = FORMATS) -> list[Path]:
    """Figure 1 (target construction), IoU against N per configuration (with intervals),
    legal coverage against N, and the condition deltas, each in every one of ``formats``
    (default PNG, PDF and SVG; the HTML report asks for SVG alone); returns the files
    written."""
    out.mkdir(parents=True, exist_ok=True)
    # Text stays text: SVG labels searchable and editable, PDF fonts TrueType (Type 42), which
    # publishers accept where they refuse Type 3.
    with matplotlib.rc_context({"svg.fonttype": "none", "pdf.fonttype": 42}):
        return [
            path
            for name, fig in draw_figures(data).items()
            for path in _save(fig, out / name, formats)
        ]


def draw_figures(data: ReportData) -> dict[str, Figure]:
    """Each figure by its file's stem, drawn and not yet saved (the caller closes them);
    Figure 1 where the store holds a cohort to draw it from."""
    example = data.cohort.example
    first = {"target_construction": construction_figure(example)} if example else {}
    return {
        **first,
        "iou_by_n": _iou_by_n(data),
        "legal_by_n": _legal_by_n(data),
        "condition_deltas": _condition_deltas(data),
    }


def _iou_by_n(data: ReportData) -> Figure:
    fig, ax = plt.subplots(figsize=(6.5, 4))
    budgets = _budgets(data)
    for k, configuration in enumerate(data.configurations):
        own = data.budgets_of(configuration)
        means = [_mean_interval(data, Cell(configuration, "base", n)) for n in own]
        x = _positions(budgets, own, k, len(data.configurations))
        y = [m.delta for m in means]
        bars = ax.errorbar(
            x,
            y,
            yerr=[[m.delta - m.low for m in means], [m.high - m.delta for m in means]],
            marker="o",
            capsize=3,
            label=configuration,
        )
        cells = [Cell(configuration, "base", n) for n in own]
        _mark_incomplete(ax, _shortfalls(data.headline, cells, x, y), bars.lines[0].get_color())
    _budget_axis(ax, budgets)
    ax.set(ylabel="fixed IoU (points, IoU2)", title=f"IoU against N ({INTERVALS})")
    _legends(ax)
    return fig


def _legal_by_n(data: ReportData) -> Figure:
    fig, ax = plt.subplots(figsize=(6.5, 4))
    budgets = _budgets(data)
    for k, configuration in enumerate(data.configurations):
        own = data.budgets_of(configuration)
        legal = [
            summarise_cell(
                list(data.headline.polygons.get(Cell(configuration, "base", n), {}).values())
            ).legal_coverage.fixed
            for n in own
        ]
        x = _positions(budgets, own, k, len(data.configurations))
        (line,) = ax.plot(x, legal, marker="o", label=configuration)
        cells = [Cell(configuration, "base", n) for n in own]
        _mark_incomplete(ax, _shortfalls(data.headline, cells, x, legal), line.get_color())
    _budget_axis(ax, budgets)
    ax.set(ylabel="legal coverage (%)", title="Legal coverage against N")
    _legends(ax)
    return fig


def _shortfalls(
    view: ViewScores, cells: list[Cell], x: list[float], y: list[float]
) -> list[Shortfall]:
    """The points of ``cells`` (at ``x``, ``y``) whose cell is incomplete."""
    return [
        Shortfall(at, value, len(view.polygons.get(cell, {})), view.grid.get(cell, 0))
        for cell, at, value in zip(cells, x, y, strict=True)
        if not view.complete(cell)
    ]


def _mark_incomplete(ax: Axes, points: list[Shortfall], colour: ColorType) -> None:
    """Each of ``points`` hatched over its marker (the hatch in the line's colour) and
    labelled with how many of its questions are answered."""
    if not points:
        return
    ax.scatter([p.x for p in points], [p.y for p in points], s=150, marker="o",
               facecolors="white", edgecolors=colour, hatch=HATCH, linewidths=1.2,
               zorder=3)  # fmt: skip
    for p in points:
        ax.annotate(p.label, (p.x, p.y), xytext=(7, 5), textcoords="offset points",
                    fontsize=7, color=colour)  # fmt: skip


def _budgets(data: ReportData) -> list[int]:
    return sorted({n for c in data.configurations for n in data.budgets_of(c)})


def _positions(budgets: list[int], own: list[int], k: int, of: int) -> list[float]:
    """Each of ``own`` budgets at its slot on the axis, moved sideways by the configuration's
    place ``k`` of ``of`` so that configurations' error bars do not sit on one another."""
    step = _DODGE / of
    offset = (k - (of - 1) / 2) * step
    return [budgets.index(n) + offset for n in own]


def _budget_axis(ax: Axes, budgets: list[int]) -> None:
    """One evenly spaced slot per budget, ticked with the budget itself: on a linear axis 64
    squashed 8 to 32 together, and ticks fell at 10, 20, 30."""
    ax.set_xticks(range(len(budgets)), [str(n) for n in budgets])
    ax.set_xlim(-0.5, len(budgets) - 0.5)
    ax.set_xlabel("N (vertices; one evenly spaced slot per budget)")


def _condition_deltas(data: ReportData) -> Figure:
    fig, ax = plt.subplots(figsize=(7, 5))
    labels: list[str] = []
    deltas: list[float] = []
    lows: list[float] = []
    highs: list[float] = []
    short: list[Shortfall] = []
    view = data.headline
    for configuration in data.configurations:
        base = pooled(view, configuration, "base")
        for condition in CONDITION_NAMES:
            if condition == "base" or condition not in data.conditions_of(configuration):
                continue
            c = paired(pooled(view, configuration, condition), base)
            if c.questions:
                cells = _polygon_cells(view, configuration, (condition, "base"))
                if not all(view.complete(cell) for cell in cells):
                    answered = sum(len(view.polygons.get(cell, {})) for cell in cells)
                    questions = sum(view.grid[cell] for cell in cells)
                    short.append(Shortfall(c.delta, len(labels), answered, questions))
                labels.append(f"{configuration}: {condition}")
                deltas.append(c.delta)
                lows.append(c.delta - c.low)
                highs.append(c.high - c.delta)
    bars = ax.errorbar(deltas, range(len(labels)), xerr=[lows, highs], fmt="o", capsize=3)
    _mark_incomplete(ax, short, bars.lines[0].get_color())
    ax.axvline(0.0, color="grey", linewidth=0.8)
    ax.set_yticks(range(len(labels)), labels)
    ax.set(
        xlabel="Δ fixed IoU against base (points, paired)", title=f"Condition effects ({INTERVALS})"
    )
    _legends(ax, configurations=False)
    return fig


def _polygon_cells(view: ViewScores, configuration: str, conditions: tuple[str, ...]) -> list[Cell]:
    """A configuration's polygon cells under ``conditions``: what a pooled contrast reads."""
    return [
        c for c in view.grid
        if c.configuration == configuration and c.condition in conditions and c.budget != BOX
    ]  # fmt: skip


def _mean_interval(data: ReportData, cell: Cell) -> Contrast:
    """A cell's fixed IoU with a bootstrap interval: the paired contrast against zero."""
    return against_zero(data.headline.polygons.get(cell, {}))


def _legends(ax: Axes, configurations: bool = True) -> None:
    """The configurations' legend right of the plot, off the data, and below it (where a
    point is hatched) what the hatching means; then the grid."""
    if configurations and ax.get_legend_handles_labels()[0]:
        configured = ax.legend(title="configuration", loc="upper left",
                               bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)  # fmt: skip
        ax.add_artist(configured)  # kept when the next legend() replaces ax's own
    if any(c.get_hatch() for c in ax.collections):
        hatched = Patch(facecolor="white", edgecolor="grey", hatch=HATCH, label=INCOMPLETE)
        ax.legend(handles=[hatched], loc="lower left", bbox_to_anchor=(1.02, 0.0),
                  borderaxespad=0.0, fontsize=8)  # fmt: skip
    ax.grid(alpha=0.3)


def _save(fig: Figure, stem: Path, formats: tuple[str, ...]) -> list[Path]:
    """``stem`` as every one of ``formats``."""
    paths = [stem.with_suffix(f".{kind}") for kind in formats]
    for path in paths:
        # "tight": the saved area grows to hold the legend outside the axes
        with whole(path) as temporary:  # a failure leaves no half figure
            fig.savefig(temporary, dpi=DPI, bbox_inches="tight")
    plt.close(fig)
    return paths
