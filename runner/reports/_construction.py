"""Figure 1: how a canonical target is built (PROTOCOL §2), on one referent of the cohort.

The first panel is the referent's COCO contour, every part, the selected part (the most
listed vertices) filled; then ``G_N`` at each budget over the selected part, whose listed
vertices are grey dots. A dot with no target vertex on it was removed (simplification); a
hollow target vertex is a midpoint inserted (up-sampling). Drawn from the store alone, in the
frame's pixels (y down): no image is needed. The colours are ``groundbench show``'s, so a
target and a part look alike in every figure of the project.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence

import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, Polygon

from runner.overlays._palette import FILL_ALPHA, PART, TARGET
from runner.reports._cohort import Example, Flat
from scoring import mask_iou, rasterize

OTHER_PART = "#8c8c8c"  # the referent's other parts: neutral, no role of the palette
SOURCE_DOT = "#404040"  # the selected part's listed vertices
COLUMNS = 3  # panels per row: the source and five budgets fill two rows
MARGIN = 0.06  # of the drawn shape's extent, on every side
# What each artist is, for a reader of the figure object (the tests): matplotlib keeps a gid.
SOURCE_GID, KEPT_GID, INSERTED_GID, TARGET_GID = "source-vertices", "kept", "inserted", "target"


def construction_figure(example: Example) -> Figure:
    """The source panel, then one panel per stored budget, two rows of :data:`COLUMNS`, the
    legend below them."""
    budgets = sorted(example.targets)
    panels = 1 + len(budgets)
    rows = math.ceil(panels / COLUMNS)
    # Constrained layout leaves each title its room above a square panel and the legend its
    # own below ("outside"); tight_layout let the second row's titles cover the first row.
    fig, grid = plt.subplots(rows, COLUMNS, figsize=(3.1 * COLUMNS, 3.3 * rows + 0.9),
                             squeeze=False, layout="constrained")  # fmt: skip
    axes = list(grid.ravel())
    _source_panel(axes[0], example)
    for ax, n in zip(axes[1:], budgets, strict=False):
        _target_panel(ax, example, n)
    for ax in axes[panels:]:
        ax.set_axis_off()
    title = f"Figure 1: target construction, {example.qid} ({example.category}): "
    title += f"“{example.expression}”"
    fig.suptitle("\n".join(textwrap.wrap(title, 90)), fontsize=10)
    fig.legend(handles=_handles(), loc="outside lower center", ncol=3, fontsize=8,
               frameon=False)  # fmt: skip
    return fig


def _source_panel(ax: Axes, example: Example) -> None:
    """Every part of the referent, the selected one in the part's colour, the others grey;
    each part's listed vertices as dots."""
    shape = example.shape
    for i, part in enumerate(shape.parts):
        colour = PART.colour if i == shape.selected else OTHER_PART
        ax.add_patch(Polygon(_points(part), closed=True, facecolor=colour, alpha=FILL_ALPHA,
                             edgecolor="none"))  # fmt: skip
        ax.add_patch(Polygon(_points(part), closed=True, fill=False, edgecolor=colour,
                             linewidth=1.0))  # fmt: skip
        ax.plot(part[0::2], part[1::2], linestyle="none", marker="o", markersize=2.0,
                color=SOURCE_DOT, gid=SOURCE_GID if i == shape.selected else None)  # fmt: skip
    counts = ", ".join(str(len(p) // 2) for p in shape.parts)
    many = len(shape.parts) > 1
    ax.set_title(
        f"COCO contour: {len(shape.parts)} part{'s' * many} ({counts} vertices)\n"
        + (f"selected: the most vertices ({shape.vertices})" if many else "the part is selected"),
        fontsize=8,
    )
    _frame(ax, [c for part in shape.parts for c in part])


def _target_panel(ax: Axes, example: Example, n: int) -> None:
    """``G_N`` over the selected part: the part dashed with its vertices as dots, the target
    filled, its vertices from the part filled and its inserted midpoints hollow; titled with
    what construction did and the target's IoU with the part."""
    shape = example.shape
    part = shape.parts[shape.selected]
    target = example.targets[n]
    ax.add_patch(Polygon(_points(part), closed=True, fill=False, edgecolor=PART.colour,
                         linestyle=(0, PART.dash), linewidth=1.0))  # fmt: skip
    ax.add_patch(Polygon(_points(target), closed=True, facecolor=TARGET.colour,
                         alpha=FILL_ALPHA / 2, edgecolor="none"))  # fmt: skip
    ax.add_patch(Polygon(_points(target), closed=True, fill=False, edgecolor=TARGET.colour,
                         linewidth=1.2, gid=TARGET_GID))  # fmt: skip
    ax.plot(part[0::2], part[1::2], linestyle="none", marker="o", markersize=2.0,
            color=SOURCE_DOT, gid=SOURCE_GID)  # fmt: skip
    listed = set(_points(part))
    kept = [p for p in _points(target) if p in listed]
    inserted = [p for p in _points(target) if p not in listed]
    _vertices(ax, kept, filled=True, gid=KEPT_GID)
    _vertices(ax, inserted, filled=False, gid=INSERTED_GID)
    iou = mask_iou(rasterize([target], shape.height, shape.width),
                   rasterize([part], shape.height, shape.width))  # fmt: skip
    ax.set_title(f"G_{n}: {_what(shape.vertices, n)}\nIoU with the part {100 * iou:.1f}",
                 fontsize=8)  # fmt: skip
    _frame(ax, part)


def _what(v: int, n: int) -> str:
    """What construction did to a part of ``v`` vertices at budget ``n``.

    >>> _what(40, 8), _what(40, 64), _what(8, 8)
    ('simplified, 32 of 40 vertices removed', 'up-sampled, 24 midpoints inserted', 'as listed')
    """
    if v > n:
        return f"simplified, {v - n} of {v} vertices removed"
    if v < n:
        return f"up-sampled, {n - v} midpoint{'s' * (n - v > 1)} inserted"
    return "as listed"


def _vertices(ax: Axes, points: Sequence[tuple[float, float]], filled: bool, gid: str) -> None:
    ax.plot([p[0] for p in points], [p[1] for p in points], linestyle="none", marker="o",
            markersize=3.6, markeredgewidth=0.9, markeredgecolor=TARGET.colour,
            markerfacecolor=TARGET.colour if filled else "white", gid=gid, zorder=3)  # fmt: skip


def _points(flat: Flat) -> list[tuple[float, float]]:
    return list(zip(flat[0::2], flat[1::2], strict=True))


def _frame(ax: Axes, flat: Sequence[float]) -> None:
    """The view: a square about the shape's extent with a margin, one pixel as wide as tall,
    y down (the image's frame), no ticks (the pixel values say nothing here). Square limits
    on a square box: matplotlib keeps both without overriding either."""
    xs, ys = flat[0::2], flat[1::2]
    half = (1 + 2 * MARGIN) * max(max(xs) - min(xs), max(ys) - min(ys), 1.0) / 2
    cx, cy = (max(xs) + min(xs)) / 2, (max(ys) + min(ys)) / 2
    ax.set_xlim(cx - half, cx + half)
    ax.set_ylim(cy + half, cy - half)
    ax.set_aspect("equal", adjustable="box")
    ax.set_xticks([])
    ax.set_yticks([])


def _handles() -> list[Line2D | Patch]:
    return [
        Patch(facecolor=(PART.colour, FILL_ALPHA), edgecolor=PART.colour,
              label="selected part A_i (the most listed vertices)"),
        Patch(facecolor=(OTHER_PART, FILL_ALPHA), edgecolor=OTHER_PART,
              label="the referent's other parts"),
        Line2D([], [], linestyle="none", marker="o", markersize=2.0, color=SOURCE_DOT,
               label="a vertex the part lists"),
        Line2D([], [], color=TARGET.colour, linewidth=1.2, label="canonical target G_N"),
        _vertex_handle(filled=True, label="G_N vertex kept from the part"),
        _vertex_handle(filled=False, label="G_N vertex inserted (a midpoint)"),
    ]  # fmt: skip


def _vertex_handle(filled: bool, label: str) -> Line2D:
    return Line2D([], [], linestyle="none", marker="o", markersize=3.6,
                  markeredgecolor=TARGET.colour,
                  markerfacecolor=TARGET.colour if filled else "white", label=label)  # fmt: skip
