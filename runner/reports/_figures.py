"""The paper's figures as PNG files (matplotlib, no display needed)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only: no screen on a cluster node or in CI

import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from conditions import CONDITION_NAMES
from runner.reports._data import Cell, ReportData
from runner.reports._tables import paired, pooled
from scoring import Contrast, paired_contrast, per_question, summarise_cell


def write_figures(data: ReportData, out: Path) -> list[Path]:
    """IoU against N per configuration (with intervals), legal coverage against N, and the
    condition deltas; returns the files written."""
    out.mkdir(parents=True, exist_ok=True)
    return [_iou_by_n(data, out), _legal_by_n(data, out), _condition_deltas(data, out)]


def _iou_by_n(data: ReportData, out: Path) -> Path:
    fig, ax = plt.subplots(figsize=(6, 4))
    for configuration in data.configurations:
        budgets = data.budgets_of(configuration)
        means = [_mean_interval(data, Cell(configuration, "base", n)) for n in budgets]
        ax.errorbar(
            budgets,
            [m.delta for m in means],
            yerr=[[m.delta - m.low for m in means], [m.high - m.delta for m in means]],
            marker="o",
            capsize=3,
            label=configuration,
        )
    ax.set(xlabel="N (vertices)", ylabel="fixed IoU (points, IoU2)", title="IoU against N")
    return _save(fig, ax, out / "iou_by_n.png")


def _legal_by_n(data: ReportData, out: Path) -> Path:
    fig, ax = plt.subplots(figsize=(6, 4))
    for configuration in data.configurations:
        budgets = data.budgets_of(configuration)
        legal = [
            summarise_cell(
                list(data.headline.polygons.get(Cell(configuration, "base", n), {}).values())
            ).legal_coverage.fixed
            for n in budgets
        ]
        ax.plot(budgets, legal, marker="o", label=configuration)
    ax.set(xlabel="N (vertices)", ylabel="legal coverage (%)", title="Legal coverage against N")
    return _save(fig, ax, out / "legal_by_n.png")


def _condition_deltas(data: ReportData, out: Path) -> Path:
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
    ax.set(xlabel="Δ fixed IoU against base (points, 95% CI)", title="Condition effects")
    return _save(fig, ax, out / "condition_deltas.png", legend=False)


def _mean_interval(data: ReportData, cell: Cell) -> Contrast:
    """A cell's fixed IoU with a bootstrap interval: the paired contrast against zero."""
    scores = per_question(data.headline.polygons.get(cell, {}))
    return paired_contrast(scores, dict.fromkeys(scores, 0.0))


def _save(fig: Figure, ax: Axes, path: Path, legend: bool = True) -> Path:
    if legend and ax.get_legend_handles_labels()[0]:
        ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
