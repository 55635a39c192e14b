"""Figure 1 on a hand-made referent: a regular 40-gon (the selected part) beside a square, so
that each budget's panel must show 40 listed vertices, and ``G_N`` with N − 40 midpoints
inserted above 40 and 40 − N vertices removed below."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.axes import Axes
from matplotlib.colors import to_hex
from matplotlib.figure import Figure
from matplotlib.patches import Polygon

from runner.overlays._palette import PART, TARGET
from runner.reports import Example, ReportData, Shape, StoredCohort, write_figures
from runner.reports._construction import (
    INSERTED_GID,
    KEPT_GID,
    SOURCE_GID,
    TARGET_GID,
    construction_figure,
)
from runner.reports._figures import draw_figures
from scoring import BUDGETS, canonical_targets

CENTRE, RADIUS, V = (200.0, 150.0), 100.0, 40
POLYGON = tuple(
    c
    for k in range(V)
    for c in (CENTRE[0] + RADIUS * math.cos(2 * math.pi * k / V),
              CENTRE[1] + RADIUS * math.sin(2 * math.pi * k / V))
)  # fmt: skip
SQUARE = (10.0, 10.0, 40.0, 10.0, 40.0, 40.0, 10.0, 40.0)


@pytest.fixture(scope="module")
def example() -> Example:
    targets = canonical_targets(POLYGON)  # what a cohort stores for phase 0
    return Example(
        "refcoco:1", "the round one", "clock", Shape((SQUARE, POLYGON), 400, 300),
        {n: tuple(c for point in ring for c in point) for n, ring in targets.items()},
    )  # fmt: skip


@pytest.fixture(scope="module")
def figure(example: Example) -> Iterator[Figure]:
    fig = construction_figure(example)
    yield fig
    plt.close(fig)


def _shown(fig: Figure) -> list[Axes]:
    return [ax for ax in fig.axes if ax.axison]


def _points(ax: Axes, gid: str) -> int:
    """How many points ``ax``'s lines drawn as ``gid`` hold."""
    return sum(len(np.asarray(line.get_xdata())) for line in ax.lines if line.get_gid() == gid)


def test_the_source_panel_draws_every_part_and_fills_the_selected_one(figure: Figure) -> None:
    source = _shown(figure)[0]
    fills = [p for p in source.patches if isinstance(p, Polygon) and p.get_fill()]
    colours = {len(p.get_xy()) - 1: to_hex(p.get_facecolor(), keep_alpha=False) for p in fills}
    assert colours == {4: "#8c8c8c", V: PART.colour.lower()}  # the square grey, the 40-gon
    assert _points(source, SOURCE_GID) == V  # the selected part's listed vertices as dots
    assert "2 parts (4, 40 vertices)" in source.get_title()
    assert "the most vertices (40)" in source.get_title()


@pytest.mark.parametrize("k, n", list(enumerate(BUDGETS, start=1)))
def test_each_budget_shows_what_construction_did(figure: Figure, k: int, n: int) -> None:
    ax = _shown(figure)[k]
    assert ax.get_title().startswith(f"G_{n}: ")
    assert _points(ax, SOURCE_GID) == V  # every listed vertex, kept or not
    kept, inserted = _points(ax, KEPT_GID), _points(ax, INSERTED_GID)
    if n < V:  # simplified: N of the 40 vertices kept, no midpoint
        assert (kept, inserted) == (n, 0)
        assert f"simplified, {V - n} of {V} vertices removed" in ax.get_title()
    else:  # 64: all 40 kept and 24 midpoints inserted
        assert (kept, inserted) == (V, n - V)
        assert f"up-sampled, {n - V} midpoints inserted" in ax.get_title()
    (outline,) = [p for p in ax.patches if p.get_gid() == TARGET_GID]
    assert len(outline.get_xy()) == n + 1  # type: ignore[attr-defined]  # closed: N + 1
    assert to_hex(outline.get_edgecolor(), keep_alpha=False) == TARGET.colour.lower()


def test_the_coarsest_target_loses_area_and_the_densest_keeps_it(figure: Figure) -> None:
    # Of the polygons on 8 of the 40-gon's vertices the regular one has the most area,
    # (8 sin(π/4)) / (40 sin(π/20)) = 90.4% of the 40-gon's: G_8's IoU with it is at most
    # that (up to the raster's sampling); the 64-vertex target is the 40-gon itself.
    titles = [ax.get_title() for ax in _shown(figure)[1:]]
    ious = [float(t.rsplit(" ", 1)[1]) for t in titles]
    regular = 100 * 8 * math.sin(math.pi / 4) / (40 * math.sin(math.pi / 20))
    assert 50.0 < ious[0] < regular + 0.5
    assert ious == sorted(ious) and ious[-1] > 99.5


def test_the_report_draws_figure_1_first_and_only_with_a_cohort(
    data: ReportData, tmp_path: Path
) -> None:
    paths = write_figures(data, tmp_path, formats=("svg",))
    assert paths[0].name == "target_construction.svg"
    text = paths[0].read_text()
    example = data.cohort.example
    assert example is not None and example.qid in text and "G_64" in text  # text kept as text
    without = draw_figures(replace(data, cohort=StoredCohort()))
    assert "target_construction" not in without
    for fig in without.values():
        plt.close(fig)
