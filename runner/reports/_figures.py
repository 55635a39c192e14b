"""The paper's figures as PNG, PDF and SVG files (matplotlib, no display needed)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only: no screen on a cluster node or in CI

import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from conditions import CONDITION_NAMES
from runner._output import whole
from runner.reports._data import Cell, ReportData
from runner.reports._results import against_zero
from runner.reports._tables import paired, pooled
from scoring import Contrast, summarise_cell

FORMATS = ("png", "pdf", "svg")  # PNG to look at, PDF and SVG to print at any size
DPI = 300  # print resolution for the PNG
INTERVALS = "error bars: 95% bootstrap intervals"
_DODGE = 0.5  # the width, in budget slots, the configurations' points spread over


def write_figures(data: ReportData, out: Path, formats: tuple[str, ...] = FORMATS) -> list[Path]:
    """IoU against N per configuration (with intervals), legal coverage against N, and the
    condition deltas, each in every one of ``formats`` (default PNG, PDF and SVG; the HTML
    report asks for SVG alone); returns the files written."""
    out.mkdir(parents=True, exist_ok=True)
    # Text stays text: SVG labels searchable and editable, PDF fonts TrueType (Type 42), which
    # publishers accept where they refuse Type 3.
    with matplotlib.rc_context({"svg.fonttype": "none", "pdf.fonttype": 42}):
        return [
            *_iou_by_n(data, out, formats),
            *_legal_by_n(data, out, formats),
            *_condition_deltas(data, out, formats),
        ]


def _iou_by_n(data: ReportData, out: Path, formats: tuple[str, ...]) -> list[Path]:
    fig, ax = plt.subplots(figsize=(6.5, 4))
    budgets = _budgets(data)
    for k, configuration in enumerate(data.configurations):
        own = data.budgets_of(configuration)
        means = [_mean_interval(data, Cell(configuration, "base", n)) for n in own]
        ax.errorbar(
            _positions(budgets, own, k, len(data.configurations)),
            [m.delta for m in means],
            yerr=[[m.delta - m.low for m in means], [m.high - m.delta for m in means]],
            marker="o",
            capsize=3,
            label=configuration,
        )
    _budget_axis(ax, budgets)
    ax.set(ylabel="fixed IoU (points, IoU2)", title=f"IoU against N ({INTERVALS})")
    return _save(fig, ax, out / "iou_by_n", formats)


def _legal_by_n(data: ReportData, out: Path, formats: tuple[str, ...]) -> list[Path]:
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
        ax.plot(x, legal, marker="o", label=configuration)
    _budget_axis(ax, budgets)
    ax.set(ylabel="legal coverage (%)", title="Legal coverage against N")
    return _save(fig, ax, out / "legal_by_n", formats)


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


def _condition_deltas(data: ReportData, out: Path, formats: tuple[str, ...]) -> list[Path]:
    fig, ax = plt.subplots(figsize=(7, 5))
    labels, deltas, lows, highs = [], [], [], []
    for configuration in data.configurations:
        base = pooled(data.headline, configuration, "base")
        for condition in CONDITION_NAMES:
            if condition == "base" or condition not in data.conditions_of(configuration):
                continue
            c = paired(pooled(data.headline, configuration, condition), base)
            if c.questions:
                labels.append(f"{configuration}: {condition}")
                deltas.append(c.delta)
                lows.append(c.delta - c.low)
                highs.append(c.high - c.delta)
    ax.errorbar(deltas, range(len(labels)), xerr=[lows, highs], fmt="o", capsize=3)
    ax.axvline(0.0, color="grey", linewidth=0.8)
    ax.set_yticks(range(len(labels)), labels)
    ax.set(
        xlabel="Δ fixed IoU against base (points, paired)", title=f"Condition effects ({INTERVALS})"
    )
    return _save(fig, ax, out / "condition_deltas", formats, legend=False)


def _mean_interval(data: ReportData, cell: Cell) -> Contrast:
    """A cell's fixed IoU with a bootstrap interval: the paired contrast against zero."""
    return against_zero(data.headline.polygons.get(cell, {}))


def _save(
    fig: Figure, ax: Axes, stem: Path, formats: tuple[str, ...], legend: bool = True
) -> list[Path]:
    """``stem`` as every one of ``formats``; the legend right of the plot, off the data."""
    if legend and ax.get_legend_handles_labels()[0]:
        ax.legend(title="configuration", loc="upper left", bbox_to_anchor=(1.02, 1.0),
                  borderaxespad=0.0)  # fmt: skip
    ax.grid(alpha=0.3)
    paths = [stem.with_suffix(f".{kind}") for kind in formats]
    for path in paths:
        # "tight": the saved area grows to hold the legend outside the axes
        with whole(path) as temporary:  # a failure leaves no half figure
            fig.savefig(temporary, dpi=DPI, bbox_inches="tight")
    plt.close(fig)
    return paths
