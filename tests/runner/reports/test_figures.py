"""The figures mark an incomplete cell: its point hatched, "answered/questions" beside it, and
a legend entry saying what the hatching means (issue 39: 22 of 60 looked like 60)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.figure import Figure
from matplotlib.legend import Legend
from matplotlib.text import Annotation

from runner.reports import ReportData, write_figures
from runner.reports._figures import HATCH, draw_figures


@pytest.fixture(scope="module")
def figures(data: ReportData) -> Iterator[dict[str, Figure]]:
    drawn = draw_figures(data)
    yield drawn
    for fig in drawn.values():
        plt.close(fig)


def _hatched(fig: Figure) -> list[tuple[float, float]]:
    (ax,) = fig.axes
    return [
        (float(x), float(y))
        for c in ax.collections
        if c.get_hatch() == HATCH
        for x, y in np.asarray(c.get_offsets()).tolist()
    ]


def _legend_texts(fig: Figure) -> list[str]:
    (ax,) = fig.axes
    legends = [a for a in ax.get_children() if isinstance(a, Legend)]
    return [t.get_text() for legend in legends for t in legend.get_texts()]


@pytest.mark.parametrize("name", ["iou_by_n", "legal_by_n"])
def test_the_incomplete_cell_alone_is_hatched_and_counted(
    figures: dict[str, Figure], name: str
) -> None:
    # The hand-made store: base/8 has its 4 questions settled, base/16 only 1 of 4.
    fig = figures[name]
    (point,) = _hatched(fig)
    assert point[0] == 1.0  # the second budget slot: N=16 (one configuration, no dodge)
    (ax,) = fig.axes
    labels = [a.get_text() for a in ax.texts if isinstance(a, Annotation)]
    assert labels == ["1/4"]
    assert any(t.startswith("incomplete cell") for t in _legend_texts(fig))
    assert "cfg" in _legend_texts(fig)  # the configurations' legend is still there


def test_a_pooled_contrast_over_an_incomplete_cell_is_hatched(
    figures: dict[str, Figure],
) -> None:
    # no-image/8 has 2 of 2 settled, but base pools base/16's 1 of 4: the contrast is hatched.
    fig = figures["condition_deltas"]
    (point,) = _hatched(fig)
    assert point[1] == 0.0  # the one row: cfg: no-image
    (ax,) = fig.axes
    assert [a.get_text() for a in ax.texts] == ["7/10"]  # 4 + 1 + 2 of 4 + 4 + 2
    assert _legend_texts(fig) == ["incomplete cell:\nanswered/questions"]


def test_the_written_figure_carries_the_hatch(data: ReportData, tmp_path: Path) -> None:
    svg = tmp_path / "iou_by_n.svg"
    assert svg in write_figures(data, tmp_path, formats=("svg",))
    text = svg.read_text()
    assert "<pattern" in text  # matplotlib writes a hatch as an SVG pattern
    assert "1/4" in text and "incomplete cell:" in text
